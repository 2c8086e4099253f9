package benchharness

import (
	"syscall"
	"testing"
	"time"
)

// report writes one cell's metrics; the names are what benchstat compares
// across runs, so they do not change.
func report(b *testing.B, cfg config, n int, elapsed, cpu time.Duration, lat *latencies) {
	p50, p99 := lat.percentiles()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(p50, "p50_µs")
	b.ReportMetric(p99, "p99_µs")
	if cfg.reportCPU {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu_µs/op")
		b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores")
	}
}

// processCPU is the user and system time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
