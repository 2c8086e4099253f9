package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// invokeCtx runs a command in-process like invoke, with ctx, writing to
// buffers the test may read while it runs.
func invokeCtx(ctx context.Context, env map[string]string, stdout, stderr *syncBuffer, args ...string) int {
	a := &app{stdout: stdout, stderr: stderr, lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	return run(ctx, args, a)
}

// apiEnv points the client commands at srv.
func apiEnv(srv *apitest.Server) map[string]string {
	return map[string]string{envAPIURL: srv.URL, envAPIToken: srv.Token}
}

func testClient(t *testing.T, srv *apitest.Server) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunStreamsChunksThenResult(t *testing.T) {
	srv := apitest.Start(t)
	script := filepath.Join(t.TempDir(), "stream.js")
	if err := os.WriteFile(script, []byte(`let out = await tool.start("demo.stream", "3"); out`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := invoke(t, apiEnv(srv), "run", script)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := "[demo.stream] chunk 1/3\n[demo.stream] chunk 2/3 token=[redacted]\n[demo.stream] chunk 3/3\nstreamed 3 chunks\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	// Not a terminal: plain lines, no escape codes.
	if !strings.Contains(stderr, "op-1 demo.stream: started\nop-1 demo.stream attempt 1: claimed\nop-1 demo.stream attempt 1: succeeded\n") || strings.Contains(stderr, "\x1b") {
		t.Errorf("stderr:\n%q", stderr)
	}
}

func TestRun(t *testing.T) {
	srv := apitest.Start(t)
	tests := []struct {
		name       string
		env        map[string]string // replaces apiEnv(srv) when set
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "awaits a tool", args: []string{"-e", `let out = await tool.start("demo.upper", "hi"); out`}, wantStdout: "HI\n"},
		{name: "completes without waiting", args: []string{"-e", `return 1 + 1`}, wantStdout: "2\n"},
		{name: "retries show as plain lines", args: []string{"-e", `let out = await tool.start("demo.flaky", "1"); out`},
			wantStdout: "ok after 1\n", wantStderr: "op-1 demo.flaky attempt 2: retry scheduled (transient)\nop-1 demo.flaky attempt 2: succeeded\n"},
		{name: "fails after waiting", args: []string{"-e", `await tool.start("demo.echo", "x"); throw new Error("boom")`},
			wantCode: 1, wantStderr: "splash run: script failed: Error: boom"},
		{name: "fails at once", args: []string{"-e", `throw new Error("early")`}, wantCode: 1, wantStderr: "script failed: Error: early"},
		{name: "unknown tool", args: []string{"-e", `await tool.start("nope", "x")`}, wantCode: 1, wantStderr: "unknown_tool"},
		{name: "missing file", args: []string{filepath.Join(t.TempDir(), "none.js")}, wantCode: 1, wantStderr: "read script"},
		{name: "wrong token", env: map[string]string{envAPIURL: srv.URL, envAPIToken: "wrong"}, args: []string{"-e", "1"},
			wantCode: 1, wantStderr: "the host refused the API token: check --api-token or SPLASH_API_TOKEN"},
		{name: "no token", env: map[string]string{envAPIURL: srv.URL}, args: []string{"-e", "1"},
			wantCode: 1, wantStderr: "no API token given: set --api-token or SPLASH_API_TOKEN"},
		{name: "bad api url", env: map[string]string{envAPIURL: "127.0.0.1:8080"}, args: []string{"-e", "1"},
			wantCode: 2, wantStderr: "--api-url"},
		{name: "more in flight than the default pending limit", args: []string{"-e", inFlight300},
			wantCode: 1, wantStderr: "pending operation limit reached"},
		{name: "--pending asks for more", args: []string{"--pending", "300", "-e", inFlight300}, wantStdout: "300\n"},
		{name: "SPLASH_RUN_PENDING asks for more", env: withEnv(apiEnv(srv), "SPLASH_RUN_PENDING", "300"), args: []string{"-e", inFlight300}, wantStdout: "300\n"},
		{name: "--budget bounds the calls", args: []string{"--budget", "2", "-e", `for (let i = 0; i < 3; i++) await tool.start("demo.echo", "x")`},
			wantCode: 1, wantStderr: "budget exhausted"},
		{name: "SPLASH_RUN_BUDGET bounds the calls", env: withEnv(apiEnv(srv), "SPLASH_RUN_BUDGET", "2"), args: []string{"-e", `for (let i = 0; i < 3; i++) await tool.start("demo.echo", "x")`},
			wantCode: 1, wantStderr: "budget exhausted"},
		{name: "--pending above the host's maximum", args: []string{"--pending", "1000000", "-e", "1"}, wantCode: 1, wantStderr: "limit_too_high"},
		{name: "negative --budget", args: []string{"--budget", "-1", "-e", "1"}, wantCode: 2, wantStderr: "--budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = apiEnv(srv)
			}
			code, stdout, stderr := invoke(t, env, append([]string{"run"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if tt.wantCode == 0 && stdout != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout, tt.wantStdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

// inFlight300 holds 300 calls in flight at once, above the host's
// default pending limit of 256.
const inFlight300 = `const ps = []; for (let i = 0; i < 300; i++) ps.push(tool.start("demo.echo", "x")); (await Promise.all(ps)).length`

// withEnv returns env with k set to v.
func withEnv(env map[string]string, k, v string) map[string]string {
	env[k] = v
	return env
}

func TestRunUnreachable(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	code, _, stderr := invoke(t, map[string]string{envAPIURL: closed.URL, envAPIToken: "t"}, "run", "-e", "1")
	if code != 1 || !strings.Contains(stderr, "host unreachable") || !strings.Contains(stderr, closed.URL) {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
}

func TestRunJSON(t *testing.T) {
	srv := apitest.Start(t)
	code, stdout, stderr := invoke(t, apiEnv(srv), "run", "--json", "-e", `let out = await tool.start("demo.stream", "2"); out`)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var kinds []string
	var chunks []string
	var last apiclient.Session
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		kinds = append(kinds, ev.Event)
		switch ev.Event {
		case "chunk":
			var c apiclient.Chunk
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c.Text)
		case "state", "submitted":
			last = apiclient.Session{}
			if err := json.Unmarshal(ev.Data, &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kinds[0] != "submitted" || kinds[len(kinds)-1] != "state" {
		t.Errorf("event kinds %v", kinds)
	}
	if strings.Join(chunks, "|") != "chunk 1/2 token=[redacted]|chunk 2/2" {
		t.Errorf("chunks %q", chunks)
	}
	if last.State != apiclient.StateCompleted || *last.Value != "streamed 2 chunks" {
		t.Errorf("last state %+v", last)
	}
	if stderr != "" {
		t.Errorf("stderr with --json: %q", stderr)
	}
}

// A stream that ends before the terminal state (here: every stream lags
// at once) leaves the command polling the session.
func TestRunFallsBackToPolling(t *testing.T) {
	defer func(d time.Duration) { pollInterval = d }(pollInterval)
	pollInterval = 5 * time.Millisecond
	srv := apitest.Start(t)
	api := srv.HTTP.Config.Handler
	lagging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: lagged\ndata: {\"message\":\"too slow\"}\n\n")
			return
		}
		api.ServeHTTP(w, r)
	}))
	defer lagging.Close()
	code, stdout, stderr := invoke(t, map[string]string{envAPIURL: lagging.URL, envAPIToken: srv.Token},
		"run", "-e", `let out = await tool.start("demo.sleep", "30ms"); out`)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if stdout != "slept 30ms\n" {
		t.Errorf("stdout %q", stdout)
	}
	for _, want := range []string{"the host dropped the event stream: too slow", "polling session"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	srv := apitest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := new(syncBuffer), new(syncBuffer)
	done := make(chan int, 1)
	go func() {
		done <- invokeCtx(ctx, apiEnv(srv), stdout, stderr, "run", "-e", `await tool.start("demo.sleep", "forever")`)
	}()
	// The audit line comes from the event stream: the command follows.
	testwait.Until(t, 0, "run to follow the session", func() bool {
		return strings.Contains(stderr.String(), "demo.sleep attempt 1: claimed")
	})
	cancel()
	code := testwait.Receive(t, 0, "run to return", done)
	if code != 1 || !strings.Contains(stderr.String(), "interrupted: session s-") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
}
