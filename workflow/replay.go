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

// ReplayConfig is what Replay needs besides the ledger.
type ReplayConfig struct {
	// Runtime is the template of the session's runtime config; the
	// submission's limits, nonce and seed replace its own.
	Runtime host.Config
	// Register registers the session's tools on the fresh runtime; the
	// host's catalog. Replay then checks them against the pinned digests
	// through Digests, when set.
	Register func(*host.Runtime) error
	// Digests reports the digest of each tool the host would register,
	// by name; a pinned tool whose digest differs fails the replay.
	Digests map[string]string
	// Clock is the session's clock; nil means a host.ManualClock.
	Clock SettableClock
}

// LiveOperation is an operation the ledger prepared and the replayed
// runtime still holds live: the resuming host must get it answered.
type LiveOperation struct {
	Prepared Prepared
	// AttemptAt is when its latest attempt was made (prepared, or
	// retried): no later than that attempt's dispatch.
	AttemptAt time.Time
	State     host.OperationState
	// Invocation is its latest attempt, to publish again under the same
	// request id and key.
	Invocation host.ExternalInvocation
	// CancelRequested: the host had asked its worker to cancel it.
	CancelRequested bool
}

// Resumed is a session rebuilt from its ledger.
type Resumed struct {
	Runtime *host.Runtime
	Clock   SettableClock
	// Result is the script's state after the last entry.
	Result     *host.EvalResult
	Ledger     *Ledger
	Operations []LiveOperation
}

// Replay rebuilds a session from its ledger entries: a fresh runtime runs
// the script and takes each recorded input at its recorded time. A script
// that leaves its recorded calls ends failed with host.ErrNondeterministic
// (in Resumed.Result) and no operation is handed back to dispatch. Entries
// that do not apply fail the replay with ErrReplay.
func Replay(entries []Entry, cfg ReplayConfig) (*Resumed, error) {
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
	res, err := rt.Eval(sub.Source)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrReplay, err)
	}
	r := &replayer{rt: rt, res: res, live: make(map[host.ExternalToolID]*LiveOperation)}
	r.pump()
	for i, e := range entries[1:] {
		if r.rt.Diverged() != nil {
			break
		}
		clock.Set(e.At)
		if err := r.take(e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrReplay, i+1, err)
		}
		r.pump()
	}
	out := &Resumed{Runtime: rt, Clock: clock, Result: r.res, Ledger: l}
	if rt.Diverged() != nil {
		if out.Result == nil || !out.Result.Failed() {
			out.Result = &host.EvalResult{Err: &host.ScriptError{Message: rt.Diverged().Error(), Err: rt.Diverged()}}
		}
		return out, nil
	}
	for _, op := range r.order {
		live := r.live[op]
		info, ok := rt.Operation(op)
		if !ok || info.State.Terminal() {
			continue
		}
		live.State = info.State
		out.Operations = append(out.Operations, *live)
	}
	return out, nil
}

// replayer feeds recorded inputs to a runtime.
type replayer struct {
	rt    *host.Runtime
	res   *host.EvalResult
	live  map[host.ExternalToolID]*LiveOperation
	order []host.ExternalToolID
}

// take applies one entry as the first run did.
func (r *replayer) take(e Entry) error {
	if p := e.Prepared; p != nil {
		inv, ok := r.rt.ClaimNextExternalTool()
		if !ok || inv.ID != p.Op || inv.IdempotencyKey != p.Key {
			return fmt.Errorf("%w: prepared %s (%s) was not the next call the script made", host.ErrNondeterministic, p.Op, p.Tool)
		}
		r.live[p.Op] = &LiveOperation{Prepared: *p, AttemptAt: e.At, Invocation: inv}
		r.order = append(r.order, p.Op)
		return nil
	}
	a := e.Applied
	var res *host.EvalResult
	var err error
	switch a.Kind {
	case InputSucceeded:
		res, err = r.rt.CompleteExternalTool(a.Op, host.Ok(a.Output))
	case InputFailed:
		res, err = r.rt.CompleteExternalTool(a.Op, host.Fail(a.Error))
	case InputRetryTransient, InputRetryRateLimited:
		class := host.RetryTransient
		if a.Kind == InputRetryRateLimited {
			class = host.RetryRateLimited
		}
		var inv host.ExternalInvocation
		if inv, err = r.rt.RetryExternalTool(a.Op, class); err == nil && r.live[a.Op] != nil {
			r.live[a.Op].Invocation = inv
			r.live[a.Op].AttemptAt = e.At
		}
	case InputExpire:
		_, res = r.rt.ExpireTimedOutTools()
	case InputCancelRequested:
		_, err = r.rt.RequestExternalToolCancellation(a.Op)
		if err == nil && r.live[a.Op] != nil {
			r.live[a.Op].CancelRequested = true
		}
	case InputCancelConfirmed:
		res, err = r.rt.ConfirmExternalToolCancellation(a.Op)
	}
	if err != nil {
		return err
	}
	if res != nil {
		r.res = res
	}
	return nil
}

// pump runs local tools to the end, as the host's step does after every
// input.
func (r *replayer) pump() {
	for r.rt.LocalPending() {
		res, err := r.rt.Pump()
		if err != nil {
			return
		}
		if res != nil {
			r.res = res
		}
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
		return fmt.Errorf("%w: tool definitions changed: %v", ErrReplay, errors.Join(errs...))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
