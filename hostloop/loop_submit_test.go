package hostloop

import (
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/toolspec"

	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// Submit evaluates a script's first step on the caller's goroutine, so
// concurrent submitters run their scripts in parallel while the loop keeps
// completing other sessions; under -race this also shows that the runtime
// passes from the submitter to the loop without sharing.
func TestLoopConcurrentSubmitters(t *testing.T) {
	const submitters, each = 8, 25
	tr := newChanTransport()
	l := startTestLoop(t, tr, tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "text.remote"}))
	// Answer every invocation as it comes, while submissions go on.
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for range submitters * each {
			var inv protocol.Invoke
			select {
			case inv = <-tr.Invocations():
			case <-time.After(testwait.DefaultTimeout):
				t.Error("an invocation was never published")
				return
			}
			p := protocol.TextPayload(inv.Input.Text)
			tr.Reply(protocol.Result{RequestID: inv.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p})
		}
	}()
	ids := make([][]SessionID, submitters)
	var wg sync.WaitGroup
	for g := range submitters {
		wg.Go(func() {
			for i := range each {
				in := strconv.Itoa(g*each + i)
				s, err := l.Submit(context.Background(), Submission{Source: `const r = await tool.start("text.remote", "` + in + `"); r`})
				if err != nil {
					t.Error(err)
					return
				}
				ids[g] = append(ids[g], s.ID)
			}
		})
	}
	wg.Wait()
	<-answered
	seen := make(map[SessionID]bool)
	for g := range ids {
		for i, id := range ids[g] {
			if seen[id] {
				t.Fatalf("session id %s issued twice", id)
			}
			seen[id] = true
			if s := waitState(t, l, id, SessionCompleted); s.Value != strconv.Itoa(g*each+i) {
				t.Fatalf("session %s = %q, want %d", id, s.Value, g*each+i)
			}
		}
	}
	if len(seen) != submitters*each {
		t.Fatalf("%d sessions, want %d", len(seen), submitters*each)
	}
}
