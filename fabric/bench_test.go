package fabric_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/internal/natstest"
)

// The raw baselines of the fabric benchmark: no runtime, no journal, no
// authentication. The end-to-end benchmark plugs its own roundTripper into
// the same harness, so every figure is measured the same way in one run.

// roundTripper runs operations for the harness: Submit starts operation id
// and the runner calls the complete function it was built with, from any
// goroutine, when that operation's answer reached the host.
type roundTripper interface {
	Submit(id uint64) error
	Close()
}

// newRunner builds a roundTripper with workers workers that reports each
// finished operation to complete.
type newRunner func(b *testing.B, workers int, complete func(id uint64)) roundTripper

// benchInFlight runs b.N operations through r, keeping at most inFlight
// outstanding, and reports ops/s and the p50/p99 of submit → completion.
func benchInFlight(b *testing.B, inFlight, workers int, mk newRunner) {
	n := b.N
	starts := make([]int64, n)
	lat := make([]int64, n)
	slots := make(chan struct{}, inFlight)
	var finished atomic.Int64
	allDone := make(chan struct{})
	var seen sync.Map
	complete := func(id uint64) {
		if id >= uint64(n) {
			return
		}
		if _, dup := seen.LoadOrStore(id, struct{}{}); dup {
			return
		}
		lat[id] = time.Now().UnixNano() - starts[id]
		<-slots
		if finished.Add(1) == int64(n) {
			close(allDone)
		}
	}
	r := mk(b, workers, complete)
	defer r.Close()
	b.ResetTimer()
	begin := time.Now()
	for i := range n {
		slots <- struct{}{}
		starts[i] = time.Now().UnixNano()
		if err := r.Submit(uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-allDone:
	case <-time.After(2 * time.Minute):
		b.Fatalf("%d of %d operations finished", finished.Load(), n)
	}
	elapsed := time.Since(begin)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[n*50/100])/1e3, "p50_µs")
	b.ReportMetric(float64(lat[min(n-1, n*99/100)])/1e3, "p99_µs")
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

// BenchmarkBaselineCoreReply is baseline (a): publish to a work-queue
// stream, pull, reply on core NATS, plain ack.
func BenchmarkBaselineCoreReply(b *testing.B) { benchMatrix(b, newRawRunner(false)) }

// BenchmarkBaselineDurableReply is baseline (b): as (a), but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored.
func BenchmarkBaselineDurableReply(b *testing.B) { benchMatrix(b, newRawRunner(true)) }

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
		if err != nil {
			b.Fatal(err)
		}
		if _, err := hostJS.CreateStream(ctx, jetstream.StreamConfig{
			Name: "BENCH_JOBS", Subjects: []string{"bench.jobs.>"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
		}); err != nil {
			b.Fatal(err)
		}
		cons, err := hostJS.CreateOrUpdateConsumer(ctx, "BENCH_JOBS", jetstream.ConsumerConfig{
			Durable: "echo", FilterSubject: benchJobSubject, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000,
		})
		if err != nil {
			b.Fatal(err)
		}
		r := &rawRunner{hostJS: hostJS, payload: make([]byte, 256)}
		onResult := func(h nats.Header) {
			id, err := strconv.ParseUint(h.Get(headerJobID), 10, 64)
			if err == nil {
				complete(id)
			}
		}
		if durable {
			if _, err := hostJS.CreateStream(ctx, jetstream.StreamConfig{
				Name: "BENCH_RESULTS", Subjects: []string{"bench.results.>"}, Storage: jetstream.FileStorage,
			}); err != nil {
				b.Fatal(err)
			}
			oc, err := hostJS.OrderedConsumer(ctx, "BENCH_RESULTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{benchReplyTo}})
			if err != nil {
				b.Fatal(err)
			}
			if r.hostCC, err = oc.Consume(func(m jetstream.Msg) { onResult(m.Headers()) }); err != nil {
				b.Fatal(err)
			}
		} else {
			if r.results, err = hostNC.Subscribe(benchReplyTo, func(m *nats.Msg) { onResult(m.Header) }); err != nil {
				b.Fatal(err)
			}
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
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.Consumer(context.Background(), "BENCH_JOBS", consumer)
	if err != nil {
		b.Fatal(err)
	}
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
	if w.cc, err = cons.Consume(handle, jetstream.PullMaxMessages(500)); err != nil {
		b.Fatal(err)
	}
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
