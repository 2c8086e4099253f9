package hostnats_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

func newTransport(t *testing.T, env *fabrictest.Env, hostID string, opts ...hostnats.Option) *hostnats.HostTransport {
	t.Helper()
	tr, err := hostnats.NewHostTransport(fabrictest.Ctx(t), env.NC, env.Cfg, hostID, fabrictest.Key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// publishEvent JetStream-publishes frame to host's events subject as a
// worker would, and waits for it to be stored.
func publishEvent(t *testing.T, env *fabrictest.Env, hostID, msgID string, frame *nats.Msg) {
	t.Helper()
	m := nats.NewMsg(fabric.EventsSubject(hostID, fabrictest.Tool))
	for k, v := range frame.Header {
		m.Header[k] = v
	}
	m.Header.Set(fabric.HeaderTool, fabrictest.Tool)
	m.Data = frame.Data
	m.Header.Set(fabric.HeaderMsgID, msgID)
	m.Header.Set(fabric.HeaderWorker, "w1")
	if _, err := env.JS.PublishMsg(fabrictest.Ctx(t), m); err != nil {
		t.Fatal(err)
	}
}

func sealResult(t *testing.T, req string, attempt, k uint32) *nats.Msg {
	t.Helper()
	data, err := fabrictest.NewCodec(t, fabrictest.Key).SealWorker(req, attempt, k, protocol.ResultMessage(fabrictest.Result(req, attempt)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPublishStoresSealedInvocationWithHeaders(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	cons, err := fabric.EnsureToolConsumer(fabrictest.Ctx(t), env.JS, env.Cfg, "text.remote")
	if err != nil {
		t.Fatal(err)
	}
	inv := fabrictest.Invoke("req-1", 1)
	if err := tr.Publish(fabrictest.Ctx(t), inv); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Headers().Get(fabric.HeaderMsgID); got != "key-req-1/1" {
		t.Fatalf("Nats-Msg-Id = %q", got)
	}
	if got := m.Headers().Get(fabric.HeaderHost); got != "h1" {
		t.Fatalf("Splash-Host = %q", got)
	}
	got, err := fabrictest.NewCodec(t, fabrictest.Key).OpenInvoke(m.Headers(), m.Data())
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "req-1" || got.Attempt != 1 {
		t.Fatalf("invocation = %+v", got)
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}
}

func TestRepublishOfSameAttemptIsDeduplicated(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	ctx := fabrictest.Ctx(t)
	for _, attempt := range []uint32{1, 1, 2, 2} {
		if err := tr.Publish(ctx, fabrictest.Invoke("req-1", attempt)); err != nil {
			t.Fatal(err)
		}
	}
	// The server handles one connection's publishes in order, so once a
	// later synchronous publish is stored, the four above are decided.
	if _, err := env.JS.Publish(ctx, "splash.invoke.sentinel", []byte("x")); err != nil {
		t.Fatal(err)
	}
	s, err := env.JS.Stream(ctx, fabric.StreamInvoke)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Fatalf("messages on stream = %d, want 2 attempts + sentinel", info.State.Msgs)
	}
}

func TestPublishRejectsBadInvocationsAndSendsNothing(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	tests := []struct {
		name    string
		mutate  func(*protocol.Invoke)
		wantErr error
	}{
		{"bad tool", func(inv *protocol.Invoke) { inv.Tool = "a.*" }, protocol.ErrInvalidToolName},
		{"empty tool", func(inv *protocol.Invoke) { inv.Tool = "" }, protocol.ErrInvalidToolName},
		{"attempt zero", func(inv *protocol.Invoke) { inv.Attempt = 0 }, fabric.ErrInvalidAttempt},
		{"no key", func(inv *protocol.Invoke) { inv.IdempotencyKey = "" }, protocol.ErrInvalidMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := fabrictest.Invoke("req-1", 1)
			tt.mutate(&inv)
			fabrictest.WantErrIs(t, tr.Publish(fabrictest.Ctx(t), inv), tt.wantErr)
		})
	}
	s, _ := env.JS.Stream(fabrictest.Ctx(t), fabric.StreamInvoke)
	info, err := s.Info(fabrictest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("messages after rejected publishes = %d", info.State.Msgs)
	}
}

func TestPublishFailureComesBackAsEvent(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	if err := env.JS.DeleteStream(fabrictest.Ctx(t), fabric.StreamInvoke); err != nil {
		t.Fatal(err)
	}
	inv := fabrictest.Invoke("req-1", 1)
	if err := tr.Publish(fabrictest.Ctx(t), inv); err != nil {
		t.Fatal(err)
	}
	ev := testwait.Receive(t, 0, "publish failure", tr.Events())
	if ev.Kind != hostloop.EventPublishFailed || ev.Invoke.RequestID != "req-1" || ev.Err == nil {
		t.Fatalf("event = %+v", ev)
	}
}

func TestWorkerEventsAndChunksReachEvents(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	c := fabrictest.NewCodec(t, fabrictest.Key)
	for k := uint32(1); k <= 3; k++ {
		data, err := c.SealWorker("req-1", 1, k, protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: uint64(k), Text: "c"}))
		if err != nil {
			t.Fatal(err)
		}
		publishEvent(t, env, "h1", fabrictest.NewCodec(t, fabrictest.Key).ChunkMsgID("req-1", 1, k), data)
	}
	for k := uint64(1); k <= 3; k++ {
		ev := testwait.Receive(t, 0, "chunk", tr.Events())
		if ev.Kind != hostloop.EventMessage || ev.Message.Chunk == nil || ev.Message.Chunk.Sequence != k {
			t.Fatalf("event %d = %+v", k, ev)
		}
	}
	publishEvent(t, env, "h1", fabrictest.NewCodec(t, fabrictest.Key).EventMsgID("req-1", 1, protocol.KindResult), sealResult(t, "req-1", 1, 4))
	ev := testwait.Receive(t, 0, "result", tr.Events())
	if ev.Message.Result == nil || ev.Worker != "w1" {
		t.Fatalf("event = %+v", ev)
	}
}

func TestForgedFramesAreRejectedAndCounted(t *testing.T) {
	env := fabrictest.NewEnv(t)
	var mu sync.Mutex
	hooked := map[string]int{}
	tr := newTransport(t, env, "h1", hostnats.WithRejectHandler(func(reason, _ string, err error) {
		if !errors.Is(err, fabric.ErrForged) {
			t.Errorf("reject %s: %v does not wrap ErrForged", reason, err)
		}
		mu.Lock()
		hooked[reason]++
		mu.Unlock()
	}))
	res := protocol.ResultMessage(fabrictest.Result("req-1", 1))
	chunk := protocol.ChunkMessage(protocol.Chunk{RequestID: "req-1", Sequence: 1, Text: "c"})
	good := sealResult(t, "req-1", 1, 2)
	events := []struct {
		name string
		data *nats.Msg
	}{
		{"no tag", fabric.FrameMsg(protocol.Frame{SessionID: "req-1", Role: protocol.RoleWorker, Sequence: 4294967297, Message: []byte(`{"kind":"result"}`)})},
		{"garbage", &nats.Msg{Data: []byte("not json")}},
		{"wrong key", fabrictest.Frame(t, fabrictest.OtherKey, "req-1", protocol.RoleWorker, fabric.WorkerSeq(1, 1), res)},
		{"host role", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleHost, fabric.WorkerSeq(1, 1), res)},
		{"tampered", fabrictest.Tamper(fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, fabric.WorkerSeq(1, 1),
			protocol.ResultMessage(protocol.Result{RequestID: "req-1", Attempt: 1, Status: protocol.ResultFailed, Error: "hello"})))},
		{"good", good},
		{"replayed", good},
		{"chunk after its result", fabrictest.Frame(t, fabrictest.Key, "req-1", protocol.RoleWorker, fabric.WorkerSeq(1, 1), chunk)},
	}
	for i, e := range events {
		publishEvent(t, env, "h1", "forged-"+string(rune('a'+i)), e.data)
	}
	ev := testwait.Receive(t, 0, "the good result", tr.Events())
	if ev.Message.Result == nil || ev.Message.Result.RequestID != "req-1" || ev.Ack == nil {
		t.Fatalf("event = %+v", ev)
	}
	// The loop acks what it took once it is stored.
	ev.Ack()
	want := map[string]uint64{
		hostnats.RejectMalformed: 2,
		hostnats.RejectBadTag:    2,
		hostnats.RejectWrongRole: 1,
		hostnats.RejectReplayed:  2,
	}
	testwait.Until(t, 0, "all rejections counted", func() bool { return total(tr.Rejected()) == total(want) })
	got := tr.Rejected()
	for reason, n := range want {
		if got[reason] != n {
			t.Fatalf("Rejected() = %v, want %v", got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for reason, n := range want {
		if uint64(hooked[reason]) != n {
			t.Fatalf("handler saw %v, want %v", hooked, want)
		}
	}
	select {
	case ev := <-tr.Events():
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
	// Rejected frames were taken off the stream: none waits for redelivery.
	cons, err := env.JS.Consumer(fabrictest.Ctx(t), fabric.StreamEvents, "host_h1")
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 0, "events acked", func() bool {
		info, err := cons.Info(fabrictest.Ctx(t))
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
}

func total(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func TestEventPublishedWhileHostAwayIsDeliveredOnReturn(t *testing.T) {
	env := fabrictest.NewEnv(t)
	first := newTransport(t, env, "h1")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-first.Events(); ok {
		t.Fatal("Events not closed by Close")
	}
	publishEvent(t, env, "h1", "r/req-1/1/result", sealResult(t, "req-1", 1, 1))
	second := newTransport(t, env, "h1")
	ev := testwait.Receive(t, 0, "event published while away", second.Events())
	if ev.Message.Result == nil || ev.Message.Result.RequestID != "req-1" {
		t.Fatalf("event = %+v", ev)
	}
	// Another host does not see it.
	other := newTransport(t, env, "h2")
	select {
	case ev := <-other.Events():
		t.Fatalf("h2 got %+v", ev)
	default:
	}
}

func TestCancelStoresRecordThenBroadcasts(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	sub, err := env.NC.SubscribeSync(fabric.CancelSubject("text.remote"))
	if err != nil {
		t.Fatal(err)
	}
	inv := fabrictest.Invoke("req-1", 1)
	cancel := protocol.Cancel{RequestID: "req-1", Tool: inv.Tool, Attempt: 1, IdempotencyKey: inv.IdempotencyKey}
	if err := tr.Cancel(fabrictest.Ctx(t), cancel); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := fabrictest.NewCodec(t, fabrictest.Key)
	if got, err := c.OpenCancel(m.Header, m.Data); err != nil || got != cancel {
		t.Fatalf("broadcast = %+v, %v", got, err)
	}
	kv, err := fabric.CancelBucket(fabrictest.Ctx(t), env.JS)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := fabric.LookupCancel(fabrictest.Ctx(t), kv, c, inv.Tool, inv)
	if err != nil || !ok || got != cancel {
		t.Fatalf("LookupCancel = %+v, %v, %v", got, ok, err)
	}
	_, ok, err = fabric.LookupCancel(fabrictest.Ctx(t), kv, c, inv.Tool, fabrictest.Invoke("req-2", 1))
	if err != nil || ok {
		t.Fatalf("LookupCancel of another request = %v, %v", ok, err)
	}
	fabrictest.WantErrIs(t, tr.Cancel(fabrictest.Ctx(t), protocol.Cancel{RequestID: "r", Tool: "a..b", Attempt: 1, IdempotencyKey: "k"}), protocol.ErrInvalidToolName)
}

func TestClosedTransportRefusesWork(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	fabrictest.WantErrIs(t, tr.Publish(fabrictest.Ctx(t), fabrictest.Invoke("req-1", 1)), hostnats.ErrClosed)
	fabrictest.WantErrIs(t, tr.Cancel(fabrictest.Ctx(t), protocol.Cancel{RequestID: "r", Tool: "t", Attempt: 1, IdempotencyKey: "k"}), hostnats.ErrClosed)
}

func TestNewHostTransportRejectsBadInput(t *testing.T) {
	env := fabrictest.NewEnv(t)
	bad := env.Cfg
	bad.AckWait = 0
	tests := []struct {
		name    string
		cfg     fabric.Config
		hostID  string
		key     protocol.SessionKey
		opts    []hostnats.Option
		wantErr error
	}{
		{"bad config", bad, "h1", fabrictest.Key, nil, fabric.ErrInvalidConfig},
		{"bad host id", env.Cfg, "h.1", fabrictest.Key, nil, fabric.ErrInvalidHostID},
		{"zero key", env.Cfg, "h1", protocol.SessionKey{}, nil, protocol.ErrInvalidKey},
		{"bad option", env.Cfg, "h1", fabrictest.Key, []hostnats.Option{hostnats.WithMaxPending(0)}, fabric.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostnats.NewHostTransport(fabrictest.Ctx(t), env.NC, tt.cfg, tt.hostID, tt.key, tt.opts...)
			fabrictest.WantErrIs(t, err, tt.wantErr)
		})
	}
}
