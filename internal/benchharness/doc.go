// Package benchharness measures request/response paths over NATS the same
// way for every benchmark in the project, so the end-to-end figure and the
// raw JetStream baselines printed beside it are comparable.
//
// A benchmark supplies a [NewRunner]: a function that builds a
// [RoundTripper] with a given number of workers and reports each finished
// operation to the complete function it is handed. [Matrix] runs it over
// the in-flight × workers grid every benchmark shares; [InFlight] runs one
// cell:
//
//	func BenchmarkBaselineCoreReply(b *testing.B) {
//		benchharness.Matrix(b, benchharness.CoreReply)
//	}
//
// Each cell first runs a tenth of its operations (at most 500) unmeasured,
// so no runner pays for the process growing its heap, then reports ops/s
// and the p50 and p99 of submit → completion in microseconds. [ReportCPU] adds the process CPU per operation and the
// cores used; [Submitters] submits from several goroutines, for paths that
// do real work on the submitting goroutine.
//
// The two raw baselines need no runtime, journal or authentication:
// [CoreReply] is a work-queue stream pulled by workers that reply on core
// NATS, and [DurableReply] replies through a results stream and acks the
// job only once its reply is stored. Both start their own server through
// internal/natstest.
//
// [Fabric] is the whole splash path measured against them: host loop,
// script session, sealed invocation, worker agent with its KV journal and
// the sealed terminal event back. `go test -bench` in internal/itest and
// `splash bench` both run it; a runner needs only a *testing.B, which
// testing.Benchmark supplies outside a test binary too.
//
// [Security] puts a runner's server behind the protections of the compose
// cluster: TLS on every client connection and a JetStream store encrypted
// at rest ([Secured] is both). [DurableReplyWith] and
// [FabricOptions].Security take it, so `splash bench --secure` prints what
// they cost as ratios to the same runner in plaintext, in the same run.
package benchharness
