package workeragent_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// BenchmarkRoundTrip measures one agent end to end with a no-op tool:
// seal and publish an invocation, pull, open, cancel check (local copy),
// journal, result published to the events stream, read and opened by the
// host side. window is the number of calls in flight. tool=claimed is a
// tool that takes a journal claim (Begin, then Finish after the answer);
// tool=idempotent is one declared idempotent (no claim, one Store after
// the answer). The memory journal variant shows what the journal's KV
// writes cost. Besides ops/s and latency it reports cpu_µs/op (the whole
// process: server, host side and agent) and, for the KV journal,
// journal_writes/op.
func BenchmarkRoundTrip(b *testing.B) {
	for _, journal := range []string{"kv", "memory"} {
		for _, tool := range []string{"claimed", "idempotent"} {
			for _, window := range []int{1, 64, 512} {
				b.Run(fmt.Sprintf("journal=%s/tool=%s/window=%d", journal, tool, window), func(b *testing.B) {
					benchRoundTrip(b, journal, tool == "idempotent", window)
				})
			}
		}
	}
}

// processCPU is the CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func streamLastSeq(tb testing.TB, ctx context.Context, js jetstream.JetStream, name string) uint64 {
	tb.Helper()
	s, err := js.Stream(ctx, name)
	must(tb, err)
	info, err := s.Info(ctx)
	must(tb, err)
	return info.State.LastSeq
}

func benchRoundTrip(b *testing.B, journalKind string, idempotent bool, window int) {
	srv := natstest.Start(b)
	hostNC, workerNC := srv.Connect(), srv.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, _ := protocol.GenerateSessionKey(rand.Reader)
	codec, _ := fabric.NewCodec(key)
	hostJS, _ := jetstream.New(hostNC, jetstream.WithPublishAsyncMaxPending(4096))
	workerJS, _ := jetstream.New(workerNC)
	var journal idempotency.Journal = idempotency.NewMemory(nil)
	if journalKind == "kv" {
		kv, err := idempotency.NewKV(ctx, workerJS, idempotency.KVConfig{})
		must(b, err)
		journal = kv
	}
	agent, err := workeragent.New(workerNC, workeragent.Config{WorkerID: "bench", Key: key, Journal: journal})
	must(b, err)
	noop := tooltest.Tool(b, toolspec.Spec{Name: "noop", Idempotent: idempotent})
	must(b, agent.HandleTool(noop, workeragent.HandlerFunc(func(context.Context, *workeragent.Call) (workeragent.Output, error) {
		return workeragent.Result("ok"), nil
	}), workeragent.Concurrency(max(window, 1))))
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(runCtx) }()
	defer func() { stop(); <-done }()
	<-agent.Ready()

	// Atomics: the publish orders the write of a start before its read
	// in the callback, but only through the network.
	starts := make([]atomic.Int64, b.N)
	lat := make([]int64, b.N)
	answers := make(chan struct{}, window)
	sub, err := hostNC.Subscribe(fabric.HostEventsSubjects("bench")[0], func(m *nats.Msg) {
		msg, _, err := codec.OpenWorker(m.Header, m.Data)
		if err != nil {
			b.Error(err)
			return
		}
		if msg.Result != nil {
			if i, err := strconv.Atoi(strings.TrimPrefix(msg.Result.RequestID, "r")); err == nil && i < len(lat) {
				lat[i] = time.Now().UnixNano() - starts[i].Load()
			}
		}
		answers <- struct{}{}
	})
	must(b, err)
	defer sub.Unsubscribe()
	subject, _ := fabric.InvokeSubject("noop")
	publish := func(i int) {
		inv := protocol.Invoke{RequestID: "r" + strconv.Itoa(i), Tool: "noop", Input: protocol.TextPayload("x"),
			Attempt: 1, AttemptLimit: 1, IdempotencyKey: "bench/" + strconv.Itoa(i)}
		data, _ := codec.SealInvoke(inv)
		starts[i].Store(time.Now().UnixNano())
		m := data
		m.Subject = subject
		m.Header.Set(fabric.HeaderMsgID, fabric.MsgID(inv.IdempotencyKey, 1))
		m.Header.Set(fabric.HeaderHost, "bench")
		if _, err := hostJS.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	var writes0 uint64
	if journalKind == "kv" {
		writes0 = streamLastSeq(b, ctx, workerJS, "KV_"+idempotency.BucketName)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	start := time.Now()
	sent := 0
	for ; sent < min(window, b.N); sent++ {
		publish(sent)
	}
	for got := 0; got < b.N; got++ {
		select {
		case <-answers:
		case <-time.After(testwait.Scale(30 * time.Second)):
			b.Fatalf("answer %d of %d missing", got, b.N)
		}
		if sent < b.N {
			publish(sent)
			sent++
		}
	}
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	if journalKind == "kv" {
		// A claimed call's Finish may still be in flight when the host
		// has its answer; it has landed once the invocation is acked.
		cons, err := workerJS.Consumer(ctx, fabric.StreamInvoke, fabric.ConsumerName("noop"))
		must(b, err)
		testwait.Until(b, 0, "every invocation acked", func() bool {
			info, err := cons.Info(ctx)
			return err == nil && info.NumAckPending == 0 && info.NumPending == 0
		})
		writes := streamLastSeq(b, ctx, workerJS, "KV_"+idempotency.BucketName) - writes0
		b.ReportMetric(float64(writes)/float64(b.N), "journal_writes/op")
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_µs/op")
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[b.N*50/100])/1e3, "p50_µs")
	b.ReportMetric(float64(lat[min(b.N-1, b.N*99/100)])/1e3, "p99_µs")
}
