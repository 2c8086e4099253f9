package itest

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

const hostID = "h1"

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
}

// tool is the definition of a test tool with every default.
func tool(name string) toolspec.Spec {
	return toolspec.Spec{Name: name, Description: "integration test tool " + name}
}

// options shape a cluster; the zero value is a usable default.
type options struct {
	// tools are the definitions the host's catalog registers for every
	// session; workers handle the same ones (cluster.tool).
	tools []toolspec.Spec
	// defs, when set, gives the definitions every new session registers
	// besides tools: the host's catalog as it is at that moment.
	defs         func() *toolspec.Set
	fabric       func(*fabric.Config)
	retryInitial time.Duration
	retryMax     time.Duration
	lease        time.Duration
	heartbeat    time.Duration
	eventBuffer  int
	// durable gives the host a session archive and a ledger log, so its
	// sessions outlive its loop.
	durable bool
	// limits, memoryBudget and also, if set, are the loop's Limits,
	// MemoryBudget and observers beside the cluster's own.
	limits       hostloop.Limits
	memoryBudget int64
	also         []hostloop.Observer
	// boundInputs gives the runtimes the input bound a host over NATS
	// derives from the streams (host.Config.MaxInputBytes).
	boundInputs bool
	// reconcileAfter, horizon and duplicateWindow, if set, are the
	// loop's ReconcileAfter, RedeliveryHorizon and DuplicateWindow.
	reconcileAfter, horizon, duplicateWindow time.Duration
}

// cluster is one NATS server, one host (a loop over a fabric host
// transport) and the worker agents a test starts. Everything is stopped by
// t.Cleanup in reverse order: workers, then the loop and its transport,
// then the host connection, then the server.
type cluster struct {
	t      testing.TB
	srv    *natstest.Server
	fcfg   fabric.Config
	opts   options
	tools  *toolspec.Set // opts.tools, compiled
	key    protocol.Keys // a single key unless a test rotates the ring
	codec  *fabric.Codec
	hostNC *nats.Conn
	hostJS jetstream.JetStream
	tr     *hostnats.HostTransport
	loop   *hostloop.Loop
	obs    *observer
	// archive and ledger are set for a durable cluster.
	archive *hostnats.SessionArchive
	gate    *gatedLog
}

// reconnecting is how every client of a cluster connects: it never gives
// up on a restarted server and comes back quickly.
func reconnecting() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
}

func newCluster(t testing.TB, o options) *cluster {
	t.Helper()
	fcfg := fabric.DefaultConfig()
	// A crashed worker's call comes back quickly.
	fcfg.AckWait = 2 * time.Second
	if o.fabric != nil {
		o.fabric(&fcfg)
	}
	if o.retryInitial == 0 {
		o.retryInitial = 20 * time.Millisecond
	}
	if o.retryMax == 0 {
		o.retryMax = time.Second
	}
	if o.lease == 0 {
		o.lease = time.Second
	}
	if o.heartbeat == 0 {
		o.heartbeat = 200 * time.Millisecond
	}
	if o.eventBuffer == 0 {
		o.eventBuffer = 1024
	}
	key, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	codec, err := fabric.NewCodec(key)
	must(t, err)
	c := &cluster{t: t, fcfg: fcfg, opts: o, tools: tooltest.Set(t, o.tools...), key: key, codec: codec, obs: newObserver()}
	c.srv = natstest.Start(t)
	c.hostNC = c.srv.Connect(reconnecting()...)
	c.hostJS, err = jetstream.New(c.hostNC)
	must(t, err)
	ctx, cancel := opCtx()
	defer cancel()
	must(t, fabric.Provision(ctx, c.hostJS, fcfg))
	c.startHost()
	t.Cleanup(func() { c.stopHost(true) })
	return c
}

// startHost starts the host's transport and loop (with their stores, for a
// durable cluster) on the host connection.
func (c *cluster) startHost() {
	c.t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	var err error
	c.tr, err = hostnats.NewHostTransport(ctx, c.hostNC, c.fcfg, hostID, c.key, hostnats.WithEventBuffer(c.opts.eventBuffer))
	must(c.t, err)
	cfg := hostloop.LoopConfig{
		Transport:    c.tr,
		HostID:       hostID,
		Catalog:      c.catalog,
		RetryInitial: c.opts.retryInitial,
		RetryMax:     c.opts.retryMax,
		Observer:     c.obs,
		Limits:       c.opts.limits,
		MemoryBudget: c.opts.memoryBudget,
	}
	if len(c.opts.also) > 0 {
		cfg.Observer = httpapi.Tee(append([]hostloop.Observer{c.obs}, c.opts.also...)...)
	}
	if c.opts.boundInputs {
		cfg.Runtime.MaxInputBytes = c.fcfg.MaxToolInputBytes(c.hostNC.MaxPayload())
	}
	if c.opts.durable {
		c.archive, err = hostnats.NewSessionArchive(ctx, c.hostNC, c.fcfg, c.key)
		must(c.t, err)
		ledger, err := hostnats.NewLedgerLog(ctx, c.hostNC, c.fcfg, c.key)
		must(c.t, err)
		if c.gate == nil {
			c.gate = &gatedLog{}
		}
		// The gate outlives the host; its log is the new process's.
		c.gate.mu.Lock()
		c.gate.Log = ledger
		c.gate.mu.Unlock()
		cfg.Archive, cfg.Ledger = c.archive, c.gate
		cfg.ArchiveTimeout, cfg.LedgerRetry = 5*time.Second, 100*time.Millisecond
		cfg.ReconcileAfter, cfg.RedeliveryHorizon, cfg.DuplicateWindow = c.opts.reconcileAfter, c.opts.horizon, c.opts.duplicateWindow
	}
	c.loop, err = hostloop.StartLoop(cfg)
	if err != nil {
		_ = c.tr.Close()
		c.t.Fatal(err)
	}
}

// stopHost stops the loop and closes the transport and stores; a check
// of the transport's close is only asked for when the stop is orderly.
func (c *cluster) stopHost(check bool) {
	c.loop.Stop()
	if err := c.tr.Close(); err != nil && check {
		c.t.Errorf("transport close: %v", err)
	}
	if c.archive != nil {
		_ = c.archive.Close()
	}
}

func (c *cluster) catalog(rt *host.Runtime) error {
	if c.opts.defs != nil {
		if err := rt.RegisterTools(c.opts.defs()); err != nil {
			return err
		}
	}
	return rt.RegisterTools(c.tools)
}

// tool is the host's definition of the tool named name, for a worker to
// handle: both sides hold one definition, so every call's digest matches.
func (c *cluster) tool(name string) *toolspec.Tool {
	c.t.Helper()
	return tooltest.Lookup(c.t, c.tools, name)
}

// worker is a running agent with its own connection and journal, so
// closing that connection takes the whole worker down as a crash would.
type worker struct {
	*workeragent.Agent
	id     string
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan error
}

func (c *cluster) startWorker(id string, register func(*workeragent.Agent)) *worker {
	c.t.Helper()
	nc := c.srv.Connect(reconnecting()...)
	js, err := jetstream.New(nc)
	must(c.t, err)
	ctx, cancel := opCtx()
	defer cancel()
	j, err := idempotency.NewKV(ctx, js, idempotency.KVConfig{})
	must(c.t, err)
	a, err := workeragent.New(nc, workeragent.Config{
		WorkerID: id, Key: c.key, Fabric: c.fcfg, Journal: j,
		LeaseDuration: c.opts.lease, HeartbeatInterval: c.opts.heartbeat, DrainGrace: 300 * time.Millisecond,
	})
	must(c.t, err)
	register(a)
	runCtx, stop := context.WithCancel(context.Background())
	w := &worker{Agent: a, id: id, nc: nc, cancel: stop, done: make(chan error, 1)}
	go func() { w.done <- a.Run(runCtx) }()
	// Registered after Connect's nc.Close, so it runs before it.
	c.t.Cleanup(func() {
		stop()
		select {
		case <-w.done:
		case <-time.After(testwait.Scale(30 * time.Second)):
			c.t.Errorf("worker %s did not stop", id)
		}
	})
	select {
	case <-a.Ready():
	case err := <-w.done:
		c.t.Fatalf("worker %s: Run = %v", id, err)
	case <-time.After(testwait.DefaultTimeout):
		c.t.Fatalf("worker %s not ready", id)
	}
	return w
}

// submit starts a script and returns its session id.
func (c *cluster) submit(src string) hostloop.SessionID {
	c.t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	s, err := c.loop.Submit(ctx, hostloop.Submission{Source: src})
	must(c.t, err)
	c.obs.seen(s)
	return s.ID
}

// wait blocks until the session finished and returns its final status.
func (c *cluster) wait(id hostloop.SessionID, timeout time.Duration) hostloop.SessionStatus {
	c.t.Helper()
	var s hostloop.SessionStatus
	testwait.Until(c.t, timeout, "session "+string(id)+" to finish", func() bool {
		var ok bool
		s, ok = c.obs.final(id)
		return ok
	})
	return s
}

// status reads a session and its audit log from the loop.
func (c *cluster) status(id hostloop.SessionID) (hostloop.SessionStatus, []host.AuditEvent) {
	c.t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	s, audit, err := c.loop.Status(ctx, id)
	must(c.t, err)
	return s, audit
}

// liveOp waits for the session's only live operation and returns it.
func (c *cluster) liveOp(id hostloop.SessionID) hostloop.OperationStatus {
	c.t.Helper()
	var op hostloop.OperationStatus
	testwait.Until(c.t, 0, "a live operation of "+string(id), func() bool {
		s, _ := c.status(id)
		if len(s.Operations) != 1 {
			return false
		}
		op = s.Operations[0]
		return true
	})
	return op
}

// streamSeq is a stream's last sequence: how many writes it took so far.
func (c *cluster) streamSeq(name string) uint64 {
	c.t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	s, err := c.hostJS.Stream(ctx, name)
	must(c.t, err)
	info, err := s.Info(ctx)
	must(c.t, err)
	return info.State.LastSeq
}

// capture subscribes on core NATS to subject (JetStream publishes are seen
// there too) and keeps every message, so a test can replay one verbatim.
type capture struct {
	mu   sync.Mutex
	msgs []*nats.Msg
}

func (c *cluster) capture(subject string) *capture {
	c.t.Helper()
	cp := &capture{}
	sub, err := c.hostNC.Subscribe(subject, func(m *nats.Msg) {
		cp.mu.Lock()
		cp.msgs = append(cp.msgs, m)
		cp.mu.Unlock()
	})
	must(c.t, err)
	must(c.t, c.hostNC.Flush())
	c.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return cp
}

func (cp *capture) wait(t testing.TB, n int) []*nats.Msg {
	t.Helper()
	var out []*nats.Msg
	testwait.Until(t, 0, strconv.Itoa(n)+" captured messages", func() bool {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		out = append([]*nats.Msg(nil), cp.msgs...)
		return len(out) >= n
	})
	return out
}

// republish JetStream-publishes data with header to subject and returns
// the stream's acknowledgement.
func (c *cluster) republish(subject string, data []byte, header nats.Header) *jetstream.PubAck {
	c.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for k, v := range header {
		m.Header[k] = append([]string(nil), v...)
	}
	ctx, cancel := opCtx()
	defer cancel()
	ack, err := c.hostJS.PublishMsg(ctx, m)
	must(c.t, err)
	return ack
}

// stripTag returns a sealed frame without its tag.
func stripTag(t testing.TB, frame *nats.Msg) *nats.Msg {
	t.Helper()
	h := nats.Header{}
	for k, v := range frame.Header {
		h[k] = append([]string(nil), v...)
	}
	h.Del(fabric.HeaderTag)
	return &nats.Msg{Header: h, Data: frame.Data}
}

// frameHeader returns base with its frame headers replaced by frame's.
func frameHeader(base nats.Header, frame *nats.Msg) nats.Header {
	h := nats.Header{}
	for k, v := range base {
		h[k] = append([]string(nil), v...)
	}
	for _, k := range []string{fabric.HeaderSession, fabric.HeaderRole, fabric.HeaderSeq, fabric.HeaderTag} {
		h.Del(k)
	}
	for k, v := range frame.Header {
		h[k] = append([]string(nil), v...)
	}
	return h
}

// otherCodec seals under a key the cluster does not know.
func otherCodec(t testing.TB) *fabric.Codec {
	t.Helper()
	k, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	c, err := fabric.NewCodec(k)
	must(t, err)
	return c
}

// observer records what the loop reports. Its methods run on the loop
// goroutine; tests read through the accessors.
type observer struct {
	mu       sync.Mutex
	finals   map[hostloop.SessionID]hostloop.SessionStatus
	chunks   map[hostloop.SessionID][]host.ExternalToolStreamChunk
	rejected map[string]int
	onFinal  func(hostloop.SessionStatus)
}

func newObserver() *observer {
	return &observer{
		finals:   make(map[hostloop.SessionID]hostloop.SessionStatus),
		chunks:   make(map[hostloop.SessionID][]host.ExternalToolStreamChunk),
		rejected: make(map[string]int),
	}
}

func (o *observer) seen(s hostloop.SessionStatus) {
	if s.State != hostloop.SessionSuspended {
		o.SessionChanged(s)
	}
}

func (o *observer) SessionChanged(s hostloop.SessionStatus) {
	if s.State == hostloop.SessionSuspended {
		return
	}
	o.mu.Lock()
	o.finals[s.ID] = s
	f := o.onFinal
	o.mu.Unlock()
	if f != nil {
		f(s)
	}
}

func (o *observer) OperationChanged(hostloop.SessionID, hostloop.OperationStatus) {}

func (o *observer) Chunk(id hostloop.SessionID, c host.ExternalToolStreamChunk) {
	o.mu.Lock()
	o.chunks[id] = append(o.chunks[id], c)
	o.mu.Unlock()
}

func (o *observer) Audit(hostloop.SessionID, []host.AuditEvent)            {}
func (o *observer) Dispatched(hostloop.SessionID, host.ExternalInvocation) {}

func (o *observer) Rejected(reason string, _ error) {
	o.mu.Lock()
	o.rejected[reason]++
	o.mu.Unlock()
}

func (o *observer) final(id hostloop.SessionID) (hostloop.SessionStatus, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.finals[id]
	return s, ok
}

func (o *observer) chunksOf(id hostloop.SessionID) []host.ExternalToolStreamChunk {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]host.ExternalToolStreamChunk(nil), o.chunks[id]...)
}

func (o *observer) rejections(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rejected[reason]
}

// effects counts handler runs per idempotency key, outside any worker.
type effects struct {
	mu     sync.Mutex
	byKey  map[string]int
	total  int
	starts []attemptRecord
}

type attemptRecord struct {
	key      string
	attempt  uint32
	started  time.Time
	returned time.Time
}

func newEffects() *effects { return &effects{byKey: make(map[string]int)} }

// begin records a run and returns its index for end.
func (e *effects) begin(c *workeragent.Call) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[c.IdempotencyKey]++
	e.total++
	e.starts = append(e.starts, attemptRecord{key: c.IdempotencyKey, attempt: c.Attempt, started: time.Now()})
	return len(e.starts) - 1
}

func (e *effects) end(i int) {
	e.mu.Lock()
	e.starts[i].returned = time.Now()
	e.mu.Unlock()
}

func (e *effects) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

func (e *effects) keys() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.byKey))
	for k, v := range e.byKey {
		out[k] = v
	}
	return out
}

func (e *effects) attempts() []attemptRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]attemptRecord(nil), e.starts...)
}

// counting wraps f so every run is counted before it does anything.
func counting(e *effects, f func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error)) workeragent.Handler {
	return workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
		i := e.begin(c)
		defer e.end(i)
		return f(ctx, c)
	})
}

func echo(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
	return workeragent.Result(c.Input.Text), nil
}

func hasOutcome(audit []host.AuditEvent, want host.AuditOutcome) bool {
	for _, ev := range audit {
		if ev.Outcome == want {
			return true
		}
	}
	return false
}

func wantCompleted(t testing.TB, s hostloop.SessionStatus, value string) {
	t.Helper()
	if s.State != hostloop.SessionCompleted || s.Value != value {
		t.Fatalf("session %s = %s %q (error %q), want completed %q", s.ID, s.State, s.Value, s.Error, value)
	}
}

func wantValuePrefix(t testing.TB, s hostloop.SessionStatus, prefix string) {
	t.Helper()
	if s.State != hostloop.SessionCompleted || !strings.HasPrefix(s.Value, prefix) {
		t.Fatalf("session %s = %s %q (error %q), want completed with prefix %q", s.ID, s.State, s.Value, s.Error, prefix)
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
