package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// memWorker plays a worker pool over the loop's in-memory transport:
// "echo" returns its input, "stream" sends three chunks and then
// "streamed", "sleep" waits for a cancellation and acknowledges it, "hold"
// never answers, cancelled or not.
type memWorker struct {
	*hostloop.MemTransport
	cancels chan protocol.Cancel
	stop    chan struct{}
	done    chan struct{}
}

func startMemWorker(t *testing.T) *memWorker {
	t.Helper()
	w := &memWorker{
		MemTransport: hostloop.NewMemTransport(1024),
		cancels:      make(chan protocol.Cancel, 1024),
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
	}
	w.OnCancel = func(c protocol.Cancel) { w.cancels <- c }
	go w.run()
	t.Cleanup(func() { close(w.stop); <-w.done })
	return w
}

func (w *memWorker) run() {
	defer close(w.done)
	sleeping := make(map[string]protocol.Invoke)
	for {
		select {
		case <-w.stop:
			return
		case inv := <-w.Invocations():
			switch inv.Tool {
			case "echo":
				w.Succeed(inv, inv.Input.Text)
			case "stream":
				for i := 1; i <= 3; i++ {
					w.Message(protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: uint64(i), Text: fmt.Sprintf("part-%d", i)}))
				}
				w.Succeed(inv, "streamed")
			case "sleep":
				sleeping[inv.RequestID] = inv
			}
		case c := <-w.cancels:
			if inv, ok := sleeping[c.RequestID]; ok {
				delete(sleeping, c.RequestID)
				w.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: c.RequestID, Attempt: inv.Attempt, Disposition: protocol.CancelAcknowledged}))
			}
		}
	}
}

// catalog registers the tools every session of the API tests may call.
func catalog(tb testing.TB) func(*host.Runtime) error {
	return tooltest.Catalog[*host.Runtime](tb,
		toolspec.Spec{Name: "echo"},
		toolspec.Spec{Name: "stream", Stream: &toolspec.StreamPolicy{MaxChunks: 16, MaxChunkBytes: 1024, MaxSourceBytes: 16 << 10, MaxReleasedBytes: 16 << 10}},
		toolspec.Spec{Name: "hold", Description: "never answers", Cancellable: true},
		toolspec.Spec{Name: "sleep", Description: "waits to be cancelled", Cancellable: true})
}

// newLoopEnv serves the API over a real hostloop.Loop driven by a memWorker.
func newLoopEnv(t *testing.T) *apiEnv {
	e, _ := newLimitedLoopEnv(t, hostloop.Limits{})
	return e
}

// newLimitedLoopEnv is newLoopEnv under limits, with the loop, for tests
// that stop it.
func newLimitedLoopEnv(t *testing.T, limits hostloop.Limits) (*apiEnv, *hostloop.Loop) {
	t.Helper()
	events := httpapi.NewBroadcaster(httpapi.BroadcasterConfig{})
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: startMemWorker(t),
		HostID:    "h1",
		Catalog:   catalog(t),
		Observer:  httpapi.Tee(events),
		Limits:    limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(loop.Stop)
	srv := httptest.NewServer(httpapi.New(loop, httpapi.Config{Token: testToken, Events: events}))
	t.Cleanup(srv.Close)
	t.Cleanup(events.Close)
	return &apiEnv{srv: srv, events: events}, loop
}

// A busy host answers 429 host_busy and a stopped one 503, both with
// Retry-After; a limit above the host's maximum is 422 limit_too_high.
func TestLoopRefusalsSayWhenToRetry(t *testing.T) {
	e, loop := newLimitedLoopEnv(t, hostloop.Limits{MaxSuspendedSessions: 1, MaxToolCallBudget: 10})
	submitSession(t, e, `await tool.start("hold", "x")`)
	for _, tc := range []struct {
		name, body, code string
		status           int
		retry            bool
	}{
		{"busy", `{"source":"await tool.start(\"hold\", \"y\")"}`, "host_busy", http.StatusTooManyRequests, true},
		{"limit", `{"source":"1","tool_call_budget":11}`, "limit_too_high", http.StatusUnprocessableEntity, false},
	} {
		resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, tc.body)
		got := decodeBody[errorResponse](t, resp)
		if resp.StatusCode != tc.status || got.Error.Code != tc.code || (resp.Header.Get("Retry-After") != "") != tc.retry {
			t.Errorf("%s: status %d code %q Retry-After %q", tc.name, resp.StatusCode, got.Error.Code, resp.Header.Get("Retry-After"))
		}
	}
	loop.Stop()
	resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, `{"source":"1"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stopped host: status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func submitSession(t *testing.T, e *apiEnv, source string) apiwire.Session {
	t.Helper()
	body, _ := json.Marshal(apiwire.SubmitRequest{Source: source})
	resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, string(body))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: status %d: %+v", resp.StatusCode, decodeBody[errorResponse](t, resp))
	}
	return decodeBody[apiwire.Session](t, resp)
}

func TestLoopStreamsChunksThenCompletes(t *testing.T) {
	e := newLoopEnv(t)
	s := submitSession(t, e, `let out = await tool.start("stream", "go"); assert(out == "streamed")`)
	got := collect(openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/"+s.ID+"/events"))
	var texts []string
	var last sseEvent
	for _, ev := range got {
		switch ev.name {
		case "chunk":
			var c apiwire.Chunk
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, c.Text)
		case "state":
			last = ev
		}
	}
	if strings.Join(texts, ",") != "part-1,part-2,part-3" {
		t.Fatalf("chunks %v (events %s)", texts, eventNames(got))
	}
	if got[len(got)-1] != last || !strings.Contains(last.data, `"state":"completed"`) {
		t.Fatalf("last event %+v", got[len(got)-1])
	}
	final := decodeBody[apiwire.Session](t, e.do(t, "GET", "/v1/sessions/"+s.ID, testToken, ""))
	if final.State != "completed" || len(final.Operations) != 0 {
		t.Fatalf("final %+v", final)
	}
	audit := decodeBody[apiwire.AuditLog](t, e.do(t, "GET", "/v1/sessions/"+s.ID+"/audit", testToken, ""))
	if len(audit.Events) == 0 {
		t.Fatal("empty audit log")
	}
}

func TestLoopCancelEndsSession(t *testing.T) {
	e := newLoopEnv(t)
	s := submitSession(t, e, `await tool.start("sleep", "forever")`)
	if len(s.Operations) != 1 || s.Operations[0].Tool != "sleep" {
		t.Fatalf("operations %+v", s.Operations)
	}
	ops := decodeBody[apiwire.OperationList](t, e.do(t, "GET", "/v1/operations", testToken, ""))
	if len(ops.Operations) != 1 || ops.Operations[0].Session != s.ID {
		t.Fatalf("live operations %+v", ops)
	}
	ch := openEvents(t, e.srv.Client(), e.srv.URL+"/v1/sessions/"+s.ID+"/events")
	resp := e.do(t, http.MethodPost, "/v1/sessions/"+s.ID+"/operations/"+s.Operations[0].ID+"/cancel", testToken, "")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: status %d: %+v", resp.StatusCode, decodeBody[errorResponse](t, resp))
	}
	got := collect(ch)
	if last := got[len(got)-1]; last.name != "state" || !strings.Contains(last.data, `"state":"failed"`) {
		t.Fatalf("last event %+v", last)
	}
	// Each change of the operation came as an operation event of its own,
	// the last one its terminal state, before the session's end.
	var states []string
	for _, ev := range got {
		if ev.name == "operation" {
			var op apiwire.Operation
			if err := json.Unmarshal([]byte(ev.data), &op); err != nil {
				t.Fatal(err)
			}
			states = append(states, op.State)
		}
	}
	if got, want := strings.Join(states, ","), "cancellation_requested,cancelled"; !strings.HasSuffix(got, want) {
		t.Fatalf("operation events %q, want them to end %s", states, want)
	}
}

// A second cancel of an operation whose cancellation is in progress is
// 409 cancellation_already_requested from the real loop, as docs/api.md
// says, not a second 202.
func TestLoopSecondCancelConflicts(t *testing.T) {
	e := newLoopEnv(t)
	s := submitSession(t, e, `await tool.start("hold", "x")`)
	path := "/v1/sessions/" + s.ID + "/operations/" + s.Operations[0].ID + "/cancel"
	if resp := e.do(t, http.MethodPost, path, testToken, ""); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first cancel: status %d", resp.StatusCode)
	}
	resp := e.do(t, http.MethodPost, path, testToken, "")
	if got := decodeBody[errorResponse](t, resp); resp.StatusCode != http.StatusConflict || got.Error.Code != "cancellation_already_requested" {
		t.Fatalf("second cancel: status %d error %+v", resp.StatusCode, got.Error)
	}
}

func TestLoopErrors(t *testing.T) {
	e := newLoopEnv(t)
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantCode   string
	}{
		{"unknown session", "GET", "/v1/sessions/s-nope", 404, "unknown_session"},
		{"unknown session cancel", "POST", "/v1/sessions/s-nope/operations/op-1/cancel", 404, "unknown_session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(t, tt.method, tt.path, testToken, "")
			if got := decodeBody[errorResponse](t, resp); resp.StatusCode != tt.wantStatus || got.Error.Code != tt.wantCode {
				t.Fatalf("status %d error %+v", resp.StatusCode, got.Error)
			}
		})
	}
}

// A script naming a tool the catalog lacks fails when it runs: the session
// is created and reports the failure.
func TestLoopUnknownToolIsRefused(t *testing.T) {
	e := newLoopEnv(t)
	body, _ := json.Marshal(apiwire.SubmitRequest{Source: `await tool.start("nope", "x")`})
	resp := e.do(t, http.MethodPost, "/v1/sessions", testToken, string(body))
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", resp.StatusCode)
	}
	got := decodeBody[errorResponse](t, resp)
	if got.Error.Code != "unknown_tool" || !strings.Contains(got.Error.Message, "nope") {
		t.Fatalf("error %+v", got.Error)
	}
}
