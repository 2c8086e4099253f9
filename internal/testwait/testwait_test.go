package testwait

import (
	"testing"
	"time"
)

func TestSlowFactor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{{"", 1}, {"3", 3}, {"1.5", 1.5}, {"0.5", 1}, {"-2", 1}, {"fast", 1}} {
		if got := slowFactor(tc.in); got != tc.want {
			t.Errorf("slowFactor(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	old := Slow
	defer func() { Slow = old }()
	Slow = 2.5
	if got := Scale(4 * time.Second); got != 10*time.Second {
		t.Fatalf("Scale(4s) at 2.5 = %v", got)
	}
}
