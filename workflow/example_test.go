package workflow_test

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workflow"
)

// A session's ledger replayed in a fresh runtime: the recorded answer is
// given to the script again, and the script ends as it did the first time.
func ExampleRestore() {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := workflow.NewLedger(at, workflow.Submitted{
		Source: `return "got " + await tool.start("text.remote", "release")`,
		Nonce:  [16]byte{1},
	})
	// What the first run recorded: the call prepared, then its answer.
	key := "sk1-01000000000000000000000000000000-1"
	l.Prepare(at, workflow.Prepared{Op: 1, CallIndex: 1, Tool: "text.remote", Input: "release", Key: key, Request: "r-1"})
	l.Apply(at.Add(time.Second), workflow.Applied{Kind: workflow.InputSucceeded, Op: 1, Output: "done"})

	remote, err := toolspec.Spec{Name: "text.remote"}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := workflow.Restore(l.Entries(0), workflow.ReplayConfig{
		Register: func(rt *host.Runtime) error { return rt.RegisterTool(remote) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Result().Value, got.Len())
	// Output: got done 0
}

// A durable session's core, driven by hand: the call it claims is held
// until its prepared entry is stored, and the worker's answer is
// acknowledged only once its entry is.
func ExampleSession() {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := host.NewManualClock(at)
	nonce := host.NewCapabilitySessionNonce([16]byte{1})
	rt := host.NewRuntime(host.Config{Clock: clock, SessionNonce: &nonce})
	remote, err := toolspec.Spec{Name: "text.remote"}.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := rt.RegisterTool(remote); err != nil {
		fmt.Println(err)
		return
	}
	src := `return "got " + await tool.start("text.remote", "release")`
	first, _ := rt.Eval(src)
	ledger := workflow.NewLedger(at, workflow.Submitted{Source: src, Nonce: nonce.Bytes()})
	s := workflow.NewSession(workflow.Config{Runtime: rt, First: first, Clock: clock, Ledger: ledger,
		RequestID: func() string { return "r-1" }})

	op := s.Claim()[0]
	rd := s.Ready()
	fmt.Println("publish before the write:", len(rd.Publish), "append:", len(rd.Append.Entries))
	s.Stored(rd.Append.UpTo())
	fmt.Println("accepted:", s.Ready().Accepted)
	fmt.Println("publish:", s.Ready().Publish[0].RequestID)

	p := protocol.TextPayload("done")
	s.Answer(op, protocol.Result{RequestID: op.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &p},
		func() { fmt.Println("acknowledged") })
	rd = s.Ready()
	fmt.Println("acks before the write:", len(rd.Acks), "result:", s.Result().Value)
	s.Stored(rd.Append.UpTo())
	for _, ack := range s.Ready().Acks {
		ack()
	}
	// Output:
	// publish before the write: 0 append: 2
	// accepted: true
	// publish: r-1
	// acks before the write: 0 result: got done
	// acknowledged
}
