package workeragent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/sdk/go/splashtool"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// processToolEnv makes the test binary a process tool (see TestMain),
// built on the Go SDK, which honours no cancellation: it answers a
// cancel unsupported at once and runs on.
//
// Either streams "running" first.
//
//	stubborn    never answers
//	nap         answers "rested" after 200ms
const processToolEnv = "WORKERAGENT_TEST_TOOL"

func runProcessTool() int {
	err := splashtool.Serve(func(ctx context.Context, call *splashtool.Call) (splashtool.Output, error) {
		if err := call.Stream("running"); err != nil {
			return splashtool.Output{}, err
		}
		switch call.Input.Text {
		case "nap":
			time.Sleep(200 * time.Millisecond)
			return splashtool.Text("rested"), nil
		}
		select {}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A cancel always ends a process tool's call: a tool that answers it
// unsupported, or whose definition says it honours none, and runs on is
// stopped at the end of its cancel grace, and the call is answered
// indeterminate (its effect is unknown); one that finishes within the
// grace answers as usual.
func TestCancelEndsProcessCall(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	for _, tc := range []struct {
		name        string
		cancellable bool
		input       string
		grace       time.Duration
		want        protocol.ResultStatus
	}{
		{"tool answers unsupported", true, "stubborn", 300 * time.Millisecond, protocol.ResultIndeterminate},
		{"definition not cancellable", false, "stubborn", 300 * time.Millisecond, protocol.ResultIndeterminate},
		{"finishes within the grace", false, "nap", 10 * time.Second, protocol.ResultSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def, err := toolspec.Spec{
				Name: "proc.stubborn", Cancellable: tc.cancellable,
				Stream: &toolspec.StreamPolicy{MaxChunks: 4, MaxChunkBytes: 64, MaxSourceBytes: 256, MaxReleasedBytes: 256},
				Process: &toolspec.Process{
					Command: []string{exe}, Env: []string{processToolEnv + "=1"},
					// This test is about cancellation; toolproc's own
					// tests run the sandbox.
					Contain:     &toolspec.Contain{Disabled: true},
					CancelGrace: toolspec.Duration(tc.grace),
				},
			}.Compile()
			must(t, err)
			e := newEnv(t)
			e.startAgent("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(def, nil)) })
			inv := e.newInvoke("proc.stubborn", tc.input)
			inv.Contract = &protocol.Contract{Digest: def.Digest(), Cancellable: tc.cancellable}
			p := def.Spec().Stream.Limits()
			inv.Stream = &p
			e.publish(inv)
			// Once the tool has the call (it streamed), cancel it.
			testwait.Receive(t, 0, "the tool's chunk", e.chunks)
			e.cancel(inv, false)
			if d := e.disposition(t); d.Disposition != protocol.CancelUnsupported {
				t.Fatalf("disposition %+v, want unsupported", d)
			}
			res := e.result(t)
			if res.Status != tc.want {
				t.Fatalf("result %+v, want %s", res, tc.want)
			}
			if tc.want == protocol.ResultIndeterminate && !strings.Contains(res.Error, "cancel_unsupported") {
				t.Errorf("error %q does not name the reason", res.Error)
			}
		})
	}
}
