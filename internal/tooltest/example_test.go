package tooltest_test

import (
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/toolspec"
)

// printT stands in for the *testing.T a test passes.
type printT struct{}

func (printT) Helper()                           {}
func (printT) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func ExampleTool() {
	var t printT
	// The host registers it (rt.RegisterTool(remote)) and the worker
	// handles it (agent.HandleTool(remote, h)): one definition, one digest.
	remote := tooltest.Tool(t, toolspec.Spec{
		Name:        "text.remote",
		MaxAttempts: 3,
		Deadline:    toolspec.Duration(time.Minute),
		Idempotent:  true,
	})
	s := remote.Spec()
	fmt.Println(s.Name, s.Format, s.MaxAttempts, s.Deadline, s.Idempotent, s.MaxOutputBytes)

	// A definition out of toolspec's bounds fails the test.
	tooltest.Tool(t, toolspec.Spec{Name: "text.rushed", Deadline: toolspec.Duration(time.Microsecond)})
	// Output:
	// text.remote text 3 1m0s true 1048576
	// tooltest: toolspec: tool "text.rushed": field "deadline": out of range: 1µs is not between 1ms and 24h0m0s
}

func ExampleSet() {
	var t printT
	set := tooltest.Set(t,
		toolspec.Spec{Name: "text.upper"},
		toolspec.Spec{Name: "demo.sum", Format: toolspec.FormatJSON, OutputSchema: []byte(`{"type":"integer"}`)},
	)
	fmt.Println(set.Names())

	// A worker is handed the definition its host registered.
	fmt.Println(tooltest.Lookup(t, set, "demo.sum").Format())
	tooltest.Lookup(t, set, "demo.missing")
	// Output:
	// [demo.sum text.upper]
	// json
	// tooltest: no tool "demo.missing" among ["demo.sum" "text.upper"]
}
