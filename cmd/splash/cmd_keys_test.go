package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/protocol"
)

// splash keys walks a ring through the two-step rotation: stage a next
// key, promote it, drop the retired key; each step rewrites the file in
// place and keeps its mode, and a refused step leaves it as it was.
func TestKeysRotateStagePromoteDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frame.key")
	k, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := k.Bytes()
	// A key file as written before rings: one bare key.
	if err := os.WriteFile(path, []byte(hex.EncodeToString(raw[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := protocol.KeyIDOf(k)
	read := func() protocol.KeyRing {
		t.Helper()
		r, err := loadKeyRing(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--stage", "--key-file", path); code != 0 || !strings.Contains(out, "staged") {
		t.Fatalf("stage: %d %q %q", code, out, errOut)
	}
	staged := read()
	if id, _ := staged.Current(); id != first || staged.Len() != 2 {
		t.Fatalf("staged ring %v", staged)
	}
	if code, _, _ := invoke(t, nil, "keys", "rotate", "--stage", "--key-file", path); code == 0 {
		t.Fatal("a second next key was staged")
	}
	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--key-file", path); code != 0 || !strings.Contains(out, "promoted") {
		t.Fatalf("promote: %d %q %q", code, out, errOut)
	}
	promoted := read()
	if id, _ := promoted.Current(); id == first || promoted.Len() != 2 {
		t.Fatalf("promoted ring %v", promoted)
	}
	if code, _, _ := invoke(t, nil, "keys", "drop", "--key-file", path, "nope"); code == 0 {
		t.Fatal("dropped an unknown key")
	}
	cur, _ := promoted.Current()
	if code, _, _ := invoke(t, nil, "keys", "drop", "--key-file", path, cur); code == 0 {
		t.Fatal("dropped the current key")
	}
	if got := read(); got.String() != promoted.String() {
		t.Fatalf("a refused drop changed the ring: %v", got)
	}
	if code, out, errOut := invoke(t, nil, "keys", "drop", "--key-file", path, first); code != 0 || !strings.Contains(out, "dropped "+first) {
		t.Fatalf("drop: %d %q %q", code, out, errOut)
	}
	if got := read(); got.Len() != 1 {
		t.Fatalf("after drop: %v", got)
	}
	// Without a staged key, rotate makes a fresh key current at once.
	if code, out, errOut := invoke(t, nil, "keys", "rotate", "--key-file", path); code != 0 || !strings.Contains(out, "rotated to") {
		t.Fatalf("rotate: %d %q %q", code, out, errOut)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode after rewrites: %v, %v", st.Mode().Perm(), err)
	}
}

// splash keys status reads every store as ops and prints each key of the
// ring with what it still seals; a retired key that seals nothing live is
// marked as one that can be dropped, the current one never.
func TestKeysStatus(t *testing.T) {
	srv, pw, pools := startDevNATS(t)
	ctx := t.Context()
	host := connectDev(t, srv, natsconf.UserHost, pw[natsconf.UserHost])
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fabricConfig(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fabric.Provision(ctx, hjs, cfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ringPath := filepath.Join(dir, "frame.key")
	ring, _, err := createKeyRing(ringPath, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := ring.Current()
	// One archive record sealed with the current key, then a rotation.
	archive, err := hostnats.NewSessionArchive(ctx, host, cfg, ring)
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.Register(ctx, hostloop.Incarnation{ID: "h1-0123456789ab", HostID: "h1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_ = archive.Close()
	if code, _, errOut := invoke(t, nil, "keys", "rotate", "--key-file", ringPath); code != 0 {
		t.Fatalf("rotate: %s", errOut)
	}
	poolKeys := filepath.Join(dir, "pool-keys")
	if err := os.MkdirAll(poolKeys, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeKeyRing(filepath.Join(poolKeys, "text.keys"), pool(t, pools, "text").ring, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envNatsURL: srv.ClientURL(), envNatsUser: natsconf.UserOps, envNatsPassword: pw[natsconf.UserOps]}
	code, out, errOut := invoke(t, env, "keys", "status", "--key-file", ringPath, "--pool-keys", poolKeys)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	t.Logf("splash keys status:\n%s", out)
	for _, want := range []string{ringPath, "text.keys", "KEY", "SESSION_ARCHIVE", "retired"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, old) && (!strings.Contains(line, "retired") || strings.Contains(line, "can be dropped")) {
			t.Errorf("the retired key still sealing an archive record: %q", line)
		}
		if strings.Contains(line, "current") && strings.Contains(line, "can be dropped") {
			t.Errorf("a current key marked droppable: %q", line)
		}
	}
}

// splash keys init run for a second catalog adds its pools to pools.json
// and keeps the first catalog's: a deployment whose process tools come
// from their own catalog gives their pool an nkey user too.
func TestKeysInitForASecondCatalog(t *testing.T) {
	dir := t.TempDir()
	second := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(second, []byte("tools:\n  - name: text.slowupper\n    pool: tools\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"keys", "init", "--dir", dir},
		{"keys", "init", "--dir", dir, "--catalog", second},
		{"keys", "init", "--dir", dir}, // again: nothing lost either way
	} {
		if code, _, stderr := invoke(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	pools, err := readPoolsManifest(filepath.Join(dir, poolsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"demo", "text", "tools"}; !slices.Equal(names, want) {
		t.Fatalf("pools.json lists %v, want %v", names, want)
	}
	for _, f := range []string{"pool-keys/tools.keys", "pool-nkeys/tools.nk"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}
