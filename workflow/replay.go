package workflow

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/splashfabric/splashfabric/host"
)

// SettableClock is a clock a replay can move to each entry's time; a
// resuming host keeps moving it with its own steps.
type SettableClock interface {
	host.Clock
	Set(time.Time)
}

// ReplayConfig is what Restore needs besides the ledger.
type ReplayConfig struct {
	// Runtime is the template of the session's runtime config; the
	// submission's limits, nonce and seed replace its own.
	Runtime host.Config
	// Register registers the session's tools on the fresh runtime; the
	// host's catalog. Restore then checks them against the pinned
	// digests through Digests, when set.
	Register func(*host.Runtime) error
	// Digests reports the digest of each tool the host would register,
	// by name; a pinned tool whose digest differs fails the replay.
	Digests map[string]string
	// Clock is the session's clock; nil means a host.ManualClock.
	Clock SettableClock
	// RequestID names the operations the restored session claims from
	// now on; nil names them after their call index.
	RequestID func() string
	// Background runs the replay's script slices as background work,
	// which gives way to live scripts waiting for the engine (see
	// host.Runtime.SetBackground); the restored session is live work.
	Background bool
}

// Restore rebuilds a session from its ledger entries: a fresh runtime runs
// the script and takes each recorded input at its recorded time, through
// the same function that applied it the first time. The session comes
// back with every entry stored, its live operations (Ops) as the first
// run left them, each taken to be out with a worker.
//
// A script that leaves its recorded calls ends failed with
// host.ErrNondeterministic (its Result) and holds no operation, so nothing
// is dispatched for it. Entries that do not apply fail the restore with
// ErrReplay; a ledger that does not check, with ErrInvalidEntry.
func Restore(entries []Entry, cfg ReplayConfig) (*Session, error) {
	l, err := Resume(entries)
	if err != nil {
		return nil, err
	}
	sub := l.Submitted()
	if err := checkPins(sub.Tools, cfg.Digests); err != nil {
		return nil, err
	}
	clock := cfg.Clock
	if clock == nil {
		clock = host.NewManualClock(entries[0].At)
	}
	clock.Set(entries[0].At)
	rt := host.NewRuntime(runtimeConfig(cfg.Runtime, sub, clock, entries))
	if cfg.Register != nil {
		if err := cfg.Register(rt); err != nil {
			return nil, fmt.Errorf("%w: registering tools: %v", ErrReplay, err)
		}
	}
	rt.SetBackground(cfg.Background)
	defer rt.SetBackground(false)
	res, err := rt.Eval(sub.Source)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReplay, err)
	}
	s := NewSession(Config{Runtime: rt, First: res, Clock: clock, Ledger: l, RequestID: cfg.RequestID})
	s.persisted, s.accepted = len(entries), true
	s.replayPump()
	for i, e := range entries[1:] {
		if rt.Diverged() != nil {
			break
		}
		clock.Set(e.At)
		if err := s.replay(e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrReplay, i+1, err)
		}
		s.replayPump()
	}
	s.settled = nil
	if d := rt.Diverged(); d != nil {
		if !s.result.Failed() {
			s.result = &host.EvalResult{Err: &host.ScriptError{Message: d.Error(), Err: d}}
		}
		clear(s.ops)
		return s, nil
	}
	for _, op := range s.ops {
		// The first run may have published it: a worker may hold it.
		op.sent = true
	}
	if s.newRequest == nil {
		s.newRequest = func() string { return fmt.Sprintf("replayed-%d", rt.CallsUsed()+1) }
	}
	return s, nil
}

// replay takes one entry as the first run did.
func (s *Session) replay(e Entry) error {
	if p := e.Prepared; p != nil {
		inv, ok := s.rt.ClaimNextExternalTool()
		if !ok || inv.ID != p.Op || inv.IdempotencyKey != p.Key {
			return fmt.Errorf("%w: prepared %s (%s) was not the next call the script made", host.ErrNondeterministic, p.Op, p.Tool)
		}
		s.ops[p.Op] = &Op{ID: p.Op, RequestID: p.Request, Inv: inv, AttemptAt: e.At}
		return nil
	}
	_, err := s.apply(*e.Applied)
	if err == nil {
		s.after()
	}
	return err
}

// replayPump runs local tools to the end, as the host's steps do after
// every input.
func (s *Session) replayPump() {
	for s.rt.LocalPending() {
		res, err := s.rt.Pump()
		if err != nil {
			return
		}
		s.keep(res)
	}
}

// runtimeConfig is the template with the submission's own settings and
// the ledger's calls as the replay plan.
func runtimeConfig(tmpl host.Config, sub Submitted, clock host.Clock, entries []Entry) host.Config {
	cfg := tmpl
	cfg.Clock = clock
	nonce := host.NewCapabilitySessionNonce(sub.Nonce)
	seed := sub.Seed
	cfg.SessionNonce, cfg.RandomSeed = &nonce, &seed
	cfg.Grants, cfg.Tools = sub.Grants, sub.ToolGrants
	cfg.ToolCallBudget, cfg.MaxPending = sub.ToolCallBudget, sub.MaxPending
	cfg.ExecutionBudget, cfg.MemoryBudget = sub.ExecutionBudget, sub.MemoryBudget
	// A resumed session runs for the tenant it was submitted for: its
	// slices are scheduled and its realm shared as the first run's were.
	cfg.Owner = sub.Owner
	cfg.Replay = nil
	for _, e := range entries {
		if p := e.Prepared; p != nil {
			cfg.Replay = append(cfg.Replay, host.PlannedCall{CallIndex: p.CallIndex, Tool: p.Tool, Input: p.Input})
		}
	}
	return cfg
}

// checkPins refuses a replay under tool definitions other than those the
// session started with.
func checkPins(pinned, have map[string]string) error {
	if have == nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(pinned)) {
		if digest := pinned[name]; have[name] != digest {
			errs = append(errs, fmt.Errorf("%q is %s here, the session pinned %s", name, orNone(have[name]), digest))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %v", ErrToolsChanged, errors.Join(errs...))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
