package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/internal/natstest"
)

// writeCatalog writes a catalog file into a fresh directory.
func writeCatalog(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolsEnv points splash tools at srv.
func toolsEnv(srv *natstest.Server) map[string]string {
	return map[string]string{envNatsURL: srv.ClientURL()}
}

func runTools(t *testing.T, env map[string]string, wantCode int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := invoke(t, env, append([]string{"tools"}, args...)...)
	if code != wantCode {
		t.Fatalf("splash tools %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, wantCode, stderr)
	}
	return stdout, stderr
}

const toolsCatalog = `
tools:
  - name: text.upper
    description: |
      Upper-cases its input.
      Second line, not shown.
  - name: demo.sum
    description: Adds two integers.
    format: json
    input_schema: {type: object}
    process: {command: [./sum.py]}
`

func TestToolsApplyListRemove(t *testing.T) {
	srv := natstest.Start(t)
	env := toolsEnv(srv)

	stdout, _ := runTools(t, env, 0, "ls")
	if stdout != "no published tools\n" {
		t.Errorf("ls before any apply:\n%s", stdout)
	}

	stdout, _ = runTools(t, env, 0, "apply", writeCatalog(t, toolsCatalog))
	applied := regexp.MustCompile(`(?m)^applied (\S+) sha256:([0-9a-f]{64})$`).FindAllStringSubmatch(stdout, -1)
	if len(applied) != 2 || applied[0][1] != "text.upper" || applied[1][1] != "demo.sum" {
		t.Fatalf("apply printed:\n%s", stdout)
	}
	sumDigest := applied[1][2]

	stdout, _ = runTools(t, env, 0, "ls")
	rows := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(rows) != 3 {
		t.Fatalf("ls:\n%s", stdout)
	}
	for i, want := range [][]string{
		{"NAME", "FORMAT", "DIGEST", "PROCESS", "DESCRIPTION"},
		{"demo.sum", "json", sumDigest[:12], "yes", "Adds", "two", "integers."},
		{"text.upper", "text", "", "no", "Upper-cases", "its", "input.", "…"},
	} {
		got := strings.Fields(rows[i])
		if want[2] == "" && len(got) > 2 {
			want[2] = got[2] // text.upper's digest, checked by length below
		}
		if strings.Join(got, " ") != strings.Join(want, " ") || (i > 0 && len(got[2]) != 12) {
			t.Errorf("ls row %d: %q, want %q", i, got, want)
		}
	}

	stdout, _ = runTools(t, env, 0, "rm", "demo.sum")
	if stdout != "removed demo.sum\n" {
		t.Errorf("rm printed %q", stdout)
	}
	_, stderr := runTools(t, env, 1, "rm", "demo.sum")
	if !strings.Contains(stderr, `tool not published: "demo.sum"`) {
		t.Errorf("rm of a removed tool:\n%s", stderr)
	}
	stdout, _ = runTools(t, env, 0, "ls")
	if strings.Contains(stdout, "demo.sum") || !strings.Contains(stdout, "text.upper") {
		t.Errorf("ls after rm:\n%s", stdout)
	}
}

func TestToolsApplyRefusesBadCatalog(t *testing.T) {
	srv := natstest.Start(t)
	env := toolsEnv(srv)
	runTools(t, env, 0, "apply", writeCatalog(t, toolsCatalog))
	before, _ := runTools(t, env, 0, "ls")

	// The first tool is fine and changed; the second is not: nothing
	// is published.
	bad := writeCatalog(t, "tools:\n  - name: text.upper\n    max_attempts: 3\n  - name: demo.sum\n    max_attempts: 0\n    stream: {max_chunks: 0}\n")
	stdout, stderr := runTools(t, env, 2, "apply", bad)
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if !strings.Contains(stderr, `tool "demo.sum": field "stream.max_chunks"`) {
		t.Errorf("stderr does not name the tool and field:\n%s", stderr)
	}
	if after, _ := runTools(t, env, 0, "ls"); after != before {
		t.Errorf("ls changed:\n%s\nwas:\n%s", after, before)
	}

	_, stderr = runTools(t, env, 2, "apply", filepath.Join(t.TempDir(), "absent.yaml"))
	if !strings.Contains(stderr, "absent.yaml") {
		t.Errorf("missing file:\n%s", stderr)
	}
}

func TestToolsUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no verb", nil, "want apply <file>, ls or rm <name>"},
		{"unknown verb", []string{"publish"}, `unknown verb "publish"`},
		{"apply without a file", []string{"apply"}, "apply takes one catalog file"},
		{"apply with two files", []string{"apply", "a.yaml", "b.yaml"}, "apply takes one catalog file"},
		{"ls with an argument", []string{"ls", "x"}, `ls takes no argument, got "x"`},
		{"rm without a name", []string{"rm"}, "rm takes one tool name"},
		{"rm with two names", []string{"rm", "a", "b"}, "rm takes one tool name"},
		{"bad timeout", []string{"ls", "--timeout", "0s"}, "--timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr := runTools(t, nil, 2, tt.args...)
			if !strings.Contains(stderr, tt.wantStderr) || !strings.Contains(stderr, "Usage: splash tools") {
				t.Errorf("stderr lacks %q and the usage:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func TestToolsOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "-"},
		{"Short.", "Short."},
		{"First.\nSecond.", "First. …"},
		{"First.\n", "First."},
		{"tab\there\x1b[31m", "tab here [31m"},
		{strings.Repeat("é", 70), strings.Repeat("é", 59) + "…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, descriptionShown); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A denied apply says so at once, naming the user and the subject the
// server refused, instead of failing after --timeout as "context
// deadline exceeded": the host user may read the catalog, never write it,
// and a pool may not even read it. The ops user applies.
func TestToolsApplyRefusedSaysPermissionDenied(t *testing.T) {
	srv, pw, pools := startDevNATS(t)
	url := srv.ClientURL()
	catalog := writeCatalog(t, toolsCatalog)
	// The host provisions the bucket, as a running host would have.
	runTools(t, map[string]string{envNatsURL: url, envNatsUser: "ops", envNatsPassword: pw["ops"]}, 0, "ls")
	text := pool(t, pools, "text")
	seed := filepath.Join(t.TempDir(), "text.nk")
	raw, err := text.kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string
	}{
		{"host", map[string]string{envNatsUser: "host", envNatsPassword: pw["host"]},
			[]string{"permission denied: NATS user host may not publish to", `"$KV.splash_catalog.text.upper"`}},
		// Without --pool it has no inbox prefix of its own, so the very
		// first reply it waits for is refused.
		{"a pool", map[string]string{envNatsNKeyFile: seed},
			[]string{"permission denied: NATS user nkey:U", "may not subscribe to", "_INBOX."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{envNatsURL: url, "SPLASH_TOOLS_TIMEOUT": "10m"}
			for k, v := range tt.env {
				env[k] = v
			}
			_, stderr := runTools(t, env, 1, "apply", catalog)
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "deadline") || strings.Contains(stderr, "context canceled") {
				t.Errorf("the refusal is a timeout:\n%s", stderr)
			}
		})
	}
	stdout, _ := runTools(t, map[string]string{envNatsURL: url, envNatsUser: "ops", envNatsPassword: pw["ops"]}, 0, "apply", catalog)
	if !strings.Contains(stdout, "applied text.upper") {
		t.Fatalf("ops apply printed:\n%s", stdout)
	}
}
