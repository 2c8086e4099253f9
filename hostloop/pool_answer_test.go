package hostloop_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// rejections records the reasons the loop refuses worker messages.
type rejections struct {
	mu      sync.Mutex
	reasons []string
}

func (r *rejections) SessionChanged(hostloop.SessionStatus)                         {}
func (r *rejections) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {}
func (r *rejections) Chunk(hostloop.SessionID, host.ExternalToolStreamChunk)        {}
func (r *rejections) Audit(hostloop.SessionID, []host.AuditEvent)                   {}
func (r *rejections) Dispatched(hostloop.SessionID, host.ExternalInvocation)        {}
func (r *rejections) Rejected(reason string, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}
func (r *rejections) has(reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.reasons, reason)
}

// An answer the transport authenticated under one pool's key applies only
// to an operation of a tool that pool serves: the pool of text.upper,
// knowing (or guessing) the request id of a demo.sleep call, cannot answer
// it with its own key. The genuine answer then completes the script.
func TestLoopRefusesAnAnswerFromAnotherToolsPool(t *testing.T) {
	tr := hostloop.NewMemTransport(16)
	obs := &rejections{}
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: tr,
		HostID:    "h1",
		Observer:  obs,
		Catalog:   tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "demo.sleep"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	s, err := l.Submit(context.Background(), hostloop.Submission{Source: `await tool.start("demo.sleep", "1s")`})
	if err != nil {
		t.Fatal(err)
	}
	inv := testwait.Receive(t, 0, "the invocation", tr.Invocations())
	answer := func(tool, text string) {
		p := protocol.TextPayload(text)
		tr.Send(hostloop.Event{Kind: hostloop.EventMessage, Worker: "w", Tool: tool, Message: protocol.ResultMessage(
			protocol.Result{RequestID: inv.RequestID, Attempt: inv.Attempt, Status: protocol.ResultSucceeded, Payload: &p})})
	}
	answer("text.upper", "FORGED")
	testwait.Until(t, 0, "the forged answer to be refused", func() bool { return obs.has("wrong_pool") })
	if st, _, err := l.Status(context.Background(), s.ID); err != nil || st.State != hostloop.SessionSuspended {
		t.Fatalf("after the forgery: %+v, %v", st, err)
	}
	answer("demo.sleep", "slept")
	testwait.Until(t, 0, "the session to complete", func() bool {
		st, _, err := l.Status(context.Background(), s.ID)
		return err == nil && st.State == hostloop.SessionCompleted && strings.Contains(st.Value, "slept")
	})
}
