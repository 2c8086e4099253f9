package tracing_test

import (
	"fmt"

	"github.com/splashfabric/splashfabric/tracing"
)

// A session's traceparent, as its ledger keeps it, read back by the host
// that resumes it: the session's span id is derived from the trace, so
// both processes give it the same one.
func ExampleParseTraceParent() {
	sc, err := tracing.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil {
		panic(err)
	}
	fmt.Println(sc.TraceID(), sc.IsSampled())
	fmt.Println(tracing.DerivedSpanID(sc.TraceID(), "session/s-h1-0123456789ab-1"))
	// Output:
	// 4bf92f3577b34da6a3ce929d0e0e4736 true
	// b4ca1b672651fec4
}
