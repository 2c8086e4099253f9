package workeragent

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/ratelog"
	"github.com/splashfabric/splashfabric/toolproc"
)

// opTimeout bounds each journal, KV and publish call the agent makes on
// behalf of a call. Those calls use their own contexts, not the handler's,
// so a cancelled or draining call can still record and hand back its state.
const opTimeout = 10 * time.Second

// Agent pulls invocations of its registered tools from the fabric and runs
// them. Create it with New, register tools with HandleTool, then call Run.
//
// Goroutines: Run's caller owns the lifecycle. Each tool's
// fabric.Puller has an inbox callback (run by the NATS client), which
// hands each message to an execution goroutine that also runs the
// handler, and a watch goroutine that restarts the pull when it goes
// silent; teardown stops the puller, watch included. An execution's
// heartbeat is a timer (see heartbeat). Cancel subscriptions run their
// callbacks on the client's goroutines. Every other goroutine the agent
// starts goes through goTracked, except the heartbeat timer's callback,
// which works only while its execution waits for it.
type Agent struct {
	// Immutable after New.
	nc *nats.Conn
	js jetstream.JetStream
	// chunkJS publishes chunks only, so its async error handler sees
	// nothing but chunks and its pending limit never stalls a result.
	chunkJS jetstream.JetStream
	cfg     Config
	log     *slog.Logger
	// rejectLog writes the lines of refused frames, a few per reason and
	// second; any goroutine.
	rejectLog *ratelog.Limiter
	codec     *fabric.Codec
	tracer    trace.Tracer
	obs       Observer
	stats     counters
	owner     atomic.Uint64 // numbers execution owners; any goroutine

	// mu guards the fields below and the marked fields of each execution.
	// It is never held across a network wait. Lock order: a.mu, then a
	// ChunkWriter's mu (cancelLocked reserves a frame number); nothing
	// takes a.mu while holding a writer's.
	mu sync.Mutex
	// tools is written by HandleTool before Run and only read afterwards.
	tools map[string]*tool
	// mcpServers holds the supervisor of each MCP server, by how it is
	// run, so the catalog tools one server offers share its process.
	// Written by HandleTool before Run.
	mcpServers map[string]*toolproc.Supervisor
	// started is set by Run; read by HandleTool and Stop.
	started bool
	// stopping is set once by beginStop; read by pull callbacks before
	// they admit a message and by executions before they start a handler.
	stopping bool
	// draining is set by cancelAll; an execution reaching its handler
	// after that hands the call back instead.
	draining bool
	// inflight counts admitted executions; written by pull callbacks
	// (up) and executions (down).
	inflight int
	// running holds every admitted execution that has opened its
	// invocation, for cancellation requests and cancelAll. Written by
	// executions; read by cancel callbacks and cancelAll. Cancels are
	// rare, so they scan it rather than keep an index that duplicates of
	// one attempt would collide in.
	running map[*execution]struct{}
	// cancelKV holds the cancel records; written by start before any
	// message arrives.
	cancelKV jetstream.KeyValue
	// events is a handle on the events stream, through which Idempotent
	// calls read their stored answers back (fabric.LookupAnswer); written
	// by start (joinFabric) before any message arrives.
	events jetstream.Stream
	// cancels is the local copy of the cancel records; it has its own
	// lock, taken after a.mu when both are held.
	cancels *cancelSet
	// stopWatch ends the cancel watcher; set by start, called by
	// teardown.
	stopWatch context.CancelFunc

	ready  chan struct{} // closed by start once every tool is consuming
	stopCh chan struct{} // closed once by beginStop
	idle   chan struct{} // closed once when stopping and inflight is 0
	// handoff passes an execution to an executor goroutine waiting for
	// one (see execute); unbuffered, so a send succeeds only when one
	// waits.
	handoff chan func()
	done    chan struct{} // closed by Run after teardown

	stopOnce sync.Once
	idleOnce sync.Once
	wg       sync.WaitGroup // every goroutine started by goTracked
}

// tool is one registration. Its fields are written by HandleTool and Run's
// start before any message arrives, then only read, except pull and the
// subscriptions, which start writes and beginStop and teardown read.
type tool struct {
	name    string
	handler Handler
	spec    toolSpec
	// slots bounds concurrently running handlers of the tool.
	slots chan struct{}
	pull  *fabric.Puller
	sub   *nats.Subscription
	// reconcileSub answers the tool's reconciliation requests.
	reconcileSub *nats.Subscription
	// sup runs a process tool's processes; nil for a Go handler.
	sup *toolproc.Supervisor
}

// New returns an agent that uses nc for everything; the caller keeps
// ownership of nc and closes it after Run returns.
func New(nc *nats.Conn, cfg Config) (*Agent, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(opTimeout))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	codec, err := fabric.NewCodec(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	a := &Agent{
		nc:        nc,
		js:        js,
		cfg:       cfg,
		log:       cfg.Logger.With("worker", cfg.WorkerID),
		codec:     codec,
		rejectLog: ratelog.New(cfg.Logger.With("worker", cfg.WorkerID), time.Second, rejectLogBurst),
		obs:       cfg.Observer,
		tracer:    cfg.Tracer.Tracer(ScopeName),
		tools:     make(map[string]*tool),
		running:   make(map[*execution]struct{}),
		cancels:   newCancelSet(cfg.Fabric.DedupeHorizon),
		ready:     make(chan struct{}),
		stopCh:    make(chan struct{}),
		handoff:   make(chan func()),
		idle:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	a.chunkJS, err = jetstream.New(nc,
		jetstream.WithPublishAsyncTimeout(opTimeout),
		jetstream.WithPublishAsyncErrHandler(a.onChunkPublishError))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return a, nil
}

// register adds a tool; sup is the supervisor of a process tool, which
// the agent then owns.
func (a *Agent) register(name string, h Handler, spec toolSpec, sup *toolproc.Supervisor) error {
	if spec.concurrency < 1 {
		return fmt.Errorf("%w: concurrency %d for %q", ErrInvalidTool, spec.concurrency, name)
	}
	if a.cfg.Pool != "" && spec.pool != a.cfg.Pool {
		return fmt.Errorf("%w: %q belongs to pool %q, this agent serves pool %q", ErrInvalidTool, name, spec.pool, a.cfg.Pool)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return fmt.Errorf("%w: HandleTool(%q)", ErrAlreadyStarted, name)
	}
	if _, dup := a.tools[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateTool, name)
	}
	a.tools[name] = &tool{name: name, handler: h, spec: spec, sup: sup, slots: make(chan struct{}, spec.concurrency)}
	return nil
}

// Ready is closed once Run has attached to every tool's consumer; a
// readiness probe or a test waits on it.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Stats returns a snapshot of the agent's counters.
func (a *Agent) Stats() Stats { return a.stats.snapshot() }

// Run starts pulling every registered tool and blocks until ctx ends or
// Stop is called. When ctx ends it drains: it stops pulling, lets in-flight
// calls finish for DrainGrace, then cancels the rest (their handlers see
// ErrDraining) and hands them back for redelivery. It returns nil after a
// complete drain, ErrDrainIncomplete if handlers ignored cancellation for a
// further DrainGrace, or the error that kept it from starting.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-a.stopCh:
	}
	a.beginStop()
	ctxDone := ctx.Done()
	var grace <-chan time.Time
	cancelled, stopped := false, false
	for {
		if ctxDone != nil && ctx.Err() != nil {
			// Run's own context ended: the drain follows DrainGrace.
			ctxDone = nil
			t := time.NewTimer(a.cfg.DrainGrace)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-a.idle:
			a.teardown(true)
			return nil
		case <-ctxDone:
		case <-grace:
			if cancelled && !stopped && a.stopProcesses() > 0 {
				// Process tools that did not end by cancellation are
				// stopped, a lifecycle stop: their calls end
				// indeterminate, and their answers need a moment to go
				// out.
				stopped = true
				t := time.NewTimer(opTimeout)
				defer t.Stop()
				grace = t.C
				continue
			}
			if cancelled {
				a.log.Warn("drain incomplete: handlers ignored cancellation")
				a.teardown(false)
				return ErrDrainIncomplete
			}
			cancelled = true
			a.cancelAll()
			t := time.NewTimer(a.cfg.DrainGrace)
			defer t.Stop()
			grace = t.C
		}
	}
}

// Stop stops pulling and waits until every in-flight call has finished and
// Run has released everything, or ctx ends (then it returns ctx.Err() and
// the calls keep running). Calls still waiting for a handler slot are
// handed back at once.
func (a *Agent) Stop(ctx context.Context) error {
	return a.stop(ctx, false)
}

// StopAndCancel is Stop that also cancels every running handler's context
// with cause ErrDraining; calls whose handlers then fail are handed back
// for redelivery, and calls that finish anyway are answered.
func (a *Agent) StopAndCancel(ctx context.Context) error {
	return a.stop(ctx, true)
}

func (a *Agent) stop(ctx context.Context, cancel bool) error {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	a.beginStop()
	if !started {
		return nil
	}
	if cancel {
		a.cancelAll()
	}
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start provisions the tools' consumers and subscriptions and starts
// consuming.
func (a *Agent) start(ctx context.Context) error {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return ErrAlreadyStarted
	}
	a.started = true
	stopping := a.stopping
	tools := make([]*tool, 0, len(a.tools))
	for _, t := range a.tools {
		tools = append(tools, t)
	}
	a.mu.Unlock()
	if stopping {
		close(a.done)
		return nil
	}
	if len(tools) == 0 {
		close(a.done)
		return ErrNoTools
	}
	fail := func(err error) error {
		a.beginStop()
		a.teardown(true)
		return err
	}
	if err := a.joinFabric(ctx); err != nil {
		return fail(err)
	}
	kv, err := fabric.CancelBucket(ctx, a.js)
	if err != nil {
		return fail(err)
	}
	a.cancelKV = kv
	// The watcher is current before the first pull, so the first pickups
	// already consult memory.
	if err := a.startCancelWatch(ctx); err != nil {
		return fail(fmt.Errorf("workeragent: cancel watcher: %w", err))
	}
	for _, t := range tools {
		if err := a.startTool(ctx, t); err != nil {
			return fail(err)
		}
	}
	// Ready means reachable: the server has the reconcile and cancel
	// subscriptions once this round trip returns, so a request sent
	// after Ready finds them.
	if err := a.nc.FlushTimeout(opTimeout); err != nil {
		return fail(fmt.Errorf("workeragent: flushing subscriptions: %w", err))
	}
	close(a.ready)
	return nil
}

// beginStop stops admitting messages; it is idempotent.
func (a *Agent) beginStop() {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.stopping = true
		idle := a.inflight == 0
		tools := make([]*tool, 0, len(a.tools))
		for _, t := range a.tools {
			tools = append(tools, t)
		}
		a.mu.Unlock()
		close(a.stopCh)
		if idle {
			a.markIdle()
		}
		for _, t := range tools {
			if t.pull != nil {
				t.pull.Drain()
			}
		}
	})
}

func (a *Agent) markIdle() { a.idleOnce.Do(func() { close(a.idle) }) }

// cancelAll cancels every running handler for a drain.
func (a *Agent) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.draining = true
	for e := range a.running {
		e.draining = true
		if e.cancel != nil {
			e.cancel(ErrDraining)
		}
	}
}

// admit counts a message in; it fails once the agent is stopping.
func (a *Agent) admit() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return false
	}
	a.inflight++
	a.stats.inFlight.Add(1)
	return true
}

// release counts a finished execution out.
func (a *Agent) release() {
	a.mu.Lock()
	a.inflight--
	a.stats.inFlight.Add(-1)
	idle := a.stopping && a.inflight == 0
	a.mu.Unlock()
	if idle {
		a.markIdle()
	}
}

// teardown waits for the consumers and subscriptions to end and, when wait
// is set, for every goroutine the agent started; then Run may return.
func (a *Agent) teardown(wait bool) {
	a.mu.Lock()
	tools := make([]*tool, 0, len(a.tools))
	for _, t := range a.tools {
		tools = append(tools, t)
	}
	a.mu.Unlock()
	for _, t := range tools {
		if t.sub != nil {
			_ = t.sub.Unsubscribe()
		}
		if t.reconcileSub != nil {
			_ = t.reconcileSub.Unsubscribe()
		}
		if t.pull != nil && !t.pull.Stop(opTimeout) {
			a.log.Warn("pull inbox did not close", "tool", t.name)
		}
	}
	if a.stopWatch != nil {
		a.stopWatch()
	}
	// A lifecycle stop: the processes of process tools go, and a call
	// one still held is answered indeterminate by its execution.
	a.stopProcesses()
	if wait {
		a.wg.Wait()
	}
	close(a.done)
}

// stopProcesses closes every process tool's supervisor and says how many
// there are; idempotent.
func (a *Agent) stopProcesses() int {
	a.mu.Lock()
	var sups []*toolproc.Supervisor
	for _, t := range a.tools {
		if t.sup != nil {
			sups = append(sups, t.sup)
		}
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, s := range sups {
		if err := s.Close(ctx); err != nil {
			a.log.Warn("tool processes did not stop", "tool", s.Tool(), "err", err)
		}
	}
	return len(sups)
}

// joinFabric provisions the fabric or, with BindOnly, checks that the host
// already has: only the stream lookups, which a least-privilege worker user
// is allowed. It keeps the events stream's handle for answer lookups.
func (a *Agent) joinFabric(ctx context.Context) error {
	if !a.cfg.BindOnly {
		if err := fabric.Provision(ctx, a.js, a.cfg.Fabric); err != nil {
			return err
		}
	}
	if _, err := a.stream(ctx, fabric.StreamInvoke); err != nil {
		return err
	}
	events, err := a.stream(ctx, fabric.StreamEvents)
	if err != nil {
		return err
	}
	// Without direct gets an Idempotent call could not read its stored
	// answer back, and would silently run again: the host that
	// provisioned the stream predates answer subjects.
	if !events.CachedInfo().Config.AllowDirect {
		return fmt.Errorf("%w: %q does not allow direct get (provisioned by an older host)", ErrNotProvisioned, fabric.StreamEvents)
	}
	a.events = events
	return nil
}

// stream looks a fabric stream up; a missing one is ErrNotProvisioned.
func (a *Agent) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := a.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNotProvisioned, name)
	}
	if err != nil {
		return nil, fmt.Errorf("workeragent: stream %q: %w", name, err)
	}
	return s, nil
}
