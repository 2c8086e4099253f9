package apiclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
)

func newClient(t *testing.T, token string) (*apiclient.Client, *apitest.Server) {
	t.Helper()
	srv := apitest.Start(t)
	if token == "" {
		token = srv.Token
	}
	c, err := apiclient.New(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// collect reads a stream to its end and returns its events and the error
// that ended it.
func collect(t *testing.T, s *apiclient.EventStream) ([]apiclient.Event, error) {
	t.Helper()
	defer s.Close()
	var out []apiclient.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestStreamChunksThenCompletes(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, "")
	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `let out = await tool.start("demo.stream", "3"); out`})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != apiclient.StateSuspended || len(s.Operations) != 1 {
		t.Fatalf("submitted %+v", s)
	}
	stream, err := c.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	events, err := collect(t, stream)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v, want io.EOF", err)
	}
	var texts []string
	audits := 0
	for _, ev := range events {
		switch ev.Kind {
		case apiclient.EventChunk:
			if ev.Chunk.Tool != "demo.stream" || ev.Chunk.Operation != "op-1" {
				t.Errorf("chunk %+v", ev.Chunk)
			}
			texts = append(texts, ev.Chunk.Text)
		case apiclient.EventAudit:
			audits++
		}
		if len(ev.Data) == 0 {
			t.Errorf("%s event without raw data", ev.Kind)
		}
	}
	if got, want := strings.Join(texts, "|"), "chunk 1/3|chunk 2/3 token=[redacted]|chunk 3/3"; got != want {
		t.Errorf("chunks %q, want %q", got, want)
	}
	if audits == 0 {
		t.Error("no audit events")
	}
	last := events[len(events)-1]
	if !last.Terminal() || last.State.State != apiclient.StateCompleted || last.State.Value == nil || *last.State.Value != "streamed 3 chunks" {
		t.Fatalf("last event %+v", last)
	}

	final, err := c.Session(ctx, s.ID)
	if err != nil || final.State != apiclient.StateCompleted || len(final.Operations) != 0 {
		t.Fatalf("session %+v, %v", final, err)
	}
	log, err := c.Audit(ctx, s.ID)
	if err != nil || log.Session != s.ID || len(log.Events) == 0 || log.Events[0].Outcome != "started" {
		t.Fatalf("audit %+v, %v", log, err)
	}
}

func TestRetriesShowInAudit(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, "")
	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.flaky", "2")`})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, stream); !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v", err)
	}
	log, err := c.Audit(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	retries := 0
	for _, e := range log.Events {
		if e.Outcome == "retry_scheduled" {
			retries++
		}
	}
	if retries != 2 {
		t.Fatalf("%d retries in %+v, want 2", retries, log.Events)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(ctx context.Context, c *apiclient.Client, op apiclient.Operation) (apiclient.CancelResponse, error)
	}{
		{"by session and operation", func(ctx context.Context, c *apiclient.Client, op apiclient.Operation) (apiclient.CancelResponse, error) {
			return c.Cancel(ctx, op.Session, op.ID)
		}},
		{"by request id", func(ctx context.Context, c *apiclient.Client, op apiclient.Operation) (apiclient.CancelResponse, error) {
			return c.CancelByRequest(ctx, op.RequestID)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := newClient(t, "")
			s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "forever")`})
			if err != nil {
				t.Fatal(err)
			}
			ops, err := c.Operations(ctx)
			if err != nil || len(ops) != 1 || ops[0].Session != s.ID || ops[0].Tool != "demo.sleep" || ops[0].Attempt != 1 {
				t.Fatalf("operations %+v, %v", ops, err)
			}
			stream, err := c.Events(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tt.cancel(ctx, c, ops[0])
			if err != nil {
				t.Fatal(err)
			}
			if resp != (apiclient.CancelResponse{Session: s.ID, Operation: "op-1", Cancellation: "requested"}) {
				t.Fatalf("cancel answered %+v", resp)
			}
			// The pool acknowledges at once, so a second request finds
			// the cancel in progress or the operation gone.
			if _, err := tt.cancel(ctx, c, ops[0]); !errors.Is(err, apiclient.ErrConflict) && !errors.Is(err, apiclient.ErrUnknownOperation) {
				t.Fatalf("second cancel: %v, want a conflict or an unknown operation", err)
			}
			events, err := collect(t, stream)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("stream ended with %v", err)
			}
			if last := events[len(events)-1]; last.State.State != apiclient.StateFailed {
				t.Fatalf("last event %+v", last)
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	ctx := context.Background()
	c, srv := newClient(t, "")
	wrong, _ := apiclient.New(srv.URL, "wrong")
	none, _ := apiclient.New(srv.URL, "")
	tests := []struct {
		name     string
		call     func() error
		wantErr  error
		wantCode string
	}{
		{"wrong token", func() error { _, err := wrong.Operations(ctx); return err }, apiclient.ErrUnauthorized, "invalid_token"},
		{"no token", func() error { _, err := none.Session(ctx, "s-1"); return err }, apiclient.ErrUnauthorized, "missing_token"},
		{"wrong token on events", func() error { _, err := wrong.Events(ctx, "s-1"); return err }, apiclient.ErrUnauthorized, "invalid_token"},
		{"unknown session", func() error { _, err := c.Session(ctx, "s-nope"); return err }, apiclient.ErrUnknownSession, "unknown_session"},
		{"unknown session is not found", func() error { _, err := c.Audit(ctx, "s-nope"); return err }, apiclient.ErrNotFound, "unknown_session"},
		{"unknown session events", func() error { _, err := c.Events(ctx, "s-nope"); return err }, apiclient.ErrUnknownSession, "unknown_session"},
		{"bad operation id", func() error { _, err := c.Cancel(ctx, "s-nope", "x"); return err }, apiclient.ErrBadRequest, "invalid_operation_id"},
		{"unknown request", func() error { _, err := c.CancelByRequest(ctx, "r-nope"); return err }, apiclient.ErrUnknownOperation, "unknown_operation"},
		{"empty source", func() error { _, err := c.Submit(ctx, apiclient.SubmitRequest{}); return err }, apiclient.ErrBadRequest, "invalid_field"},
		{"budget too high", func() error {
			_, err := c.Submit(ctx, apiclient.SubmitRequest{Source: "1", ExecutionBudgetMS: 1 << 40})
			return err
		}, apiclient.ErrRejected, "limit_too_high"},
		{"script too large", func() error {
			_, err := c.Submit(ctx, apiclient.SubmitRequest{Source: strings.Repeat("1;", 200<<10)})
			return err
		}, apiclient.ErrTooLarge, "script_too_large"},
		{"unknown tool", func() error {
			_, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("nope", "x")`})
			return err
		}, apiclient.ErrRejected, "unknown_tool"},
		{"slash in an id stays in its segment", func() error { _, err := c.Session(ctx, "../operations"); return err }, apiclient.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			var apiErr *apiclient.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %T is not *apiclient.Error", err)
			}
			if tt.wantCode != "" && apiErr.Code != tt.wantCode {
				t.Errorf("code %q, want %q", apiErr.Code, tt.wantCode)
			}
			if apiErr.Message == "" || !strings.Contains(err.Error(), apiErr.Message) {
				t.Errorf("error text %q lacks the host's message %q", err, apiErr.Message)
			}
		})
	}
}

// A script that fails while it runs is a session, not an error.
func TestFailingScriptIsASession(t *testing.T) {
	c, _ := newClient(t, "")
	s, err := c.Submit(context.Background(), apiclient.SubmitRequest{Source: `await tool.start("demo.echo", "x"); throw new Error("boom")`})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != apiclient.StateSuspended {
		t.Fatalf("submitted %+v", s)
	}
	stream, err := c.Events(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	events, err := collect(t, stream)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v", err)
	}
	if s = events[len(events)-1].State; s.State != apiclient.StateFailed || !s.Terminal() || !strings.Contains(s.Error, "boom") {
		t.Fatalf("session %+v", s)
	}
}

func TestEventsHonourContext(t *testing.T) {
	c, _ := newClient(t, "")
	s, err := c.Submit(context.Background(), apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "forever")`})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	// The backlog arrives first; once it is read the stream waits, and
	// cancelling must end that wait.
	for {
		ev, err := stream.Next()
		if err != nil {
			t.Fatalf("before cancel: %v", err)
		}
		if ev.Kind == apiclient.EventState {
			break
		}
	}
	cancel()
	for {
		_, err := stream.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, want context.Canceled", err)
		}
		break
	}
}

func TestNonAPIErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\n  <body>bad gateway</body>\n</html>")
	}))
	defer srv.Close()
	c, _ := apiclient.New(srv.URL, "t")
	_, err := c.Operations(context.Background())
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway || apiErr.Code != "" || !errors.Is(err, apiclient.ErrServer) {
		t.Fatalf("error %#v", err)
	}
	if strings.Contains(apiErr.Message, "\n") || !strings.Contains(apiErr.Message, "bad gateway") {
		t.Errorf("message %q", apiErr.Message)
	}
}

func TestBadResponse(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
		call func(c *apiclient.Client) error
	}{
		{"json that is not the object", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "[1,2") },
			func(c *apiclient.Client) error { _, err := c.Operations(context.Background()); return err }},
		{"events that are not a stream", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") },
			func(c *apiclient.Client) error { _, err := c.Events(context.Background(), "s-1"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			c, _ := apiclient.New(srv.URL, "t")
			if err := tt.call(c); !errors.Is(err, apiclient.ErrBadResponse) {
				t.Fatalf("error %v, want ErrBadResponse", err)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := apiclient.New(url, "t")
	if _, err := c.Operations(context.Background()); !errors.Is(err, apiclient.ErrUnreachable) {
		t.Fatalf("error %v, want ErrUnreachable", err)
	}
}

func TestNewBadURL(t *testing.T) {
	tests := []string{"", "127.0.0.1:8080", "ftp://h:1", "http://", "http://h:1/?q=1", "http://h:1/#f", "http://[::1"}
	for _, u := range tests {
		t.Run(u, func(t *testing.T) {
			if _, err := apiclient.New(u, "t"); !errors.Is(err, apiclient.ErrBadURL) {
				t.Fatalf("New(%q): %v, want ErrBadURL", u, err)
			}
		})
	}
}

func TestBaseURLKeepsPrefix(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		io.WriteString(w, `{"operations":[]}`)
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL+"/splash/", "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Operations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got != "/splash/v1/operations" {
		t.Fatalf("path %q", got)
	}
}

// TestEventStreamReturnsItsConnection follows a session to its terminal
// state and checks the next request reuses the stream's connection
// rather than opening one: a client following many sessions would
// otherwise open a connection for each. Closing the body right after the
// terminal event kept the connection only when the response's end had
// already arrived with it, so this failed some of the time (-count=30).
func TestEventStreamReturnsItsConnection(t *testing.T) {
	srv := apitest.Start(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c, err := apiclient.New(srv.URL, srv.Token, apiclient.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.Submit(ctx, apiclient.SubmitRequest{Source: `await tool.start("demo.echo", "a")`})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Events(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, stream); !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v, want io.EOF after the terminal state", err)
	}
	var reused bool
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	if _, err := c.Session(traced, s.ID); err != nil {
		t.Fatal(err)
	}
	if !reused {
		t.Error("the request after a finished event stream opened a new connection")
	}
}
