package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/splashfabric/splashfabric/metrics"
)

// A host process records an operation's life and serves it on /metrics.
func Example() {
	reg := metrics.NewRegistry()
	host := metrics.NewHost(reg)

	host.OperationStarted("echo")
	host.OperationDispatched("echo", 12*time.Millisecond)
	host.OperationFinished("echo", metrics.OutcomeSucceeded, 80*time.Millisecond)

	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "splash_operations_") && strings.Contains(line, `outcome="succeeded"`) ||
			strings.HasPrefix(line, "splash_operations_started_total") {
			fmt.Print(line)
		}
	}
	// Output:
	// splash_operations_finished_total{outcome="succeeded",tool="echo"} 1
	// splash_operations_started_total{tool="echo"} 1
}

// A worker bounds its tool label to the tools it serves; anything else is
// recorded as "other".
func ExampleNewWorker() {
	w := metrics.NewWorker(nil, metrics.WithTools("upper"))
	w.Serving("upper", true)
	w.HandlerStarted("upper")
	w.HandlerDone("upper", metrics.HandlerSucceeded, 3*time.Millisecond)
	w.HandlerStarted("session-3f2a")
	w.HandlerDone("session-3f2a", metrics.HandlerFailed, time.Millisecond)

	fmt.Println(nonZero(w, "splash_worker_invocations_total"))
	// Output:
	// [{outcome="failed",tool="other"} {outcome="succeeded",tool="upper"}]
}
