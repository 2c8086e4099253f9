package workeragent_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env plays the host by hand: it provisions the fabric, seals and publishes
// invocations and cancellations, and reads the answers.
type env struct {
	t      *testing.T
	srv    *natstest.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	fcfg   fabric.Config
	key    protocol.SessionKey
	codec  *fabric.Codec
	hostID string
	seq    atomic.Uint64
	// forgeries lets the events consumer skip frames that fail to open,
	// for a test that stores forgeries on answer subjects.
	forgeries atomic.Bool

	results      chan protocol.Result
	dispositions chan protocol.CancelReply
	chunks       chan protocol.Chunk
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := natstest.Start(t)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	must(t, err)
	key, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	e := &env{
		t: t, srv: srv, nc: nc, js: js, key: key, hostID: "h1",
		fcfg:         testFabricConfig(),
		results:      make(chan protocol.Result, 64),
		dispositions: make(chan protocol.CancelReply, 64),
		chunks:       make(chan protocol.Chunk, 64),
	}
	e.codec, err = fabric.NewCodec(key)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	must(t, fabric.Provision(ctx, js, e.fcfg))

	cons, err := js.OrderedConsumer(ctx, fabric.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: fabric.HostEventsSubjects(e.hostID),
	})
	must(t, err)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		msg, _, err := e.codec.OpenWorker(m.Headers(), m.Data())
		switch {
		case err != nil && e.forgeries.Load():
		case err != nil:
			t.Errorf("event frame: %v", err)
		case msg.Chunk != nil:
			e.chunks <- *msg.Chunk
		case msg.Result != nil:
			e.results <- *msg.Result
		case msg.CancelDisp != nil:
			e.dispositions <- *msg.CancelDisp
		default:
			t.Errorf("unexpected event %+v", msg)
		}
	})
	must(t, err)
	t.Cleanup(cc.Stop)
	return e
}

func testFabricConfig() fabric.Config {
	c := fabric.DefaultConfig()
	// A crashed worker's call comes back within a second.
	c.AckWait = time.Second
	return c
}

// config is an agent's configuration with its journal on nc, so closing nc
// takes the whole worker down as a crash would.
func (e *env) config(id string, nc *nats.Conn) workeragent.Config {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	js, err := jetstream.New(nc)
	must(e.t, err)
	j, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{})
	must(e.t, err)
	return workeragent.Config{
		WorkerID: id, Key: e.key, Fabric: e.fcfg, Journal: j,
		LeaseDuration: time.Second, HeartbeatInterval: 200 * time.Millisecond, DrainGrace: 5 * time.Second,
	}
}

// running is an agent whose Run goroutine the test owns.
type running struct {
	*workeragent.Agent
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan error
}

func (r *running) stop() { r.cancel() }

// err waits for Run to return and reports its error; it may be called
// more than once.
func (r *running) err(t *testing.T) error {
	t.Helper()
	err := testwait.Receive(t, 0, "Run to return", r.done)
	r.done <- err
	return err
}

func (e *env) startAgent(id string, register func(*workeragent.Agent)) *running {
	return e.startAgentWith(id, nil, register)
}

func (e *env) startAgentConn(id string, nc *nats.Conn, register func(*workeragent.Agent)) *running {
	return e.start(id, nc, nil, register)
}

func (e *env) startAgentWith(id string, mutate func(*workeragent.Config), register func(*workeragent.Agent)) *running {
	return e.start(id, e.srv.Connect(), mutate, register)
}

func (e *env) start(id string, nc *nats.Conn, mutate func(*workeragent.Config), register func(*workeragent.Agent)) *running {
	e.t.Helper()
	cfg := e.config(id, nc)
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := workeragent.New(nc, cfg)
	must(e.t, err)
	register(a)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Agent: a, nc: nc, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			r.done <- err
		case <-time.After(testwait.Scale(30 * time.Second)):
			e.t.Errorf("agent %s did not stop", id)
		}
	})
	// Wait until the agent pulls, so a test's first publish is not
	// racing the consumer's creation.
	select {
	case <-a.Ready():
	case err := <-r.done:
		e.t.Fatalf("agent %s: Run = %v", id, err)
	case <-time.After(testwait.DefaultTimeout):
		e.t.Fatalf("agent %s not ready", id)
	}
	return r
}

func (e *env) newInvoke(tool, input string) protocol.Invoke {
	n := e.seq.Add(1)
	return protocol.Invoke{
		RequestID:      "req-" + strconv.FormatUint(n, 10),
		Tool:           tool,
		Input:          protocol.TextPayload(input),
		CallIndex:      n,
		Attempt:        1,
		AttemptLimit:   3,
		IdempotencyKey: fmt.Sprintf("session-1/call-%d", n),
		OutputLimit:    1 << 16,
	}
}

func (e *env) publish(inv protocol.Invoke) {
	e.publishAs(inv, fmt.Sprintf("%s/%d", inv.IdempotencyKey, inv.Attempt))
}

func (e *env) publishAs(inv protocol.Invoke, msgID string) {
	e.t.Helper()
	e.publishSealed(e.codec, inv, msgID)
}

func (e *env) publishForged(inv protocol.Invoke) {
	e.t.Helper()
	other, err := protocol.GenerateSessionKey(rand.Reader)
	must(e.t, err)
	c, err := fabric.NewCodec(other)
	must(e.t, err)
	m, err := c.SealInvoke(inv)
	must(e.t, err)
	// Under the id of the worker's key, so the tag is what fails.
	m.Header.Set(fabric.HeaderKey, protocol.KeyIDOf(e.key))
	m.Subject, err = fabric.InvokeSubject(inv.Tool)
	must(e.t, err)
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s/%d", inv.IdempotencyKey, inv.Attempt))
	m.Header.Set(fabric.HeaderHost, e.hostID)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	_, err = e.js.PublishMsg(ctx, m)
	must(e.t, err)
}

func (e *env) publishSealed(c *fabric.Codec, inv protocol.Invoke, msgID string) {
	e.t.Helper()
	data, err := c.SealInvoke(inv)
	must(e.t, err)
	subject, err := fabric.InvokeSubject(inv.Tool)
	must(e.t, err)
	m := data
	m.Subject = subject
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	m.Header.Set(fabric.HeaderHost, e.hostID)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	_, err = e.js.PublishMsg(ctx, m)
	must(e.t, err)
}

// cancel asks to cancel inv; record also writes the cancel record that a
// worker checks at pickup.
func (e *env) cancel(inv protocol.Invoke, record bool) {
	e.t.Helper()
	c := protocol.Cancel{RequestID: inv.RequestID, Tool: inv.Tool, Attempt: inv.Attempt, IdempotencyKey: inv.IdempotencyKey}
	m, err := e.codec.SealCancel(c)
	must(e.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	if record {
		data, err := e.codec.SealCancelRecord(c)
		must(e.t, err)
		kv, err := fabric.CancelBucket(ctx, e.js)
		must(e.t, err)
		_, err = kv.Put(ctx, fabric.CancelKey(inv.Tool, inv.RequestID), data)
		must(e.t, err)
	}
	m.Subject = fabric.CancelSubject(inv.Tool)
	must(e.t, e.nc.PublishMsg(m))
	must(e.t, e.nc.Flush())
}

func (e *env) result(t *testing.T) protocol.Result {
	t.Helper()
	return testwait.Receive(t, 0, "result", e.results)
}

func (e *env) disposition(t *testing.T) protocol.CancelReply {
	t.Helper()
	return testwait.Receive(t, 0, "cancel disposition", e.dispositions)
}

// pending counts the tool's invocations still in the work queue.
func (e *env) pending(t *testing.T, tool string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	s, err := e.js.Stream(ctx, fabric.StreamInvoke)
	must(t, err)
	subject, err := fabric.InvokeSubject(tool)
	must(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	must(t, err)
	return info.State.Msgs
}
