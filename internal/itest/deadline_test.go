package itest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 6: a slow worker's call times out at the host; its late result
// is refused and recorded, and changes nothing.
func TestDeadlineLateResultChangesNothing(t *testing.T) {
	ht := tool("it.slow")
	ht.Deadline = toolspec.Duration(300 * time.Millisecond)
	c := newCluster(t, options{tools: []toolspec.Spec{ht}})
	fx := newEffects()
	started := make(chan struct{})
	cause := make(chan error, 1)
	release := make(chan struct{})
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.slow"), counting(fx, func(ctx context.Context, _ *workeragent.Call) (workeragent.Output, error) {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			// A worker that ignores its deadline and answers anyway.
			<-release
			return workeragent.Result("late"), nil
		})))
	})
	id := c.submit(sprintf(catchScript, "it.slow"))
	testwait.Receive(t, 0, "the handler to start", started)
	s := c.wait(id, 0)
	wantValuePrefix(t, s, "caught: ")
	if err := testwait.Receive(t, 0, "the handler's deadline", cause); !errors.Is(err, workeragent.ErrDeadlineElapsed) {
		t.Fatalf("handler context cause = %v, want ErrDeadlineElapsed", err)
	}
	before := c.obs.rejections("late_result")
	close(release)
	testwait.Until(t, 0, "the late result to be refused", func() bool { return c.obs.rejections("late_result") > before })
	after, audit := c.status(id)
	if !hasOutcome(audit, host.AuditLateResult) {
		t.Fatalf("audit = %+v, want the late result recorded", audit)
	}
	if after.State != s.State || after.Value != s.Value || len(after.Operations) != 0 {
		t.Fatalf("session changed after the late result: %+v, was %+v", after, s)
	}
	if !hasOutcome(audit, host.AuditTimedOut) || hasOutcome(audit, host.AuditSucceeded) {
		t.Fatalf("audit = %+v, want timed_out and no success", audit)
	}
	if !strings.Contains(strings.ToLower(s.Value), "time") {
		t.Errorf("script saw %q, want a timeout", s.Value)
	}
	if fx.count() != 1 {
		t.Fatalf("runs = %d, want 1", fx.count())
	}
}
