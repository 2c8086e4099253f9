package hostnats_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// oldEventsConsumer creates durable as a host of earlier versions did:
// one filter, narrower than today's (one tool's events subject of host).
func oldEventsConsumer(t *testing.T, env *fabrictest.Env, durable, host string) jetstream.Consumer {
	t.Helper()
	cons, err := env.JS.CreateOrUpdateConsumer(fabrictest.Ctx(t), fabric.StreamEvents, jetstream.ConsumerConfig{
		Durable:       durable,
		FilterSubject: fabric.EventsSubject(host, fabrictest.Tool),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       env.Cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: env.Cfg.MaxAckPending,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

func wantFilters(t *testing.T, env *fabrictest.Env, durable, host string) {
	t.Helper()
	cons, err := env.JS.Consumer(fabrictest.Ctx(t), fabric.StreamEvents, durable)
	if err != nil {
		t.Fatal(err)
	}
	got := cons.CachedInfo().Config
	if got.FilterSubject != "" || !slices.Equal(got.FilterSubjects, fabric.HostEventsSubjects(host)) {
		t.Fatalf("%s filters %q %q, want %q", durable, got.FilterSubject, got.FilterSubjects, fabric.HostEventsSubjects(host))
	}
}

// publishAnswer JetStream-publishes frame on the answer subject of key
// under host, as a worker answering an Idempotent call would.
func publishAnswer(t *testing.T, env *fabrictest.Env, host, key string, frame *nats.Msg) {
	t.Helper()
	frame.Subject = fabric.AnswerSubject(host, fabrictest.Tool, key)
	frame.Header.Set(fabric.HeaderTool, fabrictest.Tool)
	if _, err := env.JS.PublishMsg(fabrictest.Ctx(t), frame); err != nil {
		t.Fatal(err)
	}
}

// TestEventsConsumerReadsAnswerSubjects: a host's durable made with the
// single filter of earlier versions gets both filters in place, and the
// host reads a call's chunk from its events subject and then the answer
// from the operation's answer subject, in stream order.
func TestEventsConsumerReadsAnswerSubjects(t *testing.T) {
	env := fabrictest.NewEnv(t)
	oldEventsConsumer(t, env, "host_h1", "h1")
	tr := newTransport(t, env, "h1")
	wantFilters(t, env, "host_h1", "h1")

	c := fabrictest.NewCodec(t, fabrictest.Key)
	chunk, err := c.SealWorker("req-1", 1, 1, protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1, Text: "c"}))
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, env, "h1", fabrictest.NewCodec(t, fabrictest.Key).ChunkMsgID("req-1", 1, 1), chunk)
	publishAnswer(t, env, "h1", "key-req-1", sealResult(t, "req-1", 1, 2))
	if ev := testwait.Receive(t, 0, "chunk", tr.Events()); ev.Message.Chunk == nil {
		t.Fatalf("first event = %+v, want the chunk", ev)
	}
	if ev := testwait.Receive(t, 0, "answer", tr.Events()); ev.Message.Result == nil || ev.Message.Result.RequestID != "req-1" {
		t.Fatalf("second event = %+v, want the answer", ev)
	}
}

// TestAdoptedEventsReadAnswerSubjects: an adopter's durable that exists
// already, with the single filter of earlier versions and a start position
// of its own, keeps that position and gets both filters in place; answers
// on the adopted host's answer subjects reach the adopter.
func TestAdoptedEventsReadAnswerSubjects(t *testing.T) {
	env := fabrictest.NewEnv(t)
	// The adopted host's own durable has acked a first event, so the
	// adopter's config starts past it, which an existing durable refuses
	// to change to.
	own := oldEventsConsumer(t, env, "host_h0", "h0")
	publishEvent(t, env, "h0", fabrictest.NewCodec(t, fabrictest.Key).EventMsgID("req-0", 1, protocol.KindResult), sealResult(t, "req-0", 1, 1))
	m, err := own.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(fabrictest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	oldEventsConsumer(t, env, "adopt_h0_by_h1", "h0")

	tr := newTransport(t, env, "h1")
	if err := tr.AdoptEvents(fabrictest.Ctx(t), "h0"); err != nil {
		t.Fatal(err)
	}
	wantFilters(t, env, "adopt_h0_by_h1", "h0")
	// The existing durable kept its position (DeliverAll): it reads the
	// first event again, then the answer.
	if ev := testwait.Receive(t, 0, "first event", tr.Events()); ev.Message.Result == nil || ev.Message.Result.RequestID != "req-0" {
		t.Fatalf("event = %+v, want req-0's result", ev)
	}
	publishAnswer(t, env, "h0", "key-req-2", sealResult(t, "req-2", 1, 1))
	if ev := testwait.Receive(t, 0, "adopted answer", tr.Events()); ev.Message.Result == nil || ev.Message.Result.RequestID != "req-2" {
		t.Fatalf("event = %+v, want req-2's answer", ev)
	}
}
