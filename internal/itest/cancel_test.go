package itest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/toolspec"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workeragent"
)

// cancellable is tool, declared cancellable.
func cancellable(name string) toolspec.Spec {
	s := tool(name)
	s.Cancellable = true
	return s
}

// cancel asks the loop to cancel the session's only live operation.
func (c *cluster) cancel(sid hostloop.SessionID) {
	c.t.Helper()
	op := c.liveOp(sid)
	ctx, cancel := opCtx()
	defer cancel()
	must(c.t, c.loop.Cancel(ctx, sid, op.ID))
}

// Scenario 5: cancellation of a call that runs, of one whose result wins
// the race, and of one still queued in the stream.
func TestCancelRunningCall(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{cancellable("it.cancel")}})
	fx := newEffects()
	started := make(chan struct{})
	cause := make(chan error, 1)
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.cancel"), counting(fx, func(ctx context.Context, _ *workeragent.Call) (workeragent.Output, error) {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return workeragent.Output{}, workeragent.CancelAcknowledged()
		})))
	})
	id := c.submit(sprintf(catchScript, "it.cancel"))
	testwait.Receive(t, 0, "the handler to start", started)
	c.cancel(id)
	if err := testwait.Receive(t, 0, "the handler's context to end", cause); !errors.Is(err, workeragent.ErrCancelRequested) {
		t.Fatalf("handler context cause = %v, want ErrCancelRequested", err)
	}
	s := c.wait(id, 0)
	wantValuePrefix(t, s, "caught: ")
	if !strings.Contains(s.Value, "cancel") {
		t.Fatalf("script saw %q, want a cancellation", s.Value)
	}
	if fx.count() != 1 || w.Stats().CancelRequests != 1 {
		t.Fatalf("runs = %d, stats = %+v", fx.count(), w.Stats())
	}
}

func TestCancelLosesToResult(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{cancellable("it.race")}})
	fx := newEffects()
	started := make(chan struct{})
	finish := make(chan struct{})
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.race"), counting(fx, func(context.Context, *workeragent.Call) (workeragent.Output, error) {
			close(started)
			// The effect is past the point of no return: it finishes
			// whatever the context says.
			<-finish
			return workeragent.Result("won"), nil
		})))
	})
	id := c.submit(sprintf(catchScript, "it.race"))
	testwait.Receive(t, 0, "the handler to start", started)
	c.cancel(id)
	testwait.Until(t, 0, "the worker to hear the cancellation", func() bool { return w.Stats().CancelRequests == 1 })
	close(finish)
	wantCompleted(t, c.wait(id, 0), "ok: won")
	if fx.count() != 1 {
		t.Fatalf("runs = %d, want 1", fx.count())
	}
}

func TestCancelQueuedCallNeverRuns(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{cancellable("it.queued")}})
	// No worker serves the tool yet: the invocation waits in the stream.
	id := c.submit(sprintf(catchScript, "it.queued"))
	c.cancel(id)
	fx := newEffects()
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.queued"), counting(fx, echo)))
	})
	s := c.wait(id, 0)
	wantValuePrefix(t, s, "caught: ")
	if !strings.Contains(s.Value, "cancel") {
		t.Fatalf("script saw %q, want a cancellation", s.Value)
	}
	if st := w.Stats(); fx.count() != 0 || st.Executed != 0 || st.CancelledBeforeStart != 1 {
		t.Fatalf("runs = %d, stats = %+v", fx.count(), st)
	}
}
