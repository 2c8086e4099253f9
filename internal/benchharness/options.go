package benchharness

// Option changes how [InFlight] and [Matrix] drive and report a runner.
type Option func(*config)

type config struct {
	submitters int
	reportCPU  bool
}

func newConfig(opts []Option) config {
	c := config{submitters: 1}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Submitters submits from up to n goroutines (never more than the
// in-flight bound) instead of one. A path that does real work on the
// submitting goroutine, as a script's first step is evaluated on its
// caller's, needs this: one submitter alone would measure how fast one
// goroutine does that work, not whether the path keeps its in-flight
// operations moving. n below 1 fails the benchmark.
func Submitters(n int) Option { return func(c *config) { c.submitters = n } }

// ReportCPU adds cpu_µs/op and cores: CPU per operation is steadier than
// ops/s on a shared machine, and cores says whether a run was bound by CPU
// or by waiting. Both count this whole process, in-process server
// included.
func ReportCPU() Option { return func(c *config) { c.reportCPU = true } }
