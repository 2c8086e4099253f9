package demotools_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// fabricEnv runs one agent with every demo tool and plays the host by
// hand: it seals invocations and reads the worker's chunks and results.
type fabricEnv struct {
	t       *testing.T
	js      jetstream.JetStream
	nc      *nats.Conn
	codec   *fabric.Codec
	agent   *workeragent.Agent
	journal *idempotency.KVJournal
	seq     atomic.Uint64
	chunks  chan protocol.Chunk
	results chan protocol.Result
}

const testHostID = "demo-host"

func newFabricEnv(t *testing.T) *fabricEnv {
	t.Helper()
	env := fabrictest.NewEnv(t)
	srv, nc, js, fcfg := env.Srv, env.NC, env.JS, env.Cfg
	key, err := protocol.GenerateSessionKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	codec := fabrictest.NewCodec(t, key)
	e := &fabricEnv{t: t, js: js, nc: nc, codec: codec,
		chunks: make(chan protocol.Chunk, 64), results: make(chan protocol.Result, 16)}
	ctx, cancel := context.WithTimeout(t.Context(), testwait.Scale(10*time.Second))
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, fabric.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: fabric.HostEventsSubjects(testHostID),
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		msg, _, err := codec.OpenWorker(m.Headers(), m.Data())
		switch {
		case err != nil:
		case msg.Chunk != nil:
			e.chunks <- *msg.Chunk
		case msg.Result != nil:
			e.results <- *msg.Result
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)

	journal, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := workeragent.New(srv.Connect(), workeragent.Config{
		WorkerID: "demo-worker", Key: key, Fabric: fcfg, Journal: journal,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.agent, e.journal = agent, journal
	if err := demotools.Register(agent); err != nil {
		t.Fatal(err)
	}
	if err := demotools.RegisterLedger(agent, js, 1); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := testwait.Receive(t, 30*time.Second, "agent to stop", done); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-agent.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(testwait.DefaultTimeout):
		t.Fatal("agent not ready")
	}
	return e
}

func (e *fabricEnv) invoke(tool, input string) protocol.Invoke {
	n := e.seq.Add(1)
	return protocol.Invoke{
		RequestID: fmt.Sprintf("req-%d", n), Tool: tool, Input: protocol.TextPayload(input),
		CallIndex: n, Attempt: 1, AttemptLimit: 1,
		IdempotencyKey: fmt.Sprintf("session-1/call-%d", n), OutputLimit: 1 << 16,
	}
}

// publish sends inv under msgID; distinct ids get past the stream's
// duplicate window, as a host republishing after a crash would.
func (e *fabricEnv) publish(inv protocol.Invoke, msgID string) {
	e.t.Helper()
	data, err := e.codec.SealInvoke(inv)
	if err != nil {
		e.t.Fatal(err)
	}
	subject, err := fabric.InvokeSubject(inv.Tool)
	if err != nil {
		e.t.Fatal(err)
	}
	m := data
	m.Subject = subject
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	m.Header.Set(fabric.HeaderHost, testHostID)
	if _, err := e.js.PublishMsg(e.t.Context(), m); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fabricEnv) result() protocol.Result {
	e.t.Helper()
	return testwait.Receive(e.t, 0, "result", e.results)
}

// TestAgentStream runs demo.stream through a real chunk writer: it stops
// at the invocation's chunk limit and says how far it got.
func TestAgentStream(t *testing.T) {
	e := newFabricEnv(t)
	inv := e.invoke(demotools.Stream, "40")
	inv.Stream = &protocol.StreamLimits{
		MaxChunks: demotools.StreamMaxChunks, MaxChunkBytes: demotools.StreamMaxChunkBytes,
		MaxSourceBytes: demotools.StreamMaxSourceBytes, MaxReleasedBytes: demotools.StreamMaxReleasedBytes,
	}
	e.publish(inv, inv.IdempotencyKey+"/1")
	r := e.result()
	if r.Status != protocol.ResultSucceeded || r.Payload == nil || r.Payload.Text != "streamed 32 chunks" {
		t.Fatalf("result %+v", r)
	}
	var secret bool
	for i := 1; i <= demotools.StreamMaxChunks; i++ {
		c := testwait.Receive(t, 0, "chunk", e.chunks)
		// Redaction is the host's: the worker sends the secret as is.
		secret = secret || strings.Contains(c.Text, demotools.Secret)
	}
	if !secret {
		t.Fatal("no chunk carried the secret")
	}
}

// TestAgentLedgerOnce delivers one ledger call twice: the journal must
// answer the second copy from its record instead of running the effect
// again.
func TestAgentLedgerOnce(t *testing.T) {
	e := newFabricEnv(t)
	inv := e.invoke(demotools.Ledger, "")
	e.publish(inv, inv.IdempotencyKey+"/1")
	if r := e.result(); r.Status != protocol.ResultSucceeded || r.Payload == nil || r.Payload.Text != "1" {
		t.Fatalf("result %+v", r)
	}
	// A claimed call's answer is published before its result is stored
	// (Finish): a copy that came now would meet the claim still running
	// and be put back until the lease ran out. The case under test is a
	// copy that finds the result, so it is sent once the journal holds it.
	testwait.Until(t, 0, "result stored", func() bool {
		rec, err := e.journal.Get(t.Context(), inv.IdempotencyKey)
		return err == nil && rec.State == idempotency.StateDone
	})
	e.publish(inv, inv.IdempotencyKey+"/1-republished")
	testwait.Until(t, 0, "second copy replayed", func() bool { return e.agent.Stats().DedupeHits == 1 })
	counts, err := demotools.LedgerCounts(t.Context(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[inv.IdempotencyKey] != 1 {
		t.Fatalf("counts %v, want %s: 1", counts, inv.IdempotencyKey)
	}
}
