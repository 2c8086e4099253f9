package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/otlptest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/tracing"
	"go.opentelemetry.io/otel/trace"
)

// The tracing tests run `splash dev` with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at an in-process OTLP/HTTP receiver and read the spans it
// exports, as a trace backend would.

// traceEnv is the environment of a traced dev process: export to r, in
// batches sent every 100ms so a test waits little.
func traceEnv(r *otlptest.Receiver) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.URL(), "OTEL_BSP_SCHEDULE_DELAY=100"}
}

// tracedCatalog writes a catalog of the demo tools and test.traced (the
// Python tool of testdata/trace) whose own span goes to r.
func tracedCatalog(t *testing.T, r *otlptest.Receiver) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	sdk, tool := filepath.Join(wd, "..", "..", "sdk", "python"), filepath.Join(wd, "testdata", "trace", "traced.py")
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	cat := fmt.Sprintf(`tools:
  - name: demo.sleep
    idempotent: true
    cancellable: true
    deadline: 30s
  - name: test.traced
    description: retried once, streams, exports a span of its own, waits to be cancelled
    max_attempts: 2
    cancellable: true
    deadline: 60s
    stream: {max_chunks: 8, max_chunk_bytes: 1024, max_source_bytes: 8192, max_released_bytes: 8192}
    process:
      command: [python3, %q]
      env: [PYTHONPATH=%s, PYTHONDONTWRITEBYTECODE=1, OTLP_TRACES_URL=%s/v1/traces]
      # Its own span is exported over the loopback, which a sandbox
      # does not have.
      contain: false
`, tool, sdk, r.URL())
	if err := os.WriteFile(path, []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func spanNamed(spans []otlptest.Span, name string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func byID(spans []otlptest.Span) map[string]otlptest.Span {
	m := make(map[string]otlptest.Span, len(spans))
	for _, s := range spans {
		m[s.SpanID] = s
	}
	return m
}

func countEvents(s otlptest.Span, name string) int {
	n := 0
	for _, e := range s.Events {
		if e.Name == name {
			n++
		}
	}
	return n
}

// TestTraceOfRetriedStreamedCancelledCall follows one script's call across
// the fabric: submitted with a client's traceparent, retried once by its
// worker, streaming, cancelled; the host's, the worker's and the Python
// tool's own spans form one tree in the client's trace.
func TestTraceOfRetriedStreamedCancelledCall(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed for the traced process tool")
	}
	r := otlptest.Start(t)
	const token = "trace-token"
	dev := startSplashEnv(t, traceEnv(r), "dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1",
		"--catalog", tracedCatalog(t, r), "--trace-url", "http://jaeger.test:16686/trace/{trace_id}")
	defer func() {
		if err := dev.stop(t); err != nil {
			t.Errorf("dev exit: %v", err)
		}
	}()
	rec := dev.waitRecord(t, "dev ready")
	apiURL := rec["api_url"].(string)
	c, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// The client's own span: the session joins its trace.
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body, _ := json.Marshal(apiclient.SubmitRequest{Source: `
		try { return await tool.start("test.traced", "x") } catch (e) { return "ended" }`})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, apiURL+"/v1/sessions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st apiclient.Session
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %v", resp.StatusCode, err)
	}
	if st.TraceID != clientTrace || st.TraceURL != "http://jaeger.test:16686/trace/"+clientTrace {
		t.Fatalf("session trace %q at %q, want the client's %s", st.TraceID, st.TraceURL, clientTrace)
	}
	testwait.Until(t, 0, "attempt 2 streaming", func() bool {
		log, err := c.Audit(ctx, st.ID)
		if err != nil {
			return false
		}
		n := 0
		for _, e := range log.Events {
			if e.Outcome == "streamed" && e.Attempt == 2 {
				n++
			}
		}
		return n == 2
	})
	if _, err := c.Cancel(ctx, st.ID, "op-1"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 0, "the session to end", func() bool {
		s, err := c.Session(ctx, st.ID)
		return err == nil && s.State == apiclient.StateCompleted
	})

	spans := r.WaitFor(t, testwait.DefaultTimeout, "the session's spans", func(spans []otlptest.Span) bool {
		return len(spanNamed(spans, "session")) == 1 && len(spanNamed(spans, "invoke test.traced")) == 2 &&
			len(spanNamed(spans, "tool work")) == 1 && len(spanNamed(spans, "operation test.traced")) == 1
	})
	ids := byID(spans)
	parentOf := func(s otlptest.Span) otlptest.Span { return ids[s.ParentID] }
	for _, s := range spans {
		if s.TraceID != clientTrace {
			t.Errorf("%s %q in trace %s, want %s", s.Service, s.Name, s.TraceID, clientTrace)
		}
	}
	post := spanNamed(spans, "POST /v1/sessions")
	if len(post) != 1 || post[0].ParentID != clientSpan || post[0].Service != "splash-host" {
		t.Fatalf("submission spans %+v, want one under the client's %s", post, clientSpan)
	}
	session := spanNamed(spans, "session")[0]
	if session.ParentID != post[0].SpanID || session.Attrs["splash.session.id"] != st.ID {
		t.Errorf("session span under %s for %q", session.ParentID, session.Attrs["splash.session.id"])
	}
	op := spanNamed(spans, "operation test.traced")[0]
	if op.ParentID != session.SpanID || op.Attrs["splash.outcome"] != "cancelled" {
		t.Errorf("operation under %s, outcome %q", op.ParentID, op.Attrs["splash.outcome"])
	}
	attempts := map[string]otlptest.Span{}
	for _, a := range spanNamed(spans, "attempt test.traced") {
		if a.ParentID != op.SpanID {
			t.Errorf("attempt %s under %s", a.Attrs["splash.attempt"], a.ParentID)
		}
		attempts[a.Attrs["splash.attempt"]] = a
	}
	if attempts["1"].Attrs["splash.outcome"] != "retry" || attempts["2"].Attrs["splash.outcome"] != "cancelled" {
		t.Errorf("attempt outcomes %q, %q", attempts["1"].Attrs["splash.outcome"], attempts["2"].Attrs["splash.outcome"])
	}
	if n := countEvents(attempts["2"], "chunk"); n != 2 {
		t.Errorf("attempt 2 carries %d chunk events", n)
	}
	if b := spanNamed(spans, "retry backoff"); len(b) != 1 || b[0].ParentID != op.SpanID {
		t.Errorf("retry backoff spans %+v", b)
	}
	// Each attempt's worker spans hang under it.
	for _, inv := range spanNamed(spans, "invoke test.traced") {
		a := parentOf(inv)
		if a.Name != "attempt test.traced" || a.Attrs["splash.attempt"] != inv.Attrs["splash.attempt"] || inv.Service != "splash-worker" {
			t.Errorf("worker's invoke of attempt %s under %q (attempt %s)", inv.Attrs["splash.attempt"], a.Name, a.Attrs["splash.attempt"])
		}
	}
	for _, name := range []string{"pickup", "handler test.traced", "answer"} {
		for _, s := range spanNamed(spans, name) {
			if p := parentOf(s); p.Name != "invoke test.traced" {
				t.Errorf("%q under %q", name, p.Name)
			}
		}
		if n := len(spanNamed(spans, name)); n != 2 {
			t.Errorf("%d %q spans, want one per attempt", n, name)
		}
	}
	for _, s := range spanNamed(spans, "process call test.traced") {
		if p := parentOf(s); p.Name != "handler test.traced" {
			t.Errorf("process call under %q", p.Name)
		}
	}
	tool := spanNamed(spans, "tool work")[0]
	if p := parentOf(tool); p.Name != "process call test.traced" || tool.Service != "test-tool" || parentOf(parentOf(parentOf(p))).Attrs["splash.attempt"] != "2" {
		t.Errorf("the tool's own span under %q (%s)", p.Name, tool.Service)
	}
	// Counts and sizes only: no chunk text anywhere.
	for _, s := range spans {
		for k, v := range s.Attrs {
			if strings.Contains(v, "chunk-text") {
				t.Errorf("%q carries %s=%q", s.Name, k, v)
			}
		}
		for _, e := range s.Events {
			for k, v := range e.Attrs {
				if strings.Contains(v, "chunk-text") {
					t.Errorf("event %q of %q carries %s=%q", e.Name, s.Name, k, v)
				}
			}
		}
	}
	if r.Bad() != 0 {
		t.Errorf("%d exports did not decode", r.Bad())
	}
}

// TestResumedSessionKeepsItsTrace kills `splash dev` while a durable
// session waits on its call, starts it again on the same data: the
// resumed session's spans are in the trace its submission began, under
// the same session span id.
func TestResumedSessionKeepsItsTrace(t *testing.T) {
	r := otlptest.Start(t)
	const token = "trace-token"
	dir := t.TempDir()
	start := func() (*proc, *apiclient.Client) {
		dev := startSplashEnv(t, traceEnv(r), "dev", "--log-format", "json", "--data-dir", dir,
			"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1", "--ack-wait", "2s")
		return dev, dev.client(t, token)
	}
	dev, c := start()
	ctx := t.Context()
	st, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "3s"); "slept"`})
	if err != nil || st.State != apiclient.StateSuspended || st.TraceID == "" {
		t.Fatalf("submit: %+v, %v", st, err)
	}
	testwait.Until(t, 0, "the sleep claimed", func() bool {
		s, err := c.Session(ctx, st.ID)
		return err == nil && len(s.Operations) == 1 && s.Operations[0].State == "claimed"
	})
	r.WaitFor(t, testwait.DefaultTimeout, "the submission's span", func(spans []otlptest.Span) bool {
		return len(spanNamed(spans, "POST /v1/sessions")) == 1
	})
	if err := dev.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-dev.done

	dev, c = start()
	defer func() {
		if err := dev.stop(t); err != nil {
			t.Errorf("dev exit: %v", err)
		}
	}()
	testwait.Until(t, 0, "the resumed session to complete", func() bool {
		s, err := c.Session(ctx, st.ID)
		return err == nil && s.State == apiclient.StateCompleted
	})
	spans := r.WaitFor(t, testwait.DefaultTimeout, "the resumed session's span", func(spans []otlptest.Span) bool {
		return len(spanNamed(spans, "session")) == 1 && len(spanNamed(spans, "operation demo.sleep")) == 1
	})
	post := spanNamed(spans, "POST /v1/sessions")[0]
	if post.TraceID != st.TraceID {
		t.Fatalf("submission in %s, session reports %s", post.TraceID, st.TraceID)
	}
	for _, s := range spans {
		if s.TraceID != st.TraceID {
			t.Errorf("%s %q (%v) in another trace %s", s.Service, s.Name, s.Attrs, s.TraceID)
		}
	}
	session := spanNamed(spans, "session")[0]
	tid, _ := trace.TraceIDFromHex(st.TraceID)
	if want := tracing.DerivedSpanID(tid, "session/"+st.ID).String(); session.SpanID != want || session.ParentID != post.SpanID {
		t.Errorf("resumed session span %s under %s, want %s under the submission %s", session.SpanID, session.ParentID, want, post.SpanID)
	}
	if session.Attrs["splash.session.resumed"] != "true" || session.Attrs["splash.session.state"] != "completed" {
		t.Errorf("resumed session span attributes %v", session.Attrs)
	}
	if !session.Start.Before(post.End.Add(time.Second)) {
		t.Errorf("the resumed session span starts at %v, not at its submission (%v)", session.Start, post.End)
	}
	op := spanNamed(spans, "operation demo.sleep")[0]
	if op.ParentID != session.SpanID || op.Attrs["splash.outcome"] != "succeeded" {
		t.Errorf("operation under %s, outcome %q", op.ParentID, op.Attrs["splash.outcome"])
	}
}
