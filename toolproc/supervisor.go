package toolproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Supervisor runs one process tool: at most one live process, started on
// demand, replaced after it is lost. It is safe for concurrent use.
//
// Lock order: Supervisor.mu may be taken while a session's mu is held
// (poison calls lost), never the other way round.
type Supervisor struct {
	cfg         Config // immutable after New
	argv0       string // Command[0], resolved
	incarnation string // random, so session ids differ across workers and restarts

	// For a contained tool: how its sandboxes are built, and the cgroup
	// under which each gets its own ("" where rlimits hold its limits).
	sandbox      sandboxer
	cgroupParent string
	mechanism    LimitMechanism

	// slots bounds calls in flight to Config.Concurrency.
	slots chan struct{}
	// closing is closed by Close.
	closing chan struct{}

	mu sync.Mutex
	// cur is the live session; nil when there is none.
	cur *session
	// starting is closed when the start in progress ends; nil when no
	// start is in progress.
	starting chan struct{}
	// failures counts processes lost in a row, without one of them
	// answering a call; it sets the backoff before the next start.
	failures  int
	notBefore time.Time
	started   uint64
	closed    bool

	// wg tracks every goroutine of every session.
	wg sync.WaitGroup
}

// New checks cfg and returns a supervisor; no process starts until the
// first call. A contained tool whose sandbox cannot be built here fails
// with ErrContainmentUnavailable.
func New(cfg Config) (*Supervisor, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var inc [4]byte
	if _, err := rand.Read(inc[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	s := &Supervisor{
		cfg:         cfg,
		incarnation: hex.EncodeToString(inc[:]),
		slots:       make(chan struct{}, cfg.Concurrency),
		closing:     make(chan struct{}),
	}
	var err error
	if s.argv0, err = resolveCommand(cfg); err != nil {
		return nil, err
	}
	if cfg.Contain == nil {
		cfg.Logger.Warn("tool runs uncontained (contain: false): it has the worker's user, file system, network and view of /proc", "tool", cfg.Tool)
		return s, nil
	}
	if err := cfg.checkProtected(s.argv0); err != nil {
		return nil, err
	}
	if s.sandbox, err = newSandboxer(cfg); err != nil {
		return nil, err
	}
	if err := s.sandbox.probe(); err != nil {
		return nil, err
	}
	parent, why := cgroupParentFor(cfg.Cgroup)
	s.cgroupParent, s.mechanism = parent, LimitsRlimit
	if parent != "" {
		s.mechanism = LimitsCgroup
	}
	lim := cfg.Contain.Limits
	cfg.Logger.Info("tool sandbox limits", "tool", cfg.Tool, "mechanism", string(s.mechanism), "cgroup", parent, "why_not_cgroup", why,
		"memory", lim.Memory, "pids", lim.Pids, "cpu_seconds", lim.CPUSeconds, "open_files", lim.OpenFiles,
		"file_size", lim.FileSize, "tmp_size", lim.TmpSize, "uid", SandboxUID, "worker_root", asRoot())
	return s, nil
}

// LimitMechanism says what enforces the memory and pids limits of this
// supervisor's sandboxes; "" for an uncontained tool.
func (s *Supervisor) LimitMechanism() LimitMechanism { return s.mechanism }

// Tool returns the supervised tool's name.
func (s *Supervisor) Tool() string { return s.cfg.Tool }

// Call runs one call and returns how it ended. ctx bounds only the wait
// for a free slot and a process (then the call is NotStarted, Err the
// context's cause); once the invocation is written, the call ends by its
// result, its acknowledged cancellation (Request.Cancel), its deadline
// (the watchdog) or the loss of its process.
func (s *Supervisor) Call(ctx context.Context, req Request) Outcome {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return Outcome{Kind: NotStarted, Err: context.Cause(ctx)}
	case <-s.closing:
		return Outcome{Kind: NotStarted, Err: ErrClosed}
	}
	defer func() { <-s.slots }()
	var lastErr error
	for range maxTries {
		ss, err := s.session(ctx)
		if err != nil {
			return Outcome{Kind: NotStarted, Err: err}
		}
		o, err := ss.call(req)
		if errors.Is(err, errNotWritten) {
			// The process went between the lookup and the write; nothing
			// reached it, so the next one may take the call.
			lastErr = ss.deadErr()
			continue
		}
		return o
	}
	return Outcome{Kind: NotStarted, Err: fmt.Errorf("%w: processes keep ending before they take a call: %w", ErrStartFailed, lastErr)}
}

// maxTries bounds the processes one call waits for: a tool that exits as
// soon as it starts must fail its calls, not hold them while it restarts.
const maxTries = 3

// session returns the live session, starting one (after the backoff) if
// there is none. Concurrent callers share one start.
func (s *Supervisor) session(ctx context.Context) (*session, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, ErrClosed
		case s.cur != nil && s.cur.deadErr() == nil:
			ss := s.cur
			s.mu.Unlock()
			return ss, nil
		case s.cur != nil:
			// It died before it was taken off (see lost).
			s.cur = nil
			s.mu.Unlock()
			continue
		case s.starting != nil:
			wait := s.starting
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		done := make(chan struct{})
		s.starting = done
		delay := time.Until(s.notBefore)
		restart := s.started > 0
		s.mu.Unlock()

		ss, err := s.startAfter(ctx, delay)
		s.mu.Lock()
		s.starting = nil
		close(done)
		if err == nil {
			if s.closed {
				// Close ran while this one started; it would not have
				// seen it.
				s.mu.Unlock()
				ss.stop()
				return nil, ErrClosed
			}
			// The process may already have died (a tool that exits at
			// once); lost could not take off what was not yet on, so
			// the next lookup does.
			s.cur = ss
		} else if !isContextErr(ctx, err) {
			s.backoffLocked()
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		s.cfg.Observer.ProcessStarted(s.cfg.Tool)
		if restart {
			s.cfg.Observer.ProcessRestarted(s.cfg.Tool)
		}
		return ss, nil
	}
}

func isContextErr(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Cause(ctx))
}

// startAfter waits out the restart backoff, then starts a process.
func (s *Supervisor) startAfter(ctx context.Context, delay time.Duration) (*session, error) {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.closing:
			return nil, ErrClosed
		}
	}
	ss, err := s.start()
	if err != nil {
		s.cfg.Logger.Warn("tool process did not start", "tool", s.cfg.Tool, "err", err)
	}
	return ss, err
}

// lost takes a poisoned session off the supervisor and sets the backoff
// for the next start; a process that answered a call resets it.
func (s *Supervisor) lost(ss *session, answered, stopping bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == ss {
		s.cur = nil
	}
	if stopping {
		return
	}
	if answered {
		s.failures = 0
	}
	s.backoffLocked()
}

// backoffLocked counts a failure and pushes the next start out:
// RestartInitial after the first, doubling up to RestartMax.
func (s *Supervisor) backoffLocked() {
	d := s.cfg.RestartInitial
	for i := 0; i < s.failures && d < s.cfg.RestartMax; i++ {
		d *= 2
	}
	s.failures++
	s.notBefore = time.Now().Add(min(d, s.cfg.RestartMax))
}

func (s *Supervisor) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops the process, if any: every call it holds is Lost with
// Stopped set, and later calls are NotStarted (ErrClosed). It waits for
// the process and every goroutine of the supervisor to end, or for ctx.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	ss := s.cur
	s.cur = nil
	starting := s.starting
	s.mu.Unlock()
	if ss != nil {
		ss.stop()
	}
	if starting != nil {
		// A start in progress sees closed when it ends and stops its
		// process itself; wait for that, so wg below counts it.
		select {
		case <-starting:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
