package toolproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolproc"
)

// benchConfig is one configuration a benchmark runs under.
type benchConfig struct {
	name string
	cfg  func() toolproc.Config
}

// plainAndContained are the two configurations each benchmark compares in
// one run: uncontained, and in the sandbox (skipped without bwrap).
func plainAndContained(b *testing.B) []benchConfig {
	return []benchConfig{
		{"plain", func() toolproc.Config { return testConfig(nil) }},
		{"bwrap", func() toolproc.Config {
			requireBwrap(b)
			return containedConfig(toolproc.Containment{})
		}},
	}
}

// BenchmarkProcessStart measures what a process start costs, from New to
// the first call's answer and the process's stop, plain and in the
// sandbox, in one run; the ratio of the two is what containment adds per
// process start (bwrap, the shim, the probe New runs, the seccomp
// filter, the limits).
//
//	go test -run '^$' -bench ProcessStart -benchtime 100x ./toolproc/
func BenchmarkProcessStart(b *testing.B) {
	for _, tc := range plainAndContained(b) {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.cfg()
			for b.Loop() {
				s, err := toolproc.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if o := s.Call(context.Background(), toolproc.Request{Invoke: invoke("echo:up")}); o.Kind != toolproc.Answered {
					b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
				}
				if err := s.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProcessCall is one call to a running process: the stdio
// protocol's cost alone (seal, write, the tool's read and answer, open),
// plain and in the sandbox (its seccomp filter on every system call, its
// limits' watch), in one run; the ratio is what containment adds per
// call.
//
//	go test -run '^$' -bench 'Process(Start|Call)' -benchtime 100x ./toolproc/
func BenchmarkProcessCall(b *testing.B) {
	for _, tc := range plainAndContained(b) {
		b.Run(tc.name, func(b *testing.B) {
			s, err := toolproc.New(tc.cfg())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			req := toolproc.Request{Invoke: invoke("echo:x")}
			// The process starts outside the measured loop.
			if o := s.Call(context.Background(), req); o.Kind != toolproc.Answered {
				b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
			}
			for b.Loop() {
				if o := s.Call(context.Background(), req); o.Kind != toolproc.Answered {
					b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
				}
			}
		})
	}
}

// BenchmarkProcessRestart is a process start alone, once New (and its
// sandbox probe) is behind: each iteration crashes the running process
// and has the next call start a fresh one, plain and in the sandbox.
func BenchmarkProcessRestart(b *testing.B) {
	for _, tc := range plainAndContained(b) {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.cfg()
			cfg.RestartInitial, cfg.RestartMax = time.Nanosecond, time.Nanosecond
			s, err := toolproc.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			up := toolproc.Request{Invoke: invoke("echo:up")}
			crash := toolproc.Request{Invoke: invoke("crash")}
			for b.Loop() {
				if o := s.Call(context.Background(), up); o.Kind != toolproc.Answered {
					b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
				}
				if o := s.Call(context.Background(), crash); o.Kind != toolproc.Lost {
					b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
				}
			}
		})
	}
}
