package hostloop

import (
	"github.com/splashfabric/splashfabric/host"

	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workflow"
)

// LoopConfig configures a Loop.
type LoopConfig struct {
	// Transport reaches the workers. Required.
	Transport Transport
	// HostID names this host on the fabric; request ids start with it.
	HostID string
	// Catalog registers the tools every new session may use, against a
	// fresh Runtime. It runs on the goroutine that calls Submit, so
	// concurrent submissions call it concurrently.
	Catalog func(*host.Runtime) error
	// Runtime is the template for each session's runtime; its Clock is
	// always the loop's.
	Runtime host.Config
	// Clock supplies the loop's time and timers, and its runtimes' time;
	// nil means the system clock.
	Clock Clock
	// RetryInitial and RetryMax shape the transient-retry backoff
	// (exponential, multiplier 2, jitter ±50%). Zero picks 100ms and 30s.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// Limits bound the sessions the loop takes on; the zero value takes
	// the defaults of Limits.
	Limits Limits
	// AuditPerSession bounds the audit events the loop keeps for each
	// session (the newest are kept); 0 picks DefaultAuditPerSession.
	AuditPerSession int
	// KeepFinished is how many finished sessions stay in memory, with
	// their audit logs; 0 picks 1024. The oldest finished session is
	// forgotten first; with an Archive, Status still answers for it.
	KeepFinished int
	// Observer, if set, is told of every change the loop makes, on the
	// loop goroutine; it must not block. Metrics and live streams hook
	// in here.
	Observer Observer
	// Archive, if set, keeps every session's terminal status and the
	// host's incarnations, so Status still answers for a session the
	// loop forgot (retention) or that an earlier process of this host
	// held (a restart). Nil keeps sessions in memory only.
	Archive SessionArchive
	// ArchiveTimeout bounds registering the incarnation at StartLoop and
	// the archive's flush at Stop; zero picks 10s.
	ArchiveTimeout time.Duration
	// MaxValueBytes bounds a finished session's value and error as JSON
	// text (see boundResult); zero picks DefaultMaxValueBytes.
	MaxValueBytes int
	// Ledger, if set, makes sessions durable: each keeps its operation
	// ledger there (prepared before dispatch, persisted before publish),
	// and StartLoop resumes the sessions an earlier process of this host
	// left suspended. Nil keeps today's behaviour: a session ends with
	// its process.
	Ledger workflow.Log
	// Restart is the policy of a session whose submission names none;
	// "" is workflow.RestartResume. Sessions under RestartFail keep no
	// ledger.
	Restart workflow.RestartPolicy
	// LedgerRetry is the wait before a failed ledger write is tried
	// again; zero picks one second.
	LedgerRetry time.Duration
	// Leases, with a Ledger, let several hosts share one fabric: each
	// process holds its incarnation's lease, and every AdoptEvery (zero
	// picks DefaultAdoptEvery) a loop takes on the durable sessions whose
	// incarnation's lease lapsed. Nil: only this host's own sessions are
	// resumed, by its next process.
	Leases     Leases
	AdoptEvery time.Duration
	// ReconcileAfter is how long an operation may go without an answer
	// before the loop asks the tool's workers about it
	// (Transport.Reconcile); RedeliveryHorizon
	// is how long after its dispatch the stream may still deliver it.
	// Zero picks DefaultReconcileAfter and DefaultRedeliveryHorizon.
	ReconcileAfter    time.Duration
	RedeliveryHorizon time.Duration
	// DuplicateWindow is how long the invocation stream remembers a
	// message id (fabric.Config.DuplicateWindow); zero picks two
	// minutes. A resumed operation is published again only within it.
	DuplicateWindow time.Duration
	// MemoryBudget, when positive, is the process's memory budget in
	// bytes: a host derives it from its real limit (cgroup, RLIMIT_AS,
	// the machine), as it does GOMEMLIMIT. Near it the loop refuses new
	// submissions (ErrMemoryPressure) and fails the session holding the
	// most memory rather than let the process die (see memory.go). Zero:
	// no watch. MemoryWatchEvery is how often the heap is read; zero
	// picks DefaultMemoryWatchEvery.
	MemoryBudget     int64
	MemoryWatchEvery time.Duration
	// readHeap stands in for the live heap's reading in tests, and
	// memoryHeld for what the meter says a session holds (which garbage
	// collected between slices makes approximate).
	readHeap   func(collect bool) int64
	memoryHeld func(SessionID) int64
	// LifetimeGrace is how long the workers of a session that outlived
	// its MaxLifetime have to acknowledge its cancellations before the
	// host asserts them cancelled; zero picks DefaultLifetimeGrace.
	LifetimeGrace time.Duration
}

// DefaultAuditPerSession is how many audit events the loop keeps for a
// session when LoopConfig.AuditPerSession is zero: a script's last
// thousand tool events, not every one of a script that makes millions.
const DefaultAuditPerSession = 1024

// Observer receives the loop's notifications. Calls happen on the loop
// goroutine, so an implementation must return quickly.
type Observer interface {
	// SessionChanged reports a session's new state.
	SessionChanged(s SessionStatus)
	// OperationChanged reports an operation whose status changed.
	OperationChanged(session SessionID, op OperationStatus)
	// Chunk reports a released (redacted) chunk.
	Chunk(session SessionID, c host.ExternalToolStreamChunk)
	// Audit reports audit events drained from a session's runtime.
	// events is the loop's own slice, valid during the call: an observer
	// copies what it keeps.
	Audit(session SessionID, events []host.AuditEvent)
	// Dispatched reports an attempt handed to the transport.
	Dispatched(session SessionID, inv host.ExternalInvocation)
	// Rejected reports a worker message the loop refused (stale attempt,
	// unknown request, or a runtime error), with the reason.
	Rejected(reason string, err error)
}

// PublishObserver is implemented by Observers that carry a trace to the
// workers. Before the loop hands an attempt to the transport it asks for
// the context to hand it with, on the loop goroutine; the transport reads
// the trace from it (hostnats writes it into the invocation's headers)
// and nothing else. Publishing must not block; it is asked again for an
// attempt whose send is tried again.
type PublishObserver interface {
	Publishing(ctx context.Context, session SessionID, requestID string, inv host.ExternalInvocation) context.Context
}

// StartObserver is implemented by Observers that must know a session
// before anything else is reported of it (a tracer, whose spans of its
// operations need the session's trace): SessionStarted is called on the
// loop goroutine when the loop takes a session on, new or resumed, before
// the audit, dispatches and statuses of its first step. It must not block.
type StartObserver interface {
	SessionStarted(s SessionStatus)
}

// Loop is the one goroutine that owns every Runtime of a host process. It
// selects over transport events, timers (deadlines and scheduled retries)
// and commands; after each step it claims and publishes everything
// claimable. Nothing else touches a Runtime.
type Loop struct {
	cfg LoopConfig

	// cmds carries requests from any goroutine; each carries its reply
	// channel. Read only by run.
	cmds chan command
	// stop is closed by Stop; done is closed when run returns. stopped
	// is ended by Stop too, for the calls the adoption scan makes.
	stop        chan struct{}
	done        chan struct{}
	stopped     context.Context
	stopStopped context.CancelFunc

	// incarnation is set by StartLoop and never changes; any goroutine
	// may read it.
	incarnation Incarnation

	// held is the incarnations whose leases this process holds; leaseMu
	// guards it (StartLoop, the resumer and Stop use it).
	leaseMu sync.Mutex
	held    map[string]bool

	// resumes is the resumer's progress; digestSet is the catalog's
	// digests, read once by the resumer.
	resumes    resumption
	digestOnce sync.Once
	digestSet  map[string]string
	digestErr  error

	// memory is the memory watch; nil without a MemoryBudget.
	memory *memoryWatch

	// Everything below is owned by the run goroutine.
	st *loopState
}

// SessionID names one script session of a loop.
type SessionID string

// StartLoop validates cfg and starts the loop goroutine.
func StartLoop(cfg LoopConfig) (*Loop, error) {
	if cfg.Transport == nil {
		return nil, fmt.Errorf("%w: loop needs a transport", ErrInvalidConfig)
	}
	if cfg.HostID == "" {
		return nil, fmt.Errorf("%w: loop needs a host id", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	cfg.Runtime.Clock = cfg.Clock
	if cfg.Runtime.SessionNonce != nil {
		// One trusted nonce for every session would give them all the
		// same idempotency keys, and the journal would answer one
		// session's call with another's result.
		return nil, fmt.Errorf("%w: a session nonce in the runtime template would be shared by every session", ErrInvalidConfig)
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = 100 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	if cfg.KeepFinished <= 0 {
		cfg.KeepFinished = 1024
	}
	var err error
	if cfg.Limits, err = cfg.Limits.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.AuditPerSession <= 0 {
		cfg.AuditPerSession = DefaultAuditPerSession
	}
	if cfg.ArchiveTimeout <= 0 {
		cfg.ArchiveTimeout = defaultArchiveTimeout
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	if cfg.Restart, err = workflow.ParseRestartPolicy(string(cfg.Restart)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.LedgerRetry <= 0 {
		cfg.LedgerRetry = time.Second
	}
	if cfg.AdoptEvery <= 0 {
		cfg.AdoptEvery = DefaultAdoptEvery
	}
	if cfg.ReconcileAfter <= 0 {
		cfg.ReconcileAfter = DefaultReconcileAfter
	}
	if cfg.RedeliveryHorizon <= 0 {
		cfg.RedeliveryHorizon = DefaultRedeliveryHorizon
	}
	if cfg.DuplicateWindow <= 0 {
		cfg.DuplicateWindow = 2 * time.Minute
	}
	if cfg.LifetimeGrace <= 0 {
		cfg.LifetimeGrace = DefaultLifetimeGrace
	}
	if cfg.MemoryWatchEvery <= 0 {
		cfg.MemoryWatchEvery = DefaultMemoryWatchEvery
	}
	if cfg.Leases != nil && cfg.Ledger == nil {
		return nil, fmt.Errorf("%w: leases without a ledger hold nothing", ErrInvalidConfig)
	}
	var random [incarnationHexLen / 2]byte
	if _, err := rand.Read(random[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", host.ErrEntropyUnavailable, err)
	}
	l := &Loop{
		cfg:  cfg,
		cmds: make(chan command),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		held: make(map[string]bool),
		// Request and session ids carry a random incarnation so that
		// events left in the stream by an earlier run of the same host
		// id never match an operation of this one, and so that a session
		// id tells which process accepted it.
		incarnation: Incarnation{
			ID:      cfg.HostID + "-" + hex.EncodeToString(random[:]),
			HostID:  cfg.HostID,
			Started: cfg.Clock.Now(),
		},
	}
	if a := cfg.Archive; a != nil {
		// Before any session exists: once a session id of this
		// incarnation is out, a later process must be able to tell that
		// this incarnation was real.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ArchiveTimeout)
		err := a.Register(ctx, l.incarnation)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: registering incarnation %s: %w (without it, a later process of this host could not tell this one's lost sessions from ids that never existed)",
				ErrArchiveUnavailable, l.incarnation.ID, err)
		}
	}
	l.stopped, l.stopStopped = context.WithCancel(context.Background())
	l.st = newLoopState(cfg, l.incarnation.ID, l.done)
	if cfg.Ledger != nil {
		// Held before any session of this process exists, so no other
		// host ever takes them for sessions nobody drives.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ArchiveTimeout)
		err := l.take(ctx, l.incarnation.ID)
		cancel()
		if err != nil {
			l.stopStopped()
			return nil, fmt.Errorf("%w: lease of %s: %w", ErrLedgerUnavailable, l.incarnation.ID, err)
		}
	}
	go l.run()
	if l.memory = newMemoryWatch(cfg); l.memory != nil {
		if cfg.readHeap == nil {
			host.SetProcessMemoryLimit(cfg.MemoryBudget)
		}
		l.st.bg.Add(1)
		go l.watchMemory(l.memory)
	}
	if cfg.Ledger != nil {
		// The sessions earlier processes left are brought back beside
		// the loop, each as soon as it is replayed: the host takes new
		// scripts meanwhile.
		l.st.bg.Add(1)
		go l.resumeLoop()
	}
	return l, nil
}

// Incarnation returns the process lifetime this loop's session and request
// ids carry.
func (l *Loop) Incarnation() Incarnation { return l.incarnation }

// Stop ends the loop and waits for it. Operations of sessions still
// suspended are not cancelled. With an Archive, each such session is
// recorded as failed with ErrHostStopped and the archive is flushed,
// bounded by ArchiveTimeout, before Stop returns.
func (l *Loop) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
		l.stopStopped()
	}
	<-l.done
	l.st.bg.Wait()
	if l.memory != nil && l.cfg.readHeap == nil {
		host.SetProcessMemoryLimit(0)
	}
	if l.cfg.Leases != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ArchiveTimeout)
		l.releaseAll(ctx)
		cancel()
	}
}

func (l *Loop) run() {
	defer close(l.done)
	st := l.st
	clock := l.cfg.Clock
	timer := clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	events := l.cfg.Transport.Events()
	armed := time.Time{}
	for {
		// Arm the timer for the earliest deadline or scheduled send.
		if next, ok := st.timers.peek(); ok {
			if !next.Equal(armed) {
				timer.Reset(next.Sub(clock.Now()))
				armed = next
			}
		} else if !armed.IsZero() {
			timer.Stop()
			armed = time.Time{}
		}
		select {
		case <-l.stop:
			st.stopAllRunning()
			st.turns.Close()
			l.stopStores()
			return
		case c := <-l.cmds:
			st.now = clock.Now()
			c.run(st)
		case ev, ok := <-events:
			if !ok {
				// The transport closed: nothing more will arrive, but
				// commands and timers still work until Stop.
				events = nil
				continue
			}
			st.now = clock.Now()
			st.handleEvent(ev)
		case w := <-st.ledgerDone:
			st.now = clock.Now()
			st.ledgerWritten(w)
		case s := <-st.removedDone:
			st.ledgerRemoved(s)
		case a := <-st.reconcileDone:
			st.now = clock.Now()
			st.reconciled(a)
		case <-timer.C():
			armed = time.Time{}
			st.now = clock.Now()
			st.fireTimers(st.now)
		case <-st.turns.Ready():
			st.now = clock.Now()
			st.takeTurns()
		}
		st.flush()
	}
}

// stopStores stores what durable sessions have not stored yet, records
// the other sessions still suspended and flushes the archive. It runs on
// the loop goroutine after its last step, so no command can change a
// session meanwhile.
func (l *Loop) stopStores() {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ArchiveTimeout)
	defer cancel()
	if l.cfg.Ledger != nil {
		l.st.flushLedgers(ctx)
	}
	a := l.cfg.Archive
	if a == nil {
		return
	}
	l.st.archiveSuspended(ctx)
	// A failed flush is the archive's to report: a killed host leaves
	// the same gap, which Status covers with ErrHostRestarted.
	_ = a.Flush(ctx)
}

// command is a request run on the loop goroutine.
type command interface{ run(*loopState) }

// send delivers c to the loop unless it stopped or ctx ended first.
func (l *Loop) send(ctx context.Context, c command) error {
	select {
	case l.cmds <- c:
		return nil
	case <-l.stop:
		return ErrLoopStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call sends a command built around reply and waits for its answer.
func call[T any](ctx context.Context, l *Loop, build func(chan<- T) command) (T, error) {
	reply := make(chan T, 1)
	var zero T
	if err := l.send(ctx, build(reply)); err != nil {
		return zero, err
	}
	select {
	case v := <-reply:
		return v, nil
	case <-l.done:
		return zero, ErrLoopStopped
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// invokeFor converts a claimed invocation into the frame body workers see.
func invokeFor(requestID string, inv host.ExternalInvocation) protocol.Invoke {
	payload := protocol.TextPayload(inv.Input)
	if inv.Format == host.FormatJSON {
		payload = protocol.JSONPayload([]byte(inv.Input))
	}
	out := protocol.Invoke{
		RequestID:      requestID,
		Tool:           inv.Tool,
		Input:          payload,
		CallIndex:      inv.CallIndex,
		Attempt:        inv.Attempt,
		AttemptLimit:   inv.AttemptLimit,
		IdempotencyKey: inv.IdempotencyKey,
		OutputLimit:    inv.OutputLimit,
		Contract:       inv.Contract,
	}
	if inv.Stream != nil {
		l := inv.Stream.Limits()
		l.UsedChunks, l.UsedSourceBytes, l.UsedReleasedBytes = inv.StreamUsed.Chunks, inv.StreamUsed.SourceBytes, inv.StreamUsed.ReleasedBytes
		out.Stream = &l
	}
	if inv.HasDeadline {
		ms := inv.RemainingDeadline.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		out.DeadlineMillis = ms
	}
	return out
}

func newBackoff(cfg LoopConfig) backoff.BackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(cfg.RetryInitial),
		backoff.WithMaxInterval(cfg.RetryMax),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.5),
		// The operation's deadline bounds retries, not the backoff.
		backoff.WithMaxElapsedTime(0),
	)
}

// cancelFor converts a runtime cancellation request into the frame body
// the worker holding the call sees.
func cancelFor(requestID string, req host.ExternalToolCancellationRequest) protocol.Cancel {
	return protocol.Cancel{
		RequestID:      requestID,
		Tool:           req.Tool,
		Attempt:        req.Attempt,
		IdempotencyKey: req.IdempotencyKey,
	}
}
