package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/internal/benchharness"
)

// TestBenchPrintsRatios runs the smallest matrix: one cell, a few
// operations per runner, and checks every runner reported and the splash
// row carries its ratios to baseline (b).
func TestBenchPrintsRatios(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "bench", "--ops", "20", "--inflight", "2", "--workers", "1", "--claimed")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"in flight 2, workers 1", "(a) core reply", "(b) durable reply", "splash claimed", "ops/s ÷ (b)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "splash") && len(strings.Fields(line)) < 8 {
			t.Errorf("splash row without ratios: %q", line)
		}
	}
}

// TestBenchSecured runs one cell with --secure: the secured rows come
// after the plaintext ones, each with its ratios to its plaintext twin.
func TestBenchSecured(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "bench", "--ops", "20", "--inflight", "2", "--workers", "1", "--secure")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	_, secured, ok := strings.Cut(stdout, "over TLS with the store encrypted")
	if !ok {
		t.Fatalf("no secured table:\n%s", stdout)
	}
	if !strings.Contains(secured, "ops/s ÷ plain") {
		t.Errorf("secured table lacks its ratios:\n%s", secured)
	}
	rows := 0
	for _, line := range strings.Split(secured, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "splash" || f[0] == "(b)") {
			rows++
			if len(f) < 9 {
				t.Errorf("secured row without ratios: %q", line)
			}
		}
	}
	if rows != 2 {
		t.Errorf("%d secured rows, want (b) and splash:\n%s", rows, secured)
	}
}

// TestBenchDev runs one cell with --dev: the in-process durable row joins
// the first table, and dev's own table follows with its ratios to both
// in-process rows.
func TestBenchDev(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "bench", "--ops", "20", "--inflight", "2", "--workers", "1", "--dev")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	main, dev, ok := strings.Cut(stdout, "splash dev: one submit over its HTTP API waiting for the end")
	if !ok {
		t.Fatalf("no dev table:\n%s", stdout)
	}
	if !strings.Contains(main, "splash durable") {
		t.Errorf("first table lacks the durable in-process row:\n%s", main)
	}
	// Each dev row, then its ratios, by the fields of each line.
	want := []string{"splash dev/6", "÷ splash/6", "÷ splash durable/7", "splash dev --restart fail/8", "÷ splash/6"}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(dev), "\n")[2:] {
		f := strings.Fields(line)
		name := strings.Join(f[:len(f)-4], " ")
		got = append(got, fmt.Sprintf("%s/%d", name, len(f)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("dev rows %q, want %q:\n%s", got, want, dev)
	}
}

// BenchmarkDev is the dev row of `splash bench --dev` as a Go benchmark,
// for -cpuprofile and benchstat: go test ./cmd/splash -run '^$' -bench Dev
// -benchtime 3000x -cpuprofile dev.pprof.
func BenchmarkDev(b *testing.B) {
	for _, inFlight := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("inflight=%d", inFlight), func(b *testing.B) {
			benchharness.InFlight(b, inFlight, 1, devBench(inFlight+16, os.Stderr), benchharness.SubmitEach(), benchharness.ReportCPU())
		})
	}
}
