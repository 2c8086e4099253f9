package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelpOnEveryCommand(t *testing.T) {
	for _, c := range commands() {
		for _, helpArgs := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			t.Run(strings.Join(helpArgs, " "), func(t *testing.T) {
				code, stdout, stderr := invoke(t, nil, helpArgs...)
				if code != 0 {
					t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
				}
				if !strings.HasPrefix(stdout, "Usage: splash "+c.name) {
					t.Errorf("stdout does not start with usage:\n%s", stdout)
				}
				fs := c.newFlagSet(c.new(), new(logFlags))
				fs.fs.VisitAll(func(fl *flag.Flag) {
					if !strings.Contains(stdout, "-"+fl.Name) || !strings.Contains(stdout, "env "+fs.env[fl.Name]) {
						t.Errorf("usage lacks --%s or its variable %s", fl.Name, fs.env[fl.Name])
					}
				})
			})
		}
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStderr string
	}{
		{name: "no command", args: nil, wantCode: 2, wantStderr: "Usage: splash <command>"},
		{name: "unknown command", args: []string{"bogus"}, wantCode: 2, wantStderr: `unknown command "bogus"`},
		{name: "unknown flag", args: []string{"nats", "--bogus"}, wantCode: 2, wantStderr: "Usage: splash nats"},
		{name: "bad log format", args: []string{"version", "--log-format", "xml"}, wantCode: 2, wantStderr: "--log-format"},
		{name: "bad log format from env", args: []string{"version"}, env: map[string]string{envLogFormat: "xml"}, wantCode: 2, wantStderr: "--log-format"},
		{name: "bad log level", args: []string{"version", "--log-level", "loud"}, wantCode: 2, wantStderr: "--log-level"},
		{name: "extra argument", args: []string{"version", "now"}, wantCode: 2, wantStderr: `unexpected argument "now"`},
		{name: "cancel needs two arguments", args: []string{"cancel", "s1"}, wantCode: 2, wantStderr: "<session> <operation>"},
		{name: "run needs a script", args: []string{"run"}, wantCode: 2, wantStderr: "no script"},
		{name: "run refuses file and -e", args: []string{"run", "-e", "1", "x.js"}, wantCode: 2, wantStderr: "not both"},
		{name: "worker refuses an unknown tool", args: []string{"worker", "--tools", "echo"}, wantCode: 2, wantStderr: `"echo" is not in the catalog`},
		{name: "worker needs a key file", args: []string{"worker", "--metrics-addr="}, wantCode: 1, wantStderr: "key file"},
		{name: "host needs a token", args: []string{"host"}, wantCode: 2, wantStderr: "no API token"},
		{name: "host takes a token or a token file", args: []string{"host", "--api-token", "t", "--api-tokens-file", "tokens.yaml"}, wantCode: 2, wantStderr: "exclude each other"},
		{name: "host refuses a missing token file", args: []string{"host", "--api-tokens-file", "/nonexistent/tokens.yaml"}, wantCode: 2, wantStderr: "--api-tokens-file"},
		{name: "host needs room for a session", args: []string{"host", "--api-token", "t", "--max-sessions", "0"}, wantCode: 2, wantStderr: "--max-sessions"},
		{name: "dev default budget above its maximum", args: []string{"dev", "--session-budget", "5", "--max-session-budget", "4"}, wantCode: 2, wantStderr: "--session-budget"},
		{name: "dev needs a worker", args: []string{"dev", "--workers", "0"}, wantCode: 2, wantStderr: "--workers"},
		{name: "routes need a cluster port", args: []string{"nats", "--routes", "nats-route://a:6222"}, wantCode: 2, wantStderr: "--cluster-port"},
		{name: "bench needs positive in-flight bounds", args: []string{"bench", "--inflight", "1,0"}, wantCode: 2, wantStderr: "--inflight"},
		{name: "bench needs operations", args: []string{"bench", "--ops", "0"}, wantCode: 2, wantStderr: "--ops"},
		{name: "help", args: []string{"help"}, wantCode: 0},
		{name: "help on an unknown command", args: []string{"help", "bogus"}, wantCode: 2, wantStderr: `unknown command "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := invoke(t, tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := invoke(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "splash "+version) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

// TestDocsListEveryVariable keeps docs/cli.md in step with the flags.
func TestDocsListEveryVariable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands() {
		if !strings.Contains(string(doc), "`splash "+c.name) {
			t.Errorf("docs/cli.md has no section for splash %s", c.name)
		}
		fs := c.newFlagSet(c.new(), new(logFlags))
		fs.fs.VisitAll(func(fl *flag.Flag) {
			if !strings.Contains(string(doc), "`"+fs.env[fl.Name]+"`") {
				t.Errorf("docs/cli.md does not list %s (splash %s -%s)", fs.env[fl.Name], c.name, fl.Name)
			}
		})
	}
}
