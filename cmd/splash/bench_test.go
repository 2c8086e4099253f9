package main

import (
	"strings"
	"testing"
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
