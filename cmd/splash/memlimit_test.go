package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"512B", 512, false},
		{"64KiB", 64 << 10, false},
		{"256MiB", 256 << 20, false},
		{"2GiB", 2 << 30, false},
		{"1TiB", 1 << 40, false},
		{"", 0, true},
		{"-1MiB", 0, true},
		{"1.5GiB", 0, true},
		{"2GB", 0, true},
		{"9999999TiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseBytes(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestResolveMemoryLimit(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	withEnv := func(k string) (string, bool) { return "3GiB", k == "GOMEMLIMIT" }
	tests := []struct {
		name, flag string
		env        func(string) (string, bool)
		wantBytes  int64
		wantSource string
		wantErr    error
	}{
		{"a size", "2GiB", noEnv, 2 << 30, "flag", nil},
		{"off", "off", noEnv, math.MaxInt64, "off", nil},
		{"auto keeps GOMEMLIMIT", "auto", withEnv, -1, "GOMEMLIMIT", nil},
		{"zero", "0", noEnv, 0, "", errUsage},
		{"garbage", "lots", noEnv, 0, "", errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := resolveMemoryLimit(tt.flag, tt.env)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if m.source != tt.wantSource || (tt.wantBytes >= 0 && m.bytes != tt.wantBytes) {
				t.Fatalf("got %+v, want %d from %s", m, tt.wantBytes, tt.wantSource)
			}
		})
	}
	// Without GOMEMLIMIT, auto takes a share of what this machine or
	// container has, whichever it finds.
	if m, err := resolveMemoryLimit("auto", noEnv); err != nil || m.bytes <= 0 {
		t.Fatalf("auto: %+v, %v", m, err)
	}
}

// TestAutoMemoryLimitTakesTheTightest: auto takes its share of whichever
// limit is least once shared: a cgroup's, the address space's (half) or
// the machine's. The host, 24 GiB of memory under a 4 GiB
// RLIMIT_AS, chose 20 GB.
func TestAutoMemoryLimitTakesTheTightest(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	src := func(name string, share float64, n int64) memorySource {
		return memorySource{name: name, share: share, read: func() (int64, bool) { return n, n > 0 }}
	}
	tests := []struct {
		name       string
		sources    []memorySource
		want       int64
		wantSource string
	}{
		{"the issue's host", []memorySource{src("cgroup", 0.8, 0), src("RLIMIT_AS", 0.5, 4<<30), src("machine", 0.8, 24<<30)}, 2 << 30, "RLIMIT_AS"},
		{"a container", []memorySource{src("cgroup", 0.8, 10<<30), src("RLIMIT_AS", 0.5, 0), src("machine", 0.8, 24<<30)}, 8 << 30, "cgroup"},
		{"a generous address space", []memorySource{src("cgroup", 0.8, 1<<30), src("RLIMIT_AS", 0.5, 64<<30)}, 1 << 30 * 8 / 10, "cgroup"},
		{"only the machine", []memorySource{src("cgroup", 0.8, 0), src("machine", 0.8, 10<<30)}, 8 << 30, "machine"},
		{"nothing known", []memorySource{src("cgroup", 0.8, 0)}, math.MaxInt64, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := resolveMemoryLimitFrom("auto", noEnv, tt.sources)
			if err != nil || m.bytes != tt.want || !strings.Contains(m.source, tt.wantSource) {
				t.Fatalf("got %d from %q (%v), want %d from %s", m.bytes, m.source, err, tt.want, tt.wantSource)
			}
		})
	}
}

func TestSessionMemoryFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr error
	}{
		{"256MiB", 256 << 20, nil},
		{"1GiB", 1 << 30, nil},
		{"1KiB", 0, errUsage},
		{"much", 0, errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l := hostLimits{auditPerSession: 1, sessionMemory: tt.in}
			l.limits.MaxSuspendedSessions, l.limits.DefaultToolCallBudget, l.limits.MaxToolCallBudget = 1, 1, 1
			l.limits.DefaultMaxPending, l.limits.MaxPending = 1, 1
			err := l.check()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && l.limits.SessionMemoryBudget != tt.want {
				t.Fatalf("budget %d, want %d", l.limits.SessionMemoryBudget, tt.want)
			}
		})
	}
}
