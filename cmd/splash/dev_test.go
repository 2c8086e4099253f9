package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/internal/testwait"
)

// TestDevRunsScripts runs the binary as the README does: `splash dev` in
// the background, `splash run` against it, then a scrape of /metrics and
// a SIGTERM.
func TestDevRunsScripts(t *testing.T) {
	const token = "test-token"
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", t.TempDir(),
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "2")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	if !strings.HasPrefix(apiURL, "http://127.0.0.1:") {
		t.Fatalf("dev ready: api_url %q", apiURL)
	}
	testwait.Until(t, 0, "/readyz 200", func() bool {
		resp, err := http.Get(apiURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	tests := []struct {
		name     string
		source   string
		wantCode int
		want     []string // lines stdout must contain, in this order
		refuse   string   // text stdout must not contain
	}{
		{name: "upper", source: `await tool.start("demo.upper", "hello")`, want: []string{"HELLO"}},
		// Chunks and the result share the events stream, so every chunk
		// is printed, in order, before the result.
		{name: "stream", source: `await tool.start("demo.stream", "4")`,
			want: []string{
				"[demo.stream] chunk 1/4\n",
				"[demo.stream] chunk 2/4 token=" + demotools.Redacted + "\n",
				"[demo.stream] chunk 3/4\n",
				"[demo.stream] chunk 4/4\n",
				"streamed 4 chunks",
			}, refuse: demotools.Secret},
		{name: "retries", source: `await tool.start("demo.flaky", "2")`, want: []string{"ok after 2"}},
		{name: "failure", source: `assert(await tool.start("demo.echo", "a") == "b", "echo said a")`, wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runSplash(t, "run", "--api-url", apiURL, "--api-token", token, "-e", tt.source)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			rest := stdout
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q after the lines before it:\n%s", w, stdout)
				}
				rest = rest[i+len(w):]
			}
			if tt.refuse != "" && strings.Contains(stdout, tt.refuse) {
				t.Errorf("stdout shows %q:\n%s", tt.refuse, stdout)
			}
		})
	}

	// A wrong token is refused and counted.
	if code, _, _ := runSplash(t, "run", "--api-url", apiURL, "--api-token", "wrong", "-e", "1"); code == 0 {
		t.Errorf("run with a wrong token exited 0")
	}

	families := scrape(t, apiURL+"/metrics")
	checks := []struct {
		metric, labels string
		want           float64
	}{
		{"splash_operations_started_total", "tool=demo.upper", 1},
		{"splash_operations_finished_total", "outcome=succeeded,tool=demo.upper", 1},
		{"splash_operations_finished_total", "outcome=succeeded,tool=demo.stream", 1},
		{"splash_operations_finished_total", "outcome=succeeded,tool=demo.flaky", 1},
		{"splash_operations_finished_total", "outcome=succeeded,tool=demo.echo", 1},
		{"splash_retries_total", "class=transient,tool=demo.flaky", 2},
		{"splash_operations_pending", "tool=demo.upper", 0},
		{"splash_operations_claimed", "tool=demo.upper", 0},
		{"splash_operation_duration_seconds", "tool=demo.upper", 1},
		{"splash_dispatch_latency_seconds", "tool=demo.flaky", 3},
		{"splash_sessions_total", "state=completed", 3},
		{"splash_sessions_total", "state=failed", 1},
		{"splash_sessions_active", "", 0},
		{"splash_auth_failures_total", "reason=wrong_token", 1},
		{"splash_auth_failures_total", "reason=bad_tag", 0},
		{"splash_worker_invocations_total", "outcome=succeeded,tool=demo.flaky", 1},
		{"splash_worker_invocations_total", "outcome=retry_transient,tool=demo.flaky", 2},
		{"splash_worker_handler_duration_seconds", "outcome=succeeded,tool=demo.upper", 1},
		{"splash_worker_in_flight", "tool=demo.upper", 0},
		{"splash_worker_up", "", 1},
		{"splash_worker_serving", "tool=demo.ledger", 1},
	}
	for _, c := range checks {
		if got := value(families, c.metric, c.labels); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.metric, c.labels, got, c.want)
		}
	}

	for _, c := range []struct{ metric, labels string }{
		{"splash_stream_chunks_total", "source=source,tool=demo.stream"},
		{"splash_stream_chunks_total", "source=redacted,tool=demo.stream"},
	} {
		if got := value(families, c.metric, c.labels); got != 4 {
			t.Errorf("%s{%s} = %v, want 4", c.metric, c.labels, got)
		}
	}
	if late := value(families, "splash_frames_rejected_total", "reason=late"); late != 0 {
		t.Errorf("frames rejected as late = %v, want 0", late)
	}

	// A script may be limited to some tools, and is refused the others.
	code, _, stderr := runSplash(t, "run", "--api-url", apiURL, "--api-token", token, "--tools", "demo.upper", "-e", `await tool.start("demo.echo", "x")`)
	if code != 1 || !strings.Contains(stderr, "tool not granted") {
		t.Errorf("a call outside --tools: exit %d, stderr:\n%s", code, stderr)
	}
	// dev's one token holds every scope and may use every tool.
	root, err := apiclient.New(apiURL, token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Workers(t.Context()); err != nil {
		t.Errorf("dev's token reading workers: %v", err)
	}
	if _, err := root.Cancel(t.Context(), "s-nope", "op-1"); !errors.Is(err, apiclient.ErrUnknownSession) {
		t.Errorf("dev's token cancelling: %v, want unknown_session", err)
	}
	if s, err := root.Submit(t.Context(), apiclient.SubmitRequest{Source: "return 1", Tools: []string{">"}}); err != nil || s.State != apiclient.StateCompleted {
		t.Errorf("dev's token granting every tool: %+v, %v", s, err)
	}

	if err := dev.stop(t); err != nil {
		t.Fatalf("splash dev after SIGTERM: %v\n%s", err, dev.stderr.String())
	}
	if !strings.Contains(dev.stderr.String(), `"msg":"dev stopping"`) {
		t.Errorf("no dev stopping record:\n%s", dev.stderr.String())
	}
}

// runSplash runs the binary to completion with a SPLASH_-free environment.
func runSplash(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(splashBinary(t), args...)
	cmd.Env = cleanEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("run splash: %v", err)
	}
	return 0, out.String(), errOut.String()
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return families
}

// value reads a counter's or gauge's value, or a histogram's count, for the
// series whose labels are exactly labels ("k=v,k=v", sorted); -1 when absent.
func value(families map[string]*dto.MetricFamily, name, labels string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		var parts []string
		for _, l := range m.GetLabel() {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(parts, ",") != labels {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// cleanEnv is the test process's environment without SPLASH_ variables, so
// the machine running the tests cannot change what they see.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPLASH_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestDevRunsTheReadmePythonTool follows the README's "Write a tool in
// Python": dev with examples/python/catalog.yaml runs the example tool in
// its contained process, and a script's call streams its chunks and
// answers.
func TestDevRunsTheReadmePythonTool(t *testing.T) {
	for _, bin := range []string{"python3", "bwrap"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("SPLASH_BWRAP") == "require" {
				t.Fatalf("%s required: %v", bin, err)
			}
			t.Skipf("%s not installed", bin)
		}
	}
	const token = "test-token"
	dev := startSplash(t, "dev", "--log-format", "json", "--data-dir", t.TempDir(), "--catalog", "../../examples/python/catalog.yaml",
		"--api-addr", "127.0.0.1:0", "--nats-port", "-1", "--api-token", token, "--workers", "1")
	rec := dev.waitRecord(t, "dev ready")
	apiURL, _ := rec["api_url"].(string)
	code, stdout, stderr := runSplash(t, "run", "--api-url", apiURL, "--api-token", token,
		"-e", `return await tool.start("text.slowupper", "hello big world")`)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rest := stdout
	for _, w := range []string{"word 1/3: hello", "word 2/3: big", "word 3/3: world", "HELLO BIG WORLD"} {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stdout lacks %q after the lines before it:\n%s", w, stdout)
		}
		rest = rest[i+len(w):]
	}
}
