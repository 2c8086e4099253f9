package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"

	"testing"
)

// jaegerTrace is what Jaeger's query API answers for one trace.
type jaegerTrace struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			ProcessID     string `json:"processID"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// TestScenarioTraceInJaeger submits a script whose call is retried once to
// the compose cluster and finds its trace in the cluster's Jaeger, through
// the query API Grafana's Jaeger data source reads: the host's spans and
// the worker's, one tree, the worker's invocations under the host's
// attempts.
func TestScenarioTraceInJaeger(t *testing.T) {
	s, api := cluster(t, 1)
	ctx := t.Context()
	st, err := api.submit(ctx, `const a = await tool.start("demo.flaky", "1"); return a + " " + await tool.start("demo.upper", "traced")`)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.TraceID) != 32 {
		t.Fatalf("session %s reports trace %q", st.ID, st.TraceID)
	}
	testwait.Until(t, time.Minute, "the session to complete", func() bool {
		got, err := api.session(ctx, st.ID)
		return err == nil && got.State == "completed"
	})
	base := "http://" + s.port("jaeger", 16686)
	var tr jaegerTrace
	want := map[string]int{
		"session": 1, "operation demo.flaky": 1, "attempt demo.flaky": 2, "retry backoff": 1,
		"invoke demo.flaky": 2, "handler demo.flaky": 2, "operation demo.upper": 1, "invoke demo.upper": 1, "POST /v1/sessions": 1,
	}
	var counts map[string]int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		tr, err = getTrace(ctx, base, st.TraceID)
		counts = map[string]int{}
		if err == nil && len(tr.Data) == 1 {
			for _, sp := range tr.Data[0].Spans {
				counts[sp.OperationName]++
			}
		}
		complete := true
		for name, n := range want {
			complete = complete && counts[name] >= n
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's trace %s after 2m: %v (err %v), want at least %v", st.TraceID, counts, err, want)
		}
		time.Sleep(time.Second)
	}
	trace := tr.Data[0]
	byID := map[string]string{}
	services := map[string]bool{}
	for _, sp := range trace.Spans {
		byID[sp.SpanID] = sp.OperationName
		services[trace.Processes[sp.ProcessID].ServiceName] = true
	}
	if !services["splash-host"] || !services["splash-worker"] {
		t.Errorf("services in the trace: %v, want splash-host and splash-worker", services)
	}
	for _, sp := range trace.Spans {
		if sp.OperationName != "invoke demo.flaky" && sp.OperationName != "invoke demo.upper" {
			continue
		}
		parent := ""
		for _, r := range sp.References {
			if r.RefType == "CHILD_OF" {
				parent = byID[r.SpanID]
			}
		}
		if parent != "attempt "+sp.OperationName[len("invoke "):] {
			t.Errorf("worker span %q under %q, want the host's attempt", sp.OperationName, parent)
		}
	}
}

// getTrace asks Jaeger's query API for one trace.
func getTrace(ctx context.Context, base, id string) (jaegerTrace, error) {
	var out jaegerTrace
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/traces/"+id, nil)
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("jaeger: %s", resp.Status)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}
