package workeragent_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// An invocation sealed with a key the worker's ring lacks (a host promoted
// a key before the pool had the staged ring) is handed back, counted as
// unknown_key, and run by a worker that holds the key; a worker whose ring
// holds both keys answers under the key it seals with, which the host's
// ring verifies.
func TestInvocationUnderAnUnknownKeyIsHandedBack(t *testing.T) {
	e := newEnv(t)
	next, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	staged, err := e.key.Ring().Stage(next)
	must(t, err)
	promoted, err := staged.Promote()
	must(t, err)
	hostCodec, err := fabric.NewCodec(promoted)
	must(t, err)

	echo := func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "echo"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
			return workeragent.Result(c.Input.Text), nil
		})))
	}
	old := e.startAgent("old-ring", echo)
	inv := e.newInvoke("echo", "under the new key")
	e.publishSealed(hostCodec, inv, inv.IdempotencyKey+"/1")
	testwait.Until(t, 0, "the worker to refuse the unknown key", func() bool { return old.Stats().Forged >= 1 })
	if n := e.pending(t, "echo"); n != 1 {
		t.Fatalf("%d invocations left in the queue, want the refused one handed back", n)
	}
	old.stop()
	_ = old.err(t)

	e.startAgentWith("staged-ring", func(c *workeragent.Config) { c.Key = staged }, echo)
	if r := e.result(t); r.RequestID != inv.RequestID || r.Status != protocol.ResultSucceeded {
		t.Fatalf("result %+v", r)
	}
}
