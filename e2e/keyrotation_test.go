package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// rotateRing rewrites the ring file at path with what step makes of it,
// keeping its mode (the containers read it through a bind mount), as
// `splash keys rotate` does.
func (s *stack) rotateRing(path string, step func(protocol.KeyRing) (protocol.KeyRing, error)) protocol.KeyRing {
	s.t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		s.fatalf("%v", err)
	}
	ring, err := protocol.ParseKeyRing(string(raw))
	if err != nil {
		s.fatalf("%s: %v", path, err)
	}
	next, err := step(ring)
	if err != nil {
		s.fatalf("%s: %v", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		s.fatalf("%v", err)
	}
	tmp := path + ".next"
	if err := os.WriteFile(tmp, next.FileText(), st.Mode().Perm()); err != nil {
		s.fatalf("%v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		s.fatalf("%v", err)
	}
	s.logf("%s: %v", filepath.Base(path), next)
	return next
}

// TestScenarioKeyRotation (scenario 11): both kinds of ring rotate under
// load, as docs/durable.md ("Rotating keys") says to. The pool demo's ring,
// which its workers and the host hold, in two steps: a next key is staged
// and given to everyone (workers, then host, restarted), then promoted and
// given to everyone again. The host's own ring (ledgers, archive, leases),
// which only it reads, at once, with a restart that leaves its durable
// sessions suspended on ledgers sealed with the retired key. Every
// accepted script completes, each effect once, and once the load has
// drained no live ledger holds anything of the retired host key.
func TestScenarioKeyRotation(t *testing.T) {
	s, api := cluster(t, 2)
	demoRing := filepath.Join(s.secretsDir, "pool-keys", "demo.keys")
	hostRing := filepath.Join(s.secretsDir, "frame.key")
	restart := func(service string) {
		t.Helper()
		s.mustCompose("restart", "--timeout", "15", service)
		s.waitHealthy(2 * time.Minute)
		api.setBase(s.apiURL())
		s.logf("%s restarted", service)
	}
	l := startLoad(t, api, loadClients)
	during(t, 8*time.Second)

	// Step one: stage a next key of the pool's ring everywhere.
	next, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.rotateRing(demoRing, func(r protocol.KeyRing) (protocol.KeyRing, error) { return r.Stage(next) })
	restart("worker")
	restart("host")
	during(t, 5*time.Second)

	// Step two: promote it; and the host's own ring, at once.
	s.rotateRing(demoRing, protocol.KeyRing.Promote)
	host, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	var retired string
	s.rotateRing(hostRing, func(r protocol.KeyRing) (protocol.KeyRing, error) {
		retired, _ = r.Current()
		return r.Rotate(host)
	})
	restart("host")
	restart("worker")
	during(t, 8*time.Second)

	c := audit(t, s, l, resumedOutcomes)
	if c.completed == 0 {
		t.Errorf("no script completed")
	}
	// What `splash keys status` counts: every session ended, so no live
	// ledger holds the retired host key, and the new keys sealed what
	// came after.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ojs := s.opsJS()
	var use fabric.KeyUse
	testwait.Until(t, 2*time.Minute, "no live ledger sealed with the retired host key", func() bool {
		use, err = fabric.CountKeyUse(ctx, ojs)
		return err == nil && use[fabric.KeyUseLedger][retired] == 0
	})
	if use.Total(protocol.KeyIDOf(host)) == 0 || use.Total(protocol.KeyIDOf(next)) == 0 {
		t.Errorf("the new keys sealed nothing: %v", use)
	}
	s.logf("key use after the rotations: %v", use)
}
