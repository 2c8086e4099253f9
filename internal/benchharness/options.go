package benchharness

import "math"

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

// SubmitEach submits every operation in flight from its own goroutine. A
// submission that returns only once something is stored (a durable
// session's first ledger write, a POST to dev's API) needs this: with a
// few submitters, at most that many operations would be in flight however
// many the cell names.
func SubmitEach() Option { return func(c *config) { c.submitters = submitEach } }

// submitEach is the submitter count SubmitEach stands for: InFlight never
// starts more submitters than its in-flight bound.
const submitEach = math.MaxInt

// ReportCPU adds cpu_µs/op and cores: CPU per operation is steadier than
// ops/s on a shared machine, and cores says whether a run was bound by CPU
// or by waiting. Both count this whole process, in-process server
// included.
func ReportCPU() Option { return func(c *config) { c.reportCPU = true } }
