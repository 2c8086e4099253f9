package main

import (
	"encoding/json"
	"errors"
	"github.com/splashfabric/splashfabric/toolspec"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	natsconf "github.com/splashfabric/splashfabric/deploy/nats"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/metrics"
)

// startDevNATS runs the NATS part of `splash dev` in-process, on a data
// directory of its own, with the pools of the demo catalog, and returns it
// with the passwords and pool credentials dev generated.
func startDevNATS(t *testing.T) (*server.Server, map[string]string, []poolSecrets) {
	t.Helper()
	dir := t.TempDir()
	passwords, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loadCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	served, err := cat.serve(nil, toolspec.Protected{})
	if err != nil {
		t.Fatal(err)
	}
	pools, err := ensurePoolSecrets(dir, poolsOf(served))
	if err != nil {
		t.Fatal(err)
	}
	natsPools := make([]natsconf.Pool, len(pools))
	for i, p := range pools {
		if natsPools[i], err = p.natsPool(); err != nil {
			t.Fatal(err)
		}
	}
	c := &devConfig{dataDir: dir, natsPort: -1}
	srv, err := c.startNATS(slog.New(slog.DiscardHandler), passwords, natsPools, metrics.NewNATS(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv, passwords, pools
}

// connectDev connects as a password user, with the user's inbox prefix.
func connectDev(t *testing.T, srv *server.Server, user, password string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.UserInfo(user, password), nats.NoReconnect(), nats.CustomInboxPrefix(fabric.InboxPrefix(user))}, opts...)
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// connectPool connects with a pool's nkey and inbox prefix.
func connectPool(t *testing.T, srv *server.Server, p poolSecrets, opts ...nats.Option) *nats.Conn {
	t.Helper()
	auth, err := p.nkeyOption()
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]nats.Option{auth, nats.NoReconnect(), nats.CustomInboxPrefix(fabric.InboxPrefix(fabric.PoolIdentity(p.name)))}, opts...)
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as pool %s: %v", p.name, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// pool returns the pool named name.
func pool(t *testing.T, pools []poolSecrets, name string) poolSecrets {
	t.Helper()
	for _, p := range pools {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no pool %q", name)
	return poolSecrets{}
}

// TestDevNATSRefusesAnonymousClients: the dev node listens on loopback,
// which every local process shares; none gets in without a user's
// password or a pool's nkey.
func TestDevNATSRefusesAnonymousClients(t *testing.T) {
	srv, pw, _ := startDevNATS(t)
	stranger, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	strangerKey, _ := stranger.PublicKey()
	cases := []struct {
		name string
		opts []nats.Option
	}{
		{"anonymous", nil},
		{"unknown user", []nats.Option{nats.UserInfo("intruder", "x")}},
		{"host with the ops password", []nats.Option{nats.UserInfo(natsconf.UserHost, pw[natsconf.UserOps])}},
		{"ops with a wrong password", []nats.Option{nats.UserInfo(natsconf.UserOps, "wrong")}},
		{"the retired worker user", []nats.Option{nats.UserInfo("worker", pw[natsconf.UserOps])}},
		{"a password as a token", []nats.Option{nats.Token(pw[natsconf.UserOps])}},
		{"an nkey no pool has", []nats.Option{nats.Nkey(strangerKey, stranger.Sign)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := nats.Connect(srv.ClientURL(), append([]nats.Option{nats.NoReconnect()}, tc.opts...)...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
				t.Fatalf("err = %v, want an authorization violation", err)
			}
		})
	}
}

// TestDevPasswordsAreKept: generated once, mode 0600, the same on the next
// run; a file others may read is refused.
func TestDevPasswordsAreKept(t *testing.T) {
	dir := t.TempDir()
	first, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range devUsers {
		st, err := os.Stat(devPasswordFile(dir, user))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", user, st.Mode().Perm())
		}
		if len(first[user]) != 32 {
			t.Errorf("%s: password of %d characters", user, len(first[user]))
		}
	}
	if first[natsconf.UserHost] == first[natsconf.UserOps] {
		t.Error("host and ops share a password")
	}
	again, err := devPasswords(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range devUsers {
		if again[user] != first[user] {
			t.Errorf("%s: password changed across runs", user)
		}
	}
	if err := os.Chmod(devPasswordFile(dir, natsconf.UserOps), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := devPasswords(dir); !errors.Is(err, errStart) || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("world-readable password file: %v", err)
	}
}

// TestDevRefusesAForgedSessionRecord is the reproduction: a local process
// that knows the ops password (or any client of a node without
// permissions) writes a session record into splash_sessions. dev refuses
// to serve it, answers record_rejected and counts it. The generated API
// token is read from its file, as the banner says.
func TestDevRefusesAForgedSessionRecord(t *testing.T) {
	dir := t.TempDir()
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", dir,
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	natsURL, _ := rec["nats_url"].(string)

	raw, err := os.ReadFile(filepath.Join(dir, devTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, devTokenFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st, err)
	}
	token := strings.TrimSpace(string(raw))
	if strings.Contains(dev.stderr.String(), token) {
		t.Error("the token is in the log")
	}

	if nc, err := nats.Connect(natsURL, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to dev's NATS")
	}
	ops, err := os.ReadFile(devPasswordFile(dir, natsconf.UserOps))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL, nats.UserInfo(natsconf.UserOps, strings.TrimSpace(string(ops))), nats.NoReconnect(),
		nats.CustomInboxPrefix(fabric.InboxPrefix(natsconf.UserOps)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	const id = "s-dev-0123456789ab-1"
	forged := `{"id":"` + id + `","state":"completed","value":"FORGED","created":"2030-01-02T03:04:05Z"}`
	if _, err := kv.Put(t.Context(), "s."+id, []byte(forged)); err != nil {
		t.Fatal(err)
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, apiURL+"/v1/sessions/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusInternalServerError || body.Error.Code != "record_rejected" {
		t.Fatalf("GET forged session: %d %+v, %v; want 500 record_rejected", resp.StatusCode, body, err)
	}
	if strings.Contains(body.Error.Message, "FORGED") {
		t.Errorf("the error serves the forged value: %s", body.Error.Message)
	}
	families := scrape(t, apiURL+"/metrics")
	if got := value(families, "splash_records_rejected_total", "reason=unsigned,store=session_archive"); got != 1 {
		t.Errorf("splash_records_rejected_total{session_archive,unsigned} = %v, want 1", got)
	}
	if got := value(families, "splash_records_rejected_total", "reason=bad_tag,store=journal"); got != 0 {
		t.Errorf("splash_records_rejected_total{journal,bad_tag} = %v, want 0", got)
	}
	if err := dev.stop(t); err != nil {
		t.Fatalf("splash dev after SIGTERM: %v", err)
	}
}

// TestDevBannerKeepsTheTokenOffCommandLines: the banner names the token's
// file and suggests commands that take it from the environment, never the
// token itself or --api-token.
func TestDevBannerKeepsTheTokenOffCommandLines(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name      string
		tokenPath string
		want      []string
	}{
		{"generated", "/data dir/api.token", []string{"token:   in /data dir/api.token", `export SPLASH_API_TOKEN="$(cat '/data dir/api.token')"`}},
		{"given", "", []string{"token:   (from --api-token or SPLASH_API_TOKEN)", "export SPLASH_API_TOKEN="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			printDevBanner(&out, devBanner{
				natsURL: "nats://127.0.0.1:4222", dataDir: "/data dir", keyPath: "/data dir/frame.key",
				apiURL: "http://127.0.0.1:8080", metricsURL: "http://127.0.0.1:8080/metrics",
				tokenPath: tt.tokenPath, workers: 1, tools: []string{"demo.upper", "demo.stream"},
			})
			banner := out.String()
			for _, w := range append(tt.want, "nats-<user>.password", " run --api-url http://127.0.0.1:8080 -e ") {
				if !strings.Contains(banner, w) {
					t.Errorf("banner lacks %q:\n%s", w, banner)
				}
			}
			if strings.Contains(banner, token) {
				t.Errorf("banner holds the token:\n%s", banner)
			}
			for line := range strings.Lines(banner) {
				if strings.Contains(line, " run ") && strings.Contains(line, "--api-token") {
					t.Errorf("suggested command passes the token as a flag: %s", line)
				}
			}
		})
	}
}
