package workflow_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"
)

// A session's ledger appended to many times is handed out whole from time
// to time (Append.All), once the appends since the last rewrite outnumber
// max(CompactAfter, a quarter of the ledger): a Log that rewrites keeps a
// long session's ledger to few messages, at a cost linear in its length.
func TestSessionRewritesALongLedger(t *testing.T) {
	clock := host.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	nonce := host.NewCapabilitySessionNonce([16]byte{3})
	const calls = 300
	rt := host.NewRuntime(host.Config{Clock: clock, SessionNonce: &nonce, ToolCallBudget: calls + 1})
	if err := rt.RegisterTool(tooltest.Text(t, "t")); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`for (let i = 0; i < %d; i++) await tool.start("t", "x"); return "done"`, calls)
	first, err := rt.Eval(src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	s := workflow.NewSession(workflow.Config{Runtime: rt, First: first, Clock: clock,
		Ledger:    workflow.NewLedger(clock.Now(), workflow.Submitted{Source: src, Nonce: nonce.Bytes()}),
		RequestID: func() string { n++; return fmt.Sprint("r", n) }})
	var rewrites []int // the ledger's length at each rewrite
	appends := 0
	store := func() {
		for {
			rd := s.Ready()
			for _, ack := range rd.Acks {
				ack()
			}
			if rd.Append == nil {
				if !s.HasReady() {
					return
				}
				continue
			}
			appends++
			if rd.Append.All != nil {
				if len(rd.Append.All) != rd.Append.UpTo() || rd.Append.All[0].Submitted == nil {
					t.Fatalf("a rewrite of %d entries for a ledger of %d", len(rd.Append.All), rd.Append.UpTo())
				}
				rewrites = append(rewrites, rd.Append.UpTo())
			}
			s.Stored(rd.Append.UpTo())
		}
	}
	for !s.Done() {
		ops := s.Claim()
		store()
		for _, op := range ops {
			p := protocol.TextPayload("ok")
			if _, err := s.Answer(op, protocol.Result{RequestID: op.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p}, nil); err != nil {
				t.Fatal(err)
			}
		}
		store()
	}
	if len(rewrites) == 0 || rewrites[0] < workflow.CompactAfter {
		t.Fatalf("rewrites at %v over %d appends", rewrites, appends)
	}
	for i := 1; i < len(rewrites); i++ {
		// Each rewrite waits for at least a quarter of the ledger as it
		// was, in appends of two entries at most.
		if gap := rewrites[i] - rewrites[i-1]; gap < rewrites[i-1]/4 {
			t.Fatalf("rewrites at %v: %d entries apart", rewrites, gap)
		}
	}
	t.Logf("%d appends, rewrites at ledger lengths %v", appends, rewrites)
}
