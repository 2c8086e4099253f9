package fabric_test

import (
	"testing"

	"github.com/splashfabric/splashfabric/internal/benchharness"
)

// The raw baselines of the fabric benchmark: no runtime, no journal, no
// authentication. The end-to-end benchmark in internal/itest runs the same
// baselines through the same harness, so every figure is measured the same
// way in one run; here they stand alone, submitted from one goroutine.

// BenchmarkBaselineCoreReply is baseline (a): publish to a work-queue
// stream, pull, reply on core NATS, plain ack.
func BenchmarkBaselineCoreReply(b *testing.B) { benchharness.Matrix(b, benchharness.CoreReply) }

// BenchmarkBaselineDurableReply is baseline (b): as (a), but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored.
func BenchmarkBaselineDurableReply(b *testing.B) { benchharness.Matrix(b, benchharness.DurableReply) }
