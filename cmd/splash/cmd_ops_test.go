package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/apiclient/apitest"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// submitSleeper starts a session waiting on demo.sleep until cancelled.
func submitSleeper(t *testing.T, srv *apitest.Server) apiclient.Session {
	t.Helper()
	s, err := testClient(t, srv).Submit(context.Background(), apiclient.SubmitRequest{Source: `await tool.start("demo.sleep", "forever")`})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOps(t *testing.T) {
	srv := apitest.Start(t)
	code, stdout, stderr := invoke(t, apiEnv(srv), "ops")
	if code != 0 || stdout != "no live operations\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	s := submitSleeper(t, srv)
	code, stdout, stderr = invoke(t, apiEnv(srv), "ops")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout:\n%s", stdout)
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "SESSION OPERATION REQUEST TOOL STATE ATTEMPT WORKER AGE" {
		t.Errorf("header %q", lines[0])
	}
	row := strings.Fields(lines[1])
	if len(row) != 8 || row[0] != s.ID || row[1] != "op-1" || row[2] != s.Operations[0].RequestID || row[3] != "demo.sleep" || row[5] != "1" {
		t.Errorf("row %q", lines[1])
	}
}

func TestOpsTable(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ops := []apiclient.Operation{
		{Session: "s-1", ID: "op-1", RequestID: "h1-1", Tool: "demo.sleep", State: "claimed", Attempt: 1, Worker: "w-a", Since: now.Add(-2300 * time.Millisecond)},
		{Session: "s-22", ID: "op-12", RequestID: "h1-2", Tool: "demo.flaky", State: "cancellation_requested", Attempt: 3, Since: now.Add(-90 * time.Second), CancelDisposition: "unsupported"},
	}
	var buf bytes.Buffer
	if err := writeOpsTable(&buf, ops, now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"SESSION  OPERATION  REQUEST  TOOL        STATE                                 ATTEMPT  WORKER  AGE\n" +
		"s-1      op-1       h1-1     demo.sleep  claimed                               1        w-a     2.3s\n" +
		"s-22     op-12      h1-2     demo.flaky  cancellation_requested (unsupported)  3        -       1m30s\n"
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestOpsWatch(t *testing.T) {
	srv := apitest.Start(t)
	submitSleeper(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := new(syncBuffer), new(syncBuffer)
	done := make(chan int, 1)
	go func() {
		done <- invokeCtx(ctx, apiEnv(srv), stdout, stderr, "ops", "--watch", "--interval", "5ms")
	}()
	testwait.Until(t, 0, "three frames", func() bool { return strings.Count(stdout.String(), "SESSION") >= 3 })
	cancel()
	if code := testwait.Receive(t, 0, "ops --watch to return", done); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	out := stdout.String()
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape codes on a pipe:\n%q", out)
	}
	frames := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(frames) < 3 {
		t.Fatalf("%d frames:\n%s", len(frames), out)
	}
	for i, f := range frames {
		if !strings.HasPrefix(f, "SESSION") || !strings.Contains(f, "demo.sleep") {
			t.Errorf("frame %d:\n%s", i, f)
		}
	}
}

func TestOpsErrors(t *testing.T) {
	srv := apitest.Start(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"wrong token", []string{"ops"}, 1, "the host refused the API token"},
		{"wrong token ends a watch", []string{"ops", "--watch", "--interval", "5ms"}, 1, "invalid_token"},
		{"zero interval", []string{"ops", "--watch", "--interval", "0s"}, 2, "--interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := invoke(t, map[string]string{envAPIURL: srv.URL, envAPIToken: "wrong"}, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", code, tt.wantCode, tt.wantStderr, stderr)
			}
		})
	}
}

// TestOpsTellsQueuedFromClaimed runs dev with one worker, whose demo.sleep
// runs 64 calls at once, and starts 150: `splash ops` must show the ones
// still in the stream as queued, not as claimed, and as many as the
// stream's consumer holds undelivered.
func TestOpsTellsQueuedFromClaimed(t *testing.T) {
	const token = "test-token"
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	c, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Submit(context.Background(), apiclient.SubmitRequest{MaxPending: 200, ToolCallBudget: 200,
		Source: `let ps = []; for (let i = 0; i < 150; i++) ps.push(tool.start("demo.sleep", "20s")); await Promise.all(ps)`})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SPLASH_API_URL": apiURL, "SPLASH_API_TOKEN": token}
	var states map[string]int
	testwait.Until(t, 0, "splash ops listing queued and claimed operations", func() bool {
		code, stdout, stderr := invoke(t, env, "ops")
		if code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		states = map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
			if f := strings.Fields(line); len(f) == 8 {
				states[f[4]]++
			}
		}
		// The worker takes its 64 and buffers up to as many again.
		return states["queued"]+states["claimed"] == 150 && states["queued"] >= 150-2*64
	})
	t.Logf("states: %v", states)
}
