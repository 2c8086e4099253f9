package toolproc

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

// session is one process and the authenticated conversation with it.
//
// Goroutines: the reader (readLoop) owns open and is the only one that
// delivers a call's terminal outcome from a frame; a stderr copier; the
// reaper, which waits for the process and closes done. Callers write
// frames under wmu. Watchdog timers and Close poison the session from
// their own goroutines; poison runs once.
type session struct {
	sup  *Supervisor
	id   string
	proc *process

	// wmu orders frames on stdin: sealing and writing happen under it, so
	// the sequence numbers reach the process in order.
	wmu  sync.Mutex
	seal *protocol.SessionAuthenticator // guarded by wmu
	// open is used by the reader goroutine only; it is a second
	// authenticator of the same session and role, so that sealing and
	// opening never share HMAC state.
	open *protocol.SessionAuthenticator

	// mu guards the fields below and every call's fields.
	mu       sync.Mutex
	calls    map[string]*call
	next     uint64
	answered bool         // some call got a terminal frame: the process works
	dead     *PoisonError // set once, by poison
	// watchdogCall and stopping mark the calls that the supervisor's own
	// stop decided (see Outcome.Watchdog and Outcome.Stopped).
	watchdogCall *call
	stopping     bool
	// unanswered is the cancelled call that did not end within
	// Config.CancelGrace (see armGraceLocked).
	unanswered *call

	// mcp is the conversation with an MCP server; nil for a process that
	// speaks the frame protocol.
	mcp *mcpSession

	exited chan struct{} // closed by the reaper once the process is gone
	done   chan struct{} // closed once the reader and stderr copier returned too
}

// call is one invocation in flight; its fields are guarded by session.mu.
type call struct {
	id      string
	req     Request
	out     chan Outcome // buffered; exactly one send, by end
	timer   *time.Timer  // the watchdog, at the deadline or Config.MaxRuntime
	grace   *time.Timer  // the cancel grace; nil until cancelled
	chunks  uint64       // chunks received so far
	refused int          // chunks Request.Chunk refused
	// cancelSent: the cancellation request is out; disposed: its
	// disposition came back; unsupported: it was unsupported (or the
	// tool honours no cancellation); answered: the result came; ended:
	// out was sent.
	cancelSent, disposed, unsupported, answered, ended bool
}

// start launches a process and its goroutines.
func (s *Supervisor) start() (*session, error) {
	if s.cfg.Protocol == ProtocolMCP {
		return s.startMCP()
	}
	key, err := newSessionKey()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.started++
	n := s.started
	s.mu.Unlock()
	id := s.cfg.Tool + "/" + strconv.FormatUint(n, 10) + "-" + s.incarnation
	seal, err := protocol.NewSessionAuthenticator(id, key, protocol.RoleHost)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	open, _ := protocol.NewSessionAuthenticator(id, key, protocol.RoleHost)
	proc, err := s.launch(id, &key)
	if err != nil {
		return nil, err
	}
	ss := &session{
		sup: s, id: id, proc: proc, seal: seal, open: open,
		calls:  make(map[string]*call),
		exited: make(chan struct{}),
		done:   make(chan struct{}),
	}
	log := s.cfg.Logger.With("tool", s.cfg.Tool, "session", id)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		logStderr(proc.stderr, log)
	}()
	go func() {
		defer wg.Done()
		ss.readLoop()
	}()
	ss.startWatch()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := proc.cmd.Wait()
		// Whatever the tool left running in its group goes with it, so
		// no straggler holds stdout open.
		proc.signal(syscall.SIGKILL)
		close(ss.exited)
		wg.Wait()
		proc.stdout.Close()
		proc.stderr.Close()
		ss.poison(ss.exitPoison(err))
		ss.removeCgroup()
		close(ss.done)
	}()
	log.Info("tool process started", "pid", proc.cmd.Process.Pid, "contained", s.cfg.Contain != nil)
	return ss, nil
}

// startWatch watches a sandbox's limits until its process exits.
func (ss *session) startWatch() {
	if ss.proc.sandbox == nil {
		return
	}
	ss.sup.wg.Add(1)
	go func() {
		defer ss.sup.wg.Done()
		ss.watch(ss.proc.sandbox)
	}()
}

// exitPoison says why the process ended: the limit its sandbox reached,
// or its exit.
func (ss *session) exitPoison(waitErr error) *PoisonError {
	if sb := ss.proc.sandbox; sb != nil {
		if r := sb.exitReason(ss.proc.cmd.ProcessState); r != "" {
			return poison(r, "the process ended at its sandbox's %s (%v)", limitName(r), waitErr)
		}
	}
	return poison(ReasonExited, "process exited: %v", waitErr)
}

// removeCgroup removes the sandbox's cgroup once its process is gone.
func (ss *session) removeCgroup() {
	if sb := ss.proc.sandbox; sb != nil && sb.cg != nil {
		sb.cg.remove()
	}
}

// deadErr returns why the session was poisoned, nil while it lives.
func (ss *session) deadErr() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.dead == nil {
		return nil
	}
	return ss.dead
}

// errNotWritten reports a call refused before its invocation was written
// to the process; the caller may try another session.
var errNotWritten = errors.New("toolproc: session ended before the call was written")

// call runs one call in the session; see Supervisor.Call.
func (ss *session) call(req Request) (Outcome, error) {
	c := &call{req: req, out: make(chan Outcome, 1)}
	ss.mu.Lock()
	if ss.dead != nil {
		ss.mu.Unlock()
		return Outcome{}, errNotWritten
	}
	ss.next++
	c.id = "c" + strconv.FormatUint(ss.next, 10)
	ss.calls[c.id] = c
	// Armed before the invocation is written, so no frame of the call
	// can outrun its deadline. A call without one still ends, at the
	// worker's maximum runtime.
	deadline, capped := req.Deadline, false
	if deadline.IsZero() {
		deadline, capped = time.Now().Add(ss.sup.cfg.MaxRuntime), true
	}
	c.timer = time.AfterFunc(time.Until(deadline), func() { ss.watchdog(c, capped) })
	ss.sup.cfg.Observer.ProcessInFlight(ss.sup.cfg.Tool, ss.inFlight())
	ss.mu.Unlock()

	if ss.mcp != nil {
		return ss.mcpCall(c), nil
	}
	inv := req.Invoke
	inv.RequestID = c.id
	if err := ss.send(protocol.InvokeMessage(inv)); err != nil {
		var pe *PoisonError
		if !errors.As(err, &pe) {
			// Refused before a byte was written: the invocation itself
			// is invalid.
			ss.mu.Lock()
			ss.drop(c)
			ss.mu.Unlock()
			return Outcome{Kind: NotStarted, Err: err}, nil
		}
	}
	cancel := req.Cancel
	for {
		select {
		case o := <-c.out:
			return o, nil
		case <-cancel:
			cancel = nil
			ss.cancel(c)
		}
	}
}

// send seals msg as the next frame and writes it. A failed write means
// the process is gone: the session is poisoned and the returned error is
// the PoisonError.
func (ss *session) send(msg protocol.WorkerMessage) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	f, err := ss.seal.Seal(msg)
	if err != nil {
		return err
	}
	line, err := f.ToJSONLine()
	if err != nil {
		return err
	}
	if _, err := ss.proc.stdin.Write(line); err != nil {
		pe := poison(ReasonExited, "writing to the process: %v", err)
		ss.poison(pe)
		return pe
	}
	return nil
}

// cancel sends the call's one cancellation request, unless the call has
// already ended, and arms its grace: a call still running
// Config.CancelGrace later is stopped with its process. A call of a tool
// that honours no cancellation (Request.Uncancellable) is sent nothing
// and only gets the grace.
func (ss *session) cancel(c *call) {
	if ss.mcp != nil {
		ss.mcpCancel(c)
		return
	}
	ss.mu.Lock()
	if ss.dead != nil || c.ended || c.answered || c.cancelSent {
		ss.mu.Unlock()
		return
	}
	c.cancelSent = true
	if c.req.Uncancellable {
		// No disposition will come: the call is forgotten as it ends.
		c.disposed, c.unsupported = true, true
	}
	ss.armGraceLocked(c)
	ss.mu.Unlock()
	if c.req.Uncancellable {
		return
	}
	inv := c.req.Invoke
	_ = ss.send(protocol.CancelMessage(protocol.Cancel{
		RequestID: c.id, Tool: inv.Tool, Attempt: inv.Attempt, IdempotencyKey: inv.IdempotencyKey,
	}))
}

// armGraceLocked starts c's cancel grace; ss.mu is held. When it passes
// and c has not ended (by its result, an acknowledgement, its deadline),
// the session is poisoned and c is lost, stopped: its effect is
// indeterminate, since no tool said it stopped.
func (ss *session) armGraceLocked(c *call) {
	grace := ss.sup.cfg.CancelGrace
	// Stopped by end when the call ends first.
	c.grace = time.AfterFunc(grace, func() {
		ss.poisonWhen(func() *PoisonError {
			if c.ended {
				return nil
			}
			ss.unanswered = c
			if c.unsupported {
				return poison(ReasonCancelUnsupported, "call %s did not end within %s of its cancellation, which its tool does not support", c.id, grace)
			}
			return poison(ReasonCancelUnanswered, "call %s got no answer to its cancellation within %s", c.id, grace)
		})
	})
}

// end delivers c's outcome once and removes it; ss.mu is held.
func (ss *session) end(c *call, o Outcome) {
	if c.ended {
		return
	}
	c.ended = true
	if c.timer != nil {
		// Disarmed before the outcome is visible: a terminal frame that
		// won the race is never followed by a watchdog stop for it.
		c.timer.Stop()
	}
	if c.grace != nil {
		c.grace.Stop()
	}
	c.out <- o
	if !c.cancelSent || c.disposed || o.Kind != Answered {
		ss.drop(c)
	}
	// Otherwise the call stays listed until its too_late arrives.
}

// drop forgets c; ss.mu is held.
func (ss *session) drop(c *call) {
	if _, ok := ss.calls[c.id]; !ok {
		return
	}
	delete(ss.calls, c.id)
	if c.timer != nil {
		c.timer.Stop()
	}
	ss.sup.cfg.Observer.ProcessInFlight(ss.sup.cfg.Tool, ss.inFlight())
}

// inFlight counts calls that have not ended; ss.mu is held.
func (ss *session) inFlight() int {
	n := 0
	for _, c := range ss.calls {
		if !c.ended {
			n++
		}
	}
	return n
}

// watchdog runs when c's deadline (or, capped, the maximum runtime of a
// call without one) passes. If c has not ended, the deadline won: the
// process is stopped and c is lost, indeterminate.
func (ss *session) watchdog(c *call, capped bool) {
	ss.poisonWhen(func() *PoisonError {
		if c.ended {
			return nil
		}
		ss.watchdogCall = c
		if capped {
			return poison(ReasonMaxRuntime, "call %s has no deadline and ran past the maximum runtime %s", c.id, ss.sup.cfg.MaxRuntime)
		}
		return poison(ReasonWatchdog, "call %s passed its deadline", c.id)
	})
}

// stop poisons the session for a lifecycle stop.
func (ss *session) stop() {
	ss.mu.Lock()
	ss.stopping = true
	ss.mu.Unlock()
	ss.poison(poison(ReasonStopped, "the supervisor is closing"))
}

// poison gives the session up, once: it is taken off the supervisor,
// every call it holds is lost, and the process is stopped.
func (ss *session) poison(pe *PoisonError) { ss.poisonWhen(func() *PoisonError { return pe }) }

// poisonWhen is poison with what decide returns, unless it returns nil;
// decide runs under the session's lock, once the session is known to be
// alive. The watchdog and the cancel grace need the check and the
// poisoning to be one step, so that a result that won the race is never
// followed by a stop.
func (ss *session) poisonWhen(decide func() *PoisonError) {
	s := ss.sup
	ss.mu.Lock()
	if ss.dead != nil {
		ss.mu.Unlock()
		return
	}
	pe := decide()
	if pe == nil {
		ss.mu.Unlock()
		return
	}
	ss.dead = pe
	lostOne := ss.inFlight() > 0
	stopping := ss.stopping
	ss.mu.Unlock()
	// Counted before any call learns of it, so whoever sees a lost call
	// sees the count.
	if pe.Reason == ReasonWatchdog || pe.Reason == ReasonMaxRuntime {
		s.cfg.Observer.WatchdogStop(s.cfg.Tool)
	}
	if quiet := pe.Reason == ReasonExited && !lostOne && (stopping || s.isClosed()); !quiet {
		s.cfg.Observer.ProcessPoisoned(s.cfg.Tool, pe.Reason)
		s.cfg.Logger.Warn("tool session poisoned", "tool", s.cfg.Tool, "session", ss.id, "reason", pe.Reason, "detail", pe.Detail)
	}
	ss.mu.Lock()
	for _, c := range ss.calls {
		o := Outcome{Kind: Lost, Err: pe}
		switch {
		case ss.stopping:
			o.Stopped, o.Err = true, fmt.Errorf("%w: %w", ErrStopped, pe)
		case c == ss.watchdogCall:
			o.Watchdog, o.Err = true, fmt.Errorf("%w: %w", ErrWatchdog, pe)
		case c == ss.unanswered:
			o.Stopped, o.Err = true, fmt.Errorf("%w: %w", ErrCancelUnanswered, pe)
		}
		ss.end(c, o)
	}
	clear(ss.calls)
	answered := ss.answered
	ss.mu.Unlock()

	s.cfg.Observer.ProcessInFlight(s.cfg.Tool, 0)
	s.lost(ss, answered, stopping)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.terminate()
	}()
}

// terminate stops the process: stdin closed, TERM to its group, KILL
// after the grace period.
func (ss *session) terminate() {
	_ = ss.proc.stdin.Close()
	select {
	case <-ss.exited:
		return
	default:
	}
	ss.proc.signal(syscall.SIGTERM)
	t := time.NewTimer(ss.sup.cfg.StopGrace)
	defer t.Stop()
	select {
	case <-ss.exited:
	case <-t.C:
		ss.proc.signal(syscall.SIGKILL)
		<-ss.exited
	}
}
