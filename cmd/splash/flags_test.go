package main

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFlagPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantURL   string
		wantTools []string
		wantConc  int
		wantArgs  []string
	}{
		{name: "defaults", wantURL: defaultNatsURL, wantTools: nil, wantConc: 4},
		{name: "env beats default",
			env:     map[string]string{envNatsURL: "nats://env:4222", envTools: "echo, upper", "SPLASH_WORKER_CONCURRENCY": "9"},
			wantURL: "nats://env:4222", wantTools: []string{"echo", "upper"}, wantConc: 9},
		{name: "flag beats env",
			args:    []string{"--nats-url", "nats://flag:4222", "--tools=sleep", "-concurrency", "2"},
			env:     map[string]string{envNatsURL: "nats://env:4222", envTools: "echo,upper", "SPLASH_WORKER_CONCURRENCY": "9"},
			wantURL: "nats://flag:4222", wantTools: []string{"sleep"}, wantConc: 2},
		{name: "flag and env mixed",
			args:    []string{"--tools", "sleep"},
			env:     map[string]string{envNatsURL: "nats://env:4222"},
			wantURL: "nats://env:4222", wantTools: []string{"sleep"}, wantConc: 4},
		{name: "empty env is unset",
			env:     map[string]string{envNatsURL: "", envTools: ""},
			wantURL: defaultNatsURL, wantTools: nil, wantConc: 4},
		{name: "flags after positional arguments",
			args:    []string{"a", "--tools", "echo", "b"},
			wantURL: defaultNatsURL, wantTools: []string{"echo"}, wantConc: 4, wantArgs: []string{"a", "b"}},
		{name: "double dash ends flags",
			args:    []string{"--", "--tools", "echo"},
			wantURL: defaultNatsURL, wantTools: nil, wantConc: 4, wantArgs: []string{"--tools", "echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c workerConfig
			fs := newFlagSet("worker")
			c.flags(fs)
			args, err := fs.parse(tt.args, mapEnv(tt.env))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if c.nats.url != tt.wantURL || !slices.Equal(c.tools, tt.wantTools) || c.concurrency != tt.wantConc {
				t.Errorf("got url %q tools %q concurrency %d, want %q %q %d",
					c.nats.url, c.tools, c.concurrency, tt.wantURL, tt.wantTools, tt.wantConc)
			}
			if !slices.Equal(args, tt.wantArgs) {
				t.Errorf("positional %q, want %q", args, tt.wantArgs)
			}
		})
	}
}

func TestFlagParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr error
	}{
		{name: "unknown flag", args: []string{"--nope"}, wantErr: errUsage},
		{name: "malformed flag value", args: []string{"--concurrency", "many"}, wantErr: errUsage},
		{name: "malformed env value", env: map[string]string{"SPLASH_WORKER_CONCURRENCY": "many"}, wantErr: errUsage},
		{name: "help", args: []string{"--help"}, wantErr: flag.ErrHelp},
		{name: "short help", args: []string{"-h"}, wantErr: flag.ErrHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c workerConfig
			fs := newFlagSet("worker")
			c.flags(fs)
			if _, err := fs.parse(tt.args, mapEnv(tt.env)); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// A malformed secret in the environment must not end up in the error, which
// is printed.
func TestFlagEnvErrorHidesValue(t *testing.T) {
	var c workerConfig
	fs := newFlagSet("worker")
	c.flags(fs)
	_, err := fs.parse(nil, mapEnv(map[string]string{"SPLASH_WORKER_CONCURRENCY": "s3cr3t"}))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("err %v: want an error that does not echo the value", err)
	}
}

func TestEveryFlagHasEnv(t *testing.T) {
	seen := map[string]string{} // env → command.flag, to catch one variable with two meanings
	for _, c := range commands() {
		fs := c.newFlagSet(c.new(), new(logFlags))
		fs.fs.VisitAll(func(fl *flag.Flag) {
			env := fs.env[fl.Name]
			if env == "" {
				t.Errorf("%s --%s has no environment variable", c.name, fl.Name)
				return
			}
			if other, ok := seen[env]; ok && !sharedEnv[env] {
				t.Errorf("%s used by %s and %s.%s", env, other, c.name, fl.Name)
			}
			seen[env] = c.name + "." + fl.Name
		})
	}
}

// TestAckWait: host and worker read one ack wait, which becomes the
// fabric's; too short a one is a usage error.
func TestAckWait(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr error
	}{
		{name: "default", want: 30 * time.Second},
		{name: "env", env: map[string]string{envAckWait: "10s"}, want: 10 * time.Second},
		{name: "flag beats env", args: []string{"--ack-wait", "5s"}, env: map[string]string{envAckWait: "10s"}, want: 5 * time.Second},
		{name: "too short", args: []string{"--ack-wait", "500ms"}, wantErr: errUsage},
	}
	for _, tt := range tests {
		for _, cmd := range []struct {
			name    string
			ackWait func(fs *flagSet) *time.Duration
		}{
			{"host", func(fs *flagSet) *time.Duration { var c hostConfig; c.flags(fs); return &c.ackWait }},
			{"worker", func(fs *flagSet) *time.Duration { var c workerConfig; c.flags(fs); return &c.ackWait }},
		} {
			t.Run(tt.name+"/"+cmd.name, func(t *testing.T) {
				fs := newFlagSet(cmd.name)
				p := cmd.ackWait(fs)
				if _, err := fs.parse(tt.args, mapEnv(tt.env)); err != nil {
					t.Fatalf("parse: %v", err)
				}
				cfg, err := fabricConfig(3, *p)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("fabricConfig: %v, want %v", err, tt.wantErr)
				}
				if err == nil && (cfg.AckWait != tt.want || cfg.Replicas != 3) {
					t.Fatalf("ack wait %v replicas %d, want %v and 3", cfg.AckWait, cfg.Replicas, tt.want)
				}
			})
		}
	}
}

// sharedEnv lists the variables that several commands read on purpose,
// because they mean the same thing everywhere.
var sharedEnv = map[string]bool{
	envNatsURL: true, envNatsUser: true, envNatsPassword: true, envNatsNKeyFile: true, envKeyFile: true, envPoolKeys: true,
	envAPIToken: true, envAPIAddr: true, envAPIURL: true, envMetricsAddr: true,
	envLogFormat: true, envLogLevel: true, envReplicas: true, envCatalog: true,
	// A NATS client's TLS, on every command that connects as one.
	envNatsCA: true, envNatsCert: true, envNatsKey: true,
	// The fabric's ack wait, on splash host and splash worker alike.
	envAckWait: true,
	// The host's limits, on splash host and splash dev alike.
	"SPLASH_MAX_SESSIONS": true, "SPLASH_SESSION_BUDGET": true, "SPLASH_MAX_SESSION_BUDGET": true,
	"SPLASH_SESSION_PENDING": true, "SPLASH_MAX_SESSION_PENDING": true, "SPLASH_AUDIT_PER_SESSION": true,
	"SPLASH_SESSION_MEMORY": true, "SPLASH_MEMORY_LIMIT": true, "SPLASH_RESTART": true, "SPLASH_HOST_LEASE": true,
	"SPLASH_MAX_SESSIONS_PER_OWNER": true, "SPLASH_SUBMIT_RATE": true, "SPLASH_SUBMIT_BURST": true,
	// The host's HTTP bounds, on splash host and splash dev alike.
	"SPLASH_HTTP_READ_TIMEOUT": true, "SPLASH_HTTP_WRITE_TIMEOUT": true, "SPLASH_HTTP_IDLE_TIMEOUT": true,
	"SPLASH_HTTP_MAX_CONNS": true, "SPLASH_MAX_STREAMS": true, "SPLASH_MAX_STREAMS_PER_TOKEN": true,
	"SPLASH_STREAM_WRITE_TIMEOUT": true, "SPLASH_TRACE_URL": true, "SPLASH_HTTP_MAX_CONNS_PER_CLIENT": true,
	// What the fabric serves over MCP, at a host's /mcp and from splash
	// mcp alike.
	"SPLASH_MCP_TOOLS": true, "SPLASH_MCP_RUN_SCRIPT": true,
	// A worker's settings for its tool processes, on splash worker and
	// splash dev alike.
	"SPLASH_TOOL_MAX_RUNTIME": true, "SPLASH_TOOL_CGROUP": true,
}

func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}
