package toolproc_test

import (
	"context"
	"testing"

	"github.com/splashfabric/splashfabric/toolproc"
)

// BenchmarkProcessStart measures what a process start costs, from New to
// the first call's answer and the process's stop, plain and under
// Bubblewrap, in one run; the ratio of the two is what containment adds
// per process start.
//
//	go test -run '^$' -bench ProcessStart -benchtime 100x ./toolproc/
func BenchmarkProcessStart(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  func() toolproc.Config
	}{
		{"plain", func() toolproc.Config { return testConfig(nil) }},
		{"bwrap", func() toolproc.Config {
			requireBwrap(b)
			return containedConfig(toolproc.Containment{})
		}},
	} {
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
// protocol's cost alone (seal, write, the tool's read and answer, open).
func BenchmarkProcessCall(b *testing.B) {
	s, err := toolproc.New(testConfig(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	req := toolproc.Request{Invoke: invoke("echo:x")}
	for b.Loop() {
		if o := s.Call(context.Background(), req); o.Kind != toolproc.Answered {
			b.Fatalf("outcome %v (%v)", o.Kind, o.Err)
		}
	}
}
