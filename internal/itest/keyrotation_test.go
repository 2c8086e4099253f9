package itest

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// TestKeyRotationWhileSessionsAreSuspended rotates the key ring of a
// fabric while its durable sessions are suspended, the way docs/durable.md
// says to: with the host stopped, a next key is staged and given to the
// workers, then promoted and given to the host, which comes back with
// ledgers sealed under the retired key. Every session resumes and
// completes, a new one runs under the new key, and once they finished no
// live ledger holds anything of the retired key.
func TestKeyRotationWhileSessionsAreSuspended(t *testing.T) {
	const sessions = 6
	c := newCluster(t, options{tools: []toolspec.Spec{idempotentTool("it.step"), idempotentTool("it.wait")}, durable: true})
	started := make(chan struct{}, 4*sessions)
	release := make(chan struct{})
	handler := workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
		if call.Tool == "it.step" {
			return workeragent.Result(call.Input.Text + "!"), nil
		}
		started <- struct{}{}
		select {
		case <-release:
			return workeragent.Result(call.Input.Text + "?"), nil
		case <-ctx.Done():
			// A draining worker hands the call back.
			return workeragent.Output{}, ctx.Err()
		}
	})
	serve := func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.step"), handler))
		must(t, a.HandleTool(c.tool("it.wait"), handler))
	}
	w := c.startWorker("w1", serve)

	old, _ := c.key.Ring().Current()
	ids := make([]hostloop.SessionID, sessions)
	for i := range ids {
		ids[i] = c.submit(sprintf(`const a = await tool.start("it.step", "s%d"); a + "|" + await tool.start("it.wait", a)`, i))
	}
	for range sessions {
		testwait.Receive(t, 0, "every session to wait on its second call", started)
	}
	if n := ledgerRecords(t, c)[old]; n == 0 {
		t.Fatalf("no ledger record sealed with %s before the rotation", old)
	}

	// The host stops: every session is suspended in its ledger.
	c.stopHost(true)

	// Stage a next key and give the staged ring to the workers: they
	// still seal with the old key and verify the new one.
	next, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	staged, err := c.key.Ring().Stage(next)
	must(t, err)
	c.key = staged
	stopWorker(t, w)
	w = c.startWorker("w2", serve)

	// Promote it and start the host with the promoted ring: it reads the
	// suspended ledgers sealed with the retired key and carries on under
	// the new one.
	promoted, err := staged.Promote()
	must(t, err)
	c.key = promoted
	c.startHost()
	if id, _ := promoted.Current(); id != protocol.KeyIDOf(next) {
		t.Fatalf("promoted ring seals with %s", id)
	}
	// Then the workers take the promoted ring too.
	stopWorker(t, w)
	c.startWorker("w3", serve)

	fresh := c.submit(`await tool.start("it.step", "after")`)
	close(release)
	for i, id := range ids {
		wantCompleted(t, c.wait(id, 90*time.Second), sprintf("s%d!|s%d!?", i, i))
	}
	wantCompleted(t, c.wait(fresh, 60*time.Second), "after!")

	// Finished sessions leave no ledger: nothing live holds the retired
	// key there, and the new key sealed what came after.
	testwait.Until(t, 0, "the ledgers of finished sessions to be removed", func() bool {
		return ledgerRecords(t, c)[old] == 0
	})
	use := keyUse(t, c)
	if use.Total(protocol.KeyIDOf(next)) == 0 {
		t.Fatalf("nothing sealed with the new key: %v", use)
	}
}

// stopWorker drains w as a restart of its process would; its cleanup then
// finds it stopped.
func stopWorker(t testing.TB, w *worker) {
	t.Helper()
	w.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	must(t, w.Stop(ctx))
}

// ledgerRecords counts the live ledger records by the key that sealed them.
func ledgerRecords(t testing.TB, c *cluster) map[string]int {
	t.Helper()
	return keyUse(t, c)[fabric.KeyUseLedger]
}

func keyUse(t testing.TB, c *cluster) fabric.KeyUse {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	use, err := fabric.CountKeyUse(ctx, c.hostJS)
	must(t, err)
	return use
}
