package workflow_test

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
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

	got, err := workflow.Restore(l.Entries(0), workflow.ReplayConfig{
		Register: func(rt *host.Runtime) error {
			return rt.RegisterExternalTool(host.NewToolPolicy("text.remote"))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Result().Value, got.Len())
	// Output: got done 0
}
