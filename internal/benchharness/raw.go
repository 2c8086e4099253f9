package benchharness

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The raw baselines carry the job id and the reply subject in headers, as
// the fabric's own messages do, so they pay the same header cost.
const (
	benchJobSubject = "bench.jobs.echo"
	benchReplyTo    = "bench.results.h1"
	headerJobID     = "Job-Id"
	headerReplyTo   = "Reply-To"
	// asyncPending is above the largest in-flight bound of [Matrix], so
	// async publishes never stall on the client's window.
	asyncPending = 4096
)

// CoreReply is baseline (a): publish to a work-queue stream, pull, reply on
// core NATS, plain ack. It is a [NewRunner].
func CoreReply(b *testing.B, workers int, complete func(id uint64)) RoundTripper {
	return newRawRunner(b, Security{}, workers, complete, false)
}

// DurableReply is baseline (b): as [CoreReply], but the reply is
// JetStream-published (async) to a results stream the host consumes, and
// the job is acked once the reply is stored. It is a [NewRunner].
func DurableReply(b *testing.B, workers int, complete func(id uint64)) RoundTripper {
	return newRawRunner(b, Security{}, workers, complete, true)
}

// DurableReplyWith is [DurableReply] on a server with sec's protections.
func DurableReplyWith(sec Security) NewRunner {
	return func(b *testing.B, workers int, complete func(id uint64)) RoundTripper {
		return newRawRunner(b, sec, workers, complete, true)
	}
}

type rawRunner struct {
	srv     *benchServer
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

// pendingJobAck holds a job until its durable reply is stored: acking it
// earlier would lose the job if the reply were lost.
type pendingJobAck struct {
	fut jetstream.PubAckFuture
	job jetstream.Msg
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

func newRawRunner(b *testing.B, sec Security, workers int, complete func(uint64), durable bool) *rawRunner {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := startServer(b, sec)
	hostNC := srv.connect()
	hostJS, err := jetstream.New(hostNC, jetstream.WithPublishAsyncMaxPending(asyncPending))
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
	r := &rawRunner{srv: srv, hostJS: hostJS, payload: make([]byte, 256)}
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

func startRawWorker(b *testing.B, srv *benchServer, consumer string, durable bool) rawWorker {
	nc := srv.connect()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(asyncPending))
	must(b, err)
	cons, err := js.Consumer(context.Background(), "BENCH_JOBS", consumer)
	must(b, err)
	w := rawWorker{acks: make(chan pendingJobAck, asyncPending), done: make(chan struct{}), wg: &sync.WaitGroup{}}
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

// Submit publishes job id with a message id, so a retried publish is
// deduplicated by the stream rather than run twice.
func (r *rawRunner) Submit(id uint64) error {
	s := strconv.FormatUint(id, 10)
	m := &nats.Msg{Subject: benchJobSubject, Data: r.payload, Header: nats.Header{
		jetstream.MsgIDHeader: []string{"h1-" + s}, headerJobID: []string{s}, headerReplyTo: []string{benchReplyTo},
	}}
	_, err := r.hostJS.PublishMsgAsync(m)
	return err
}

// Close stops the workers before the host's subscriptions, so no reply is
// in flight to a subscription that is gone; the server itself is stopped
// by natstest's cleanup.
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

func (r *rawRunner) serverMessages() (in, out int64) { return r.srv.serverMessages() }
