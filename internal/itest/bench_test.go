package itest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/workeragent"
)

// The end-to-end benchmark and, in the same run, the two raw JetStream
// baselines (no runtime, no journal, no authentication). The raw runners
// are the ones of fabric/bench_test.go; the harness here submits from
// several goroutines (see benchInFlight), and every runner of this file
// goes through the same harness, so every figure is measured the same way.
//
//	go test -run '^$' -bench . -benchtime 3000x ./internal/itest/

// roundTripper runs operations for the harness: Submit starts operation id
// and the runner calls the complete function it was built with, from any
// goroutine, when that operation's answer reached the host.
type roundTripper interface {
	Submit(id uint64) error
	Close()
}

// submitters bounds the goroutines that submit operations.
const submitters = 4

type newRunner func(b *testing.B, workers int, complete func(id uint64)) roundTripper

// benchInFlight runs b.N operations through r, keeping at most inFlight
// outstanding, and reports ops/s and the p50/p99 of submit → completion.
//
// Up to submitters goroutines submit, each taking a slot before it starts
// an operation: a script's first step is evaluated on the submitting
// goroutine (as it is for concurrent API callers), so one submitter alone
// would measure how fast one goroutine evaluates scripts, not whether the
// path keeps inFlight operations moving.
func benchInFlight(b *testing.B, inFlight, workers int, mk newRunner) {
	n := b.N
	starts := make([]int64, n)
	lat := make([]int64, n)
	slots := make(chan struct{}, inFlight)
	var finished atomic.Int64
	allDone := make(chan struct{})
	var failed sync.Once
	quit := make(chan struct{}) // ends the submitters early on failure
	fail := func() { failed.Do(func() { close(quit) }) }
	var seen sync.Map
	complete := func(id uint64) {
		if id >= uint64(n) {
			return
		}
		if _, dup := seen.LoadOrStore(id, struct{}{}); dup {
			return
		}
		lat[id] = time.Now().UnixNano() - atomic.LoadInt64(&starts[id])
		<-slots
		if finished.Add(1) == int64(n) {
			close(allDone)
		}
	}
	r := mk(b, workers, complete)
	defer r.Close()
	b.ResetTimer()
	cpu0 := processCPU()
	begin := time.Now()
	var next atomic.Int64
	var submitErr atomic.Pointer[error]
	var submitting sync.WaitGroup
	defer submitting.Wait()
	defer fail()
	for range min(inFlight, submitters) {
		submitting.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || submitErr.Load() != nil {
					return
				}
				select {
				case slots <- struct{}{}:
				case <-quit:
					return
				}
				atomic.StoreInt64(&starts[i], time.Now().UnixNano())
				if err := r.Submit(uint64(i)); err != nil {
					submitErr.CompareAndSwap(nil, &err)
					fail()
					return
				}
			}
		})
	}
	select {
	case <-allDone:
	case <-quit:
	case <-time.After(2 * time.Minute):
		b.Fatalf("%d of %d operations finished", finished.Load(), n)
	}
	elapsed := time.Since(begin)
	cpu := processCPU() - cpu0
	b.StopTimer()
	if err := submitErr.Load(); err != nil {
		b.Fatal(*err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[n*50/100])/1e3, "p50_µs")
	b.ReportMetric(float64(lat[min(n-1, n*99/100)])/1e3, "p99_µs")
	// CPU per operation (this process, which includes the in-process
	// server) is steadier than ops/s on a shared machine, and it says
	// whether a run was bound by CPU or by waiting.
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu_µs/op")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores")
}

// processCPU is the user and system time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchMatrix(b *testing.B, mk newRunner) {
	for _, inFlight := range []int{1, 64, 512} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("inflight=%d/workers=%d", inFlight, workers), func(b *testing.B) {
				benchInFlight(b, inFlight, workers, mk)
			})
		}
	}
}

// BenchmarkEndToEnd is the whole path: each operation is one script
// session, `await tool.start("bench.noop", id)`, submitted through
// Loop.Submit; the loop claims and publishes the sealed invocation, a
// worker agent pulls it, consults its KV journal, runs a no-op handler,
// stores the result and publishes the sealed terminal event; the host
// transport verifies it and the loop completes the script. Completion is
// observed through the loop's Observer. It therefore includes creating a
// runtime and a script VM per operation: a per-operation cost a real
// submission pays too.
func BenchmarkEndToEnd(b *testing.B) { benchMatrix(b, newFabricRunner) }

// BenchmarkBaselineCoreReply is baseline (a): publish to a work-queue
// stream, pull, reply on core NATS, plain ack.
func BenchmarkBaselineCoreReply(b *testing.B) { benchMatrix(b, newRawRunner(false)) }

// BenchmarkBaselineDurableReply is baseline (b): as (a), but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored.
func BenchmarkBaselineDurableReply(b *testing.B) { benchMatrix(b, newRawRunner(true)) }

type fabricRunner struct {
	c *cluster
}

func newFabricRunner(b *testing.B, workers int, complete func(uint64)) roundTripper {
	c := newCluster(b, options{tools: []hostTool{tool("bench.noop")}, eventBuffer: 4096})
	c.obs.onFinal = func(s host.SessionStatus) {
		if id, err := strconv.ParseUint(s.Value, 10, 64); err == nil && s.State == host.SessionCompleted {
			complete(id)
		}
	}
	for i := range workers {
		c.startWorker(fmt.Sprintf("w%d", i+1), func(a *workeragent.Agent) {
			must(b, a.Handle("bench.noop", workeragent.HandlerFunc(echo), workeragent.Concurrency(256)))
		})
	}
	return &fabricRunner{c: c}
}

func (r *fabricRunner) Submit(id uint64) error {
	_, err := r.c.loop.Submit(context.Background(), host.Submission{
		Source: `const r = await tool.start("bench.noop", "` + strconv.FormatUint(id, 10) + `"); r`,
	})
	return err
}

// Close leaves teardown to the cluster's cleanups.
func (r *fabricRunner) Close() {}

const (
	benchJobSubject = "bench.jobs.echo"
	benchReplyTo    = "bench.results.h1"
	headerJobID     = "Job-Id"
	headerReplyTo   = "Reply-To"
)

type rawRunner struct {
	hostJS  jetstream.JetStream
	results *nats.Subscription
	hostCC  jetstream.ConsumeContext
	workers []rawWorker
	payload []byte
}

type rawWorker struct {
	cc   jetstream.ConsumeContext
	acks chan pendingJobAck
	done chan struct{}
	wg   *sync.WaitGroup
}

type pendingJobAck struct {
	fut jetstream.PubAckFuture
	job jetstream.Msg
}

func newRawRunner(durable bool) newRunner {
	return func(b *testing.B, workers int, complete func(uint64)) roundTripper {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv := natstest.Start(b)
		hostNC := srv.Connect()
		hostJS, err := jetstream.New(hostNC, jetstream.WithPublishAsyncMaxPending(4096))
		must(b, err)
		_, err = hostJS.CreateStream(ctx, jetstream.StreamConfig{
			Name: "BENCH_JOBS", Subjects: []string{"bench.jobs.>"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
		})
		must(b, err)
		cons, err := hostJS.CreateOrUpdateConsumer(ctx, "BENCH_JOBS", jetstream.ConsumerConfig{
			Durable: "echo", FilterSubject: benchJobSubject, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000,
		})
		must(b, err)
		r := &rawRunner{hostJS: hostJS, payload: make([]byte, 256)}
		onResult := func(h nats.Header) {
			id, err := strconv.ParseUint(h.Get(headerJobID), 10, 64)
			if err == nil {
				complete(id)
			}
		}
		if durable {
			_, err = hostJS.CreateStream(ctx, jetstream.StreamConfig{
				Name: "BENCH_RESULTS", Subjects: []string{"bench.results.>"}, Storage: jetstream.FileStorage,
			})
			must(b, err)
			oc, err := hostJS.OrderedConsumer(ctx, "BENCH_RESULTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{benchReplyTo}})
			must(b, err)
			r.hostCC, err = oc.Consume(func(m jetstream.Msg) { onResult(m.Headers()) })
			must(b, err)
		} else {
			r.results, err = hostNC.Subscribe(benchReplyTo, func(m *nats.Msg) { onResult(m.Header) })
			must(b, err)
		}
		for range workers {
			r.workers = append(r.workers, startRawWorker(b, srv, cons.CachedInfo().Name, durable))
		}
		return r
	}
}

func startRawWorker(b *testing.B, srv *natstest.Server, consumer string, durable bool) rawWorker {
	nc := srv.Connect()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	must(b, err)
	cons, err := js.Consumer(context.Background(), "BENCH_JOBS", consumer)
	must(b, err)
	w := rawWorker{acks: make(chan pendingJobAck, 4096), done: make(chan struct{}), wg: &sync.WaitGroup{}}
	handle := func(m jetstream.Msg) {
		reply := &nats.Msg{Subject: m.Headers().Get(headerReplyTo), Data: m.Data(), Header: nats.Header{headerJobID: m.Headers()[headerJobID]}}
		if !durable {
			_ = nc.PublishMsg(reply)
			_ = m.Ack()
			return
		}
		reply.Header.Set(jetstream.MsgIDHeader, "r-"+reply.Header.Get(headerJobID))
		fut, err := js.PublishMsgAsync(reply)
		if err != nil {
			_ = m.Nak()
			return
		}
		select {
		case w.acks <- pendingJobAck{fut: fut, job: m}:
		case <-w.done:
		}
	}
	if durable {
		w.wg.Go(func() {
			for {
				select {
				case p := <-w.acks:
					select {
					case <-p.fut.Ok():
						_ = p.job.Ack()
					case <-p.fut.Err():
						_ = p.job.Nak()
					case <-w.done:
						return
					}
				case <-w.done:
					return
				}
			}
		})
	}
	w.cc, err = cons.Consume(handle, jetstream.PullMaxMessages(500))
	must(b, err)
	return w
}

func (r *rawRunner) Submit(id uint64) error {
	s := strconv.FormatUint(id, 10)
	m := &nats.Msg{Subject: benchJobSubject, Data: r.payload, Header: nats.Header{
		jetstream.MsgIDHeader: []string{"h1-" + s}, headerJobID: []string{s}, headerReplyTo: []string{benchReplyTo},
	}}
	_, err := r.hostJS.PublishMsgAsync(m)
	return err
}

func (r *rawRunner) Close() {
	for _, w := range r.workers {
		w.cc.Stop()
		<-w.cc.Closed()
		close(w.done)
		w.wg.Wait()
	}
	if r.hostCC != nil {
		r.hostCC.Stop()
		<-r.hostCC.Closed()
	}
	if r.results != nil {
		_ = r.results.Unsubscribe()
	}
}

// TestJetStreamWritesPerOperation counts the stream writes one successful
// operation costs, from the sequence deltas of every stream it touches:
// the invocation (SPLASH_INVOKE), the terminal event (SPLASH_EVENTS) and
// the journal's claim and result (KV_splash_idempotency). A cancel-free
// call writes no cancel record. Acks update consumer state, not streams,
// so they do not show here.
func TestJetStreamWritesPerOperation(t *testing.T) {
	const ops = 20
	c := newCluster(t, options{tools: []hostTool{tool("bench.noop")}})
	c.startWorker("w1", func(a *workeragent.Agent) { must(t, a.Handle("bench.noop", workeragent.HandlerFunc(echo))) })
	streams := []struct {
		name string
		want uint64
	}{
		{fabric.StreamInvoke, 1},
		{fabric.StreamEvents, 1},
		{"KV_" + idempotency.BucketName, 2},
		{"KV_" + fabric.BucketCancel, 0},
	}
	before := make([]uint64, len(streams))
	for i, s := range streams {
		before[i] = c.streamSeq(s.name)
	}
	for i := range ops {
		wantCompleted(t, c.wait(c.submit(sprintf(`const r = await tool.start("bench.noop", "%d"); r`, i)), 0), strconv.Itoa(i))
	}
	for i, s := range streams {
		delta := c.streamSeq(s.name) - before[i]
		t.Logf("%s: %d writes for %d operations", s.name, delta, ops)
		if delta != s.want*ops {
			t.Errorf("%s: %d writes for %d operations, want %d each", s.name, delta, ops, s.want)
		}
	}
}

// BenchmarkSessionOnly is the host-side share of BenchmarkEndToEnd without
// NATS: a fresh runtime with the catalog, the script's Eval, claim and
// completion, as the loop does once per submitted script.
func BenchmarkSessionOnly(b *testing.B) {
	c := &cluster{opts: options{tools: []hostTool{tool("bench.noop")}}}
	b.ReportAllocs()
	for b.Loop() {
		rt := host.NewRuntime(host.Config{})
		must(b, c.catalog(rt))
		res, err := rt.Eval(`const r = await tool.start("bench.noop", "1"); r`)
		if err != nil || !res.Suspended {
			b.Fatalf("Eval: %+v, %v", res, err)
		}
		inv, _ := rt.ClaimNextExternalTool()
		if res, err := rt.CompleteExternalTool(inv.ID, host.Ok("1")); err != nil || !res.Completed() {
			b.Fatalf("complete: %+v, %v", res, err)
		}
	}
}
