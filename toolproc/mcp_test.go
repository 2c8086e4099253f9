package toolproc_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolproc"
)

// mcpConfig runs this test binary as an MCP server.
func mcpConfig(obs toolproc.Observer) toolproc.Config {
	cfg := testConfig(obs)
	cfg.Tool = "test.mcp"
	cfg.Env = []string{testMCPEnv + "=1"}
	cfg.Protocol = toolproc.ProtocolMCP
	cfg.CancelGrace = 5 * time.Second
	return cfg
}

// mcpRequest calls the server's tool with JSON arguments.
func mcpRequest(tool, args string) toolproc.Request {
	inv := invoke("")
	inv.Tool = "test." + tool
	inv.Input = protocol.JSONPayload([]byte(args))
	return toolproc.Request{Invoke: inv, ServerTool: tool}
}

func wantJSON(t *testing.T, o toolproc.Outcome, want string) {
	t.Helper()
	if o.Kind != toolproc.Answered || o.Result.Status != protocol.ResultSucceeded || o.Result.Payload == nil || string(o.Result.Payload.JSON) != want {
		t.Fatalf("outcome %v %+v (err %v), want JSON %s", o.Kind, o.Result, o.Err, want)
	}
}

func wantFailed(t *testing.T, o toolproc.Outcome, substr string) {
	t.Helper()
	if o.Kind != toolproc.Answered || o.Result.Status != protocol.ResultFailed || !strings.Contains(o.Result.Error, substr) {
		t.Fatalf("outcome %v %+v (err %v), want a failure with %q", o.Kind, o.Result, o.Err, substr)
	}
}

func TestMCPCalls(t *testing.T) {
	var rec recorder
	s := startSupervisor(t, mcpConfig(&rec))
	tests := []struct {
		tool, args string
		want       string // JSON answered; "" for a failure
		wantErr    string
	}{
		{"echo", `{"text":"hi"}`, `"hi"`, ""},
		{"echo", `{"text":"[1,2]"}`, `[1,2]`, ""},
		{"sum", `{"numbers":[1,2,3.5]}`, `{"sum":6.5}`, ""},
		{"fail", `{}`, "", "kaput"},
		{"nope", `{}`, "", `offers no tool "nope"`},
		{"echo", `[1]`, "", "must be a JSON object"},
		{"sum", `{"numbers":"x"}`, "", "validating"},
	}
	for _, tt := range tests {
		o := call(t, s, mcpRequest(tt.tool, tt.args))
		if tt.want != "" {
			wantJSON(t, o, tt.want)
		} else {
			wantFailed(t, o, tt.wantErr)
		}
	}
	if c := rec.snapshot(); c.started != 1 || c.restarted != 0 {
		t.Fatalf("counts %+v: every call should share one server", c)
	}
}

func TestMCPProgressAsChunks(t *testing.T) {
	s := startSupervisor(t, mcpConfig(nil))
	var mu sync.Mutex
	var chunks []string
	req := mcpRequest("steps", `{"n":4}`)
	req.Chunk = func(text string) error {
		mu.Lock()
		defer mu.Unlock()
		chunks = append(chunks, text)
		return nil
	}
	wantJSON(t, call(t, s, req), `"done"`)
	mu.Lock()
	defer mu.Unlock()
	// Every chunk sent before the result is released before it.
	if want := []string{"step 1/4", "step 2/4", "step 3/4", "step 4/4"}; !slices.Equal(chunks, want) {
		t.Fatalf("chunks %q, want %q", chunks, want)
	}
}

// TestMCPCancel: a cancellation reaches the server as
// notifications/cancelled, and the call still ends by what the server
// answers, never as acknowledged.
func TestMCPCancel(t *testing.T) {
	s := startSupervisor(t, mcpConfig(nil))
	req := mcpRequest("sleep", `{"ms":60000}`)
	cancel := make(chan struct{})
	req.Cancel = cancel
	sleeping := make(chan struct{}, 1)
	req.Chunk = func(string) error { sleeping <- struct{}{}; return nil }
	done := make(chan toolproc.Outcome, 1)
	go func() { done <- call(t, s, req) }()
	<-sleeping // the server holds the call
	close(cancel)
	o := <-done
	if o.Kind == toolproc.CancelAcknowledged {
		t.Fatal("an MCP call was confirmed cancelled")
	}
	wantJSON(t, o, `"saw cancel"`)
}

// TestMCPCancelBeforeTheRequest: a cancellation that comes before the
// request is written follows it onto the wire. The server reads the two
// together, so it may see the cancellation before its handler starts and
// refuse the call instead ("context canceled"); either way the call ends
// by the server's answer well before the minute it asked to sleep.
func TestMCPCancelBeforeTheRequest(t *testing.T) {
	s := startSupervisor(t, mcpConfig(nil))
	req := mcpRequest("sleep", `{"ms":60000}`)
	cancel := make(chan struct{})
	close(cancel)
	req.Cancel = cancel
	req.Chunk = func(string) error { return nil }
	o := call(t, s, req)
	if o.Kind == toolproc.Answered && o.Result.Status == protocol.ResultFailed {
		wantFailed(t, o, "context canceled")
		return
	}
	wantJSON(t, o, `"saw cancel"`)
}

// TestMCPCancelUnanswered: a server that ignores the cancellation is
// stopped after the grace, and the call is lost, Stopped: indeterminate.
func TestMCPCancelUnanswered(t *testing.T) {
	var rec recorder
	cfg := mcpConfig(&rec)
	cfg.CancelGrace = 200 * time.Millisecond
	s := startSupervisor(t, cfg)
	wantJSON(t, call(t, s, mcpRequest("echo", `{"text":"up"}`)), `"up"`)
	req := mcpRequest("hang", `{}`)
	cancel := make(chan struct{})
	req.Cancel = cancel
	req.Chunk = func(string) error { close(cancel); return nil } // once the server holds it
	o := call(t, s, req)
	if o.Kind != toolproc.Lost || !o.Stopped || !errors.Is(o.Err, toolproc.ErrCancelUnanswered) {
		t.Fatalf("outcome %v stopped=%v err=%v", o.Kind, o.Stopped, o.Err)
	}
	if c := rec.snapshot(); c.poisoned[toolproc.ReasonCancelUnanswered] != 1 {
		t.Fatalf("poisoned %v", c.poisoned)
	}
	// The next call gets a fresh server.
	wantJSON(t, call(t, s, mcpRequest("echo", `{"text":"again"}`)), `"again"`)
}

func TestMCPCrashedServerRestarted(t *testing.T) {
	var rec recorder
	s := startSupervisor(t, mcpConfig(&rec))
	o := call(t, s, mcpRequest("crash", `{}`))
	if o.Kind != toolproc.Lost || o.Watchdog || o.Stopped {
		t.Fatalf("crash: outcome %v %+v", o.Kind, o)
	}
	wantJSON(t, call(t, s, mcpRequest("echo", `{"text":"back"}`)), `"back"`)
	if c := rec.snapshot(); c.started != 2 || c.restarted != 1 {
		t.Fatalf("counts %+v, want a restart", c)
	}
}

func TestMCPHungServerStoppedByWatchdog(t *testing.T) {
	var rec recorder
	s := startSupervisor(t, mcpConfig(&rec))
	req := mcpRequest("hang", `{}`)
	req.Deadline = time.Now().Add(300 * time.Millisecond)
	o := call(t, s, req)
	if o.Kind != toolproc.Lost || !o.Watchdog || !errors.Is(o.Err, toolproc.ErrWatchdog) {
		t.Fatalf("outcome %v watchdog=%v err=%v", o.Kind, o.Watchdog, o.Err)
	}
	if c := rec.snapshot(); c.watched != 1 {
		t.Fatalf("counts %+v", c)
	}
	wantJSON(t, call(t, s, mcpRequest("echo", `{"text":"after"}`)), `"after"`)
}

func TestMCPToolListChanged(t *testing.T) {
	s := startSupervisor(t, mcpConfig(nil))
	wantFailed(t, call(t, s, mcpRequest("late", `{}`)), "offers no tool")
	wantJSON(t, call(t, s, mcpRequest("grow", `{}`)), `"grown"`)
	// The notification may trail the result; the tool shows up once it
	// is read.
	testwait.Until(t, 0, "the late tool", func() bool {
		o := call(t, s, mcpRequest("late", `{}`))
		return o.Kind == toolproc.Answered && o.Result.Status == protocol.ResultSucceeded
	})
}

func TestMCPServerThatDoesNotSpeakMCP(t *testing.T) {
	cfg := mcpConfig(nil)
	cfg.Command = []string{"sh", "-c", "echo not json; sleep 60"}
	cfg.Env = nil
	s := startSupervisor(t, cfg)
	o := call(t, s, mcpRequest("echo", `{}`))
	if o.Kind != toolproc.NotStarted || !errors.Is(o.Err, toolproc.ErrStartFailed) {
		t.Fatalf("outcome %v err=%v", o.Kind, o.Err)
	}
}
