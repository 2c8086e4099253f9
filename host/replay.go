package host

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
)

// RandomSeed seeds a session's Math.random. A durable host records it with
// the session, so a replay draws the same numbers the first run drew.
type RandomSeed [32]byte

// MarshalText writes the seed as 64 hex digits.
func (s RandomSeed) MarshalText() ([]byte, error) { return hexText(s[:]), nil }

// UnmarshalText reads 64 hex digits.
func (s *RandomSeed) UnmarshalText(b []byte) error { return unhexText(s[:], b, "random seed") }

func hexText(b []byte) []byte {
	out := make([]byte, hex.EncodedLen(len(b)))
	hex.Encode(out, b)
	return out
}

func unhexText(dst, text []byte, what string) error {
	if hex.DecodedLen(len(text)) != len(dst) {
		return fmt.Errorf("%w: %s of %d hex digits, want %d", ErrInvalidInput, what, len(text), hex.EncodedLen(len(dst)))
	}
	if _, err := hex.Decode(dst, text); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidInput, what, err)
	}
	return nil
}

// PlannedCall is a tool call a replayed script is expected to make: the
// call index, tool and input of an external operation the first run
// prepared.
type PlannedCall struct {
	CallIndex uint64
	Tool      string
	Input     string
}

// replayPlan holds the calls a replay must repeat, by call index. Only
// external calls are planned; a local call (which the ledger does not
// record) may take any index the plan leaves free.
type replayPlan struct {
	calls    map[uint64]PlannedCall
	last     uint64 // the highest planned call index
	diverged error  // set once the script left the plan; it stays left
}

func newReplayPlan(calls []PlannedCall) *replayPlan {
	if len(calls) == 0 {
		return nil
	}
	p := &replayPlan{calls: make(map[uint64]PlannedCall, len(calls))}
	for _, c := range calls {
		p.calls[c.CallIndex] = c
		p.last = max(p.last, c.CallIndex)
	}
	return p
}

// check refuses a call that does not repeat the plan at its index. A
// script that diverged is stopped where it stands: the error interrupts
// its VM, so it cannot catch it and go on to start something else.
func (r *Runtime) checkPlan(t *tool, name, in string) error {
	p := r.plan
	if p == nil {
		return nil
	}
	if p.diverged != nil {
		return p.diverged
	}
	idx := r.calls + 1
	if idx > p.last {
		return nil
	}
	want, planned := p.calls[idx]
	switch {
	case planned && (want.Tool != name || want.Input != in):
		p.diverged = fmt.Errorf("%w: call %d started %q, the ledger has %q with other input or tool", ErrNondeterministic, idx, name, want.Tool)
	case !planned && t.external:
		p.diverged = fmt.Errorf("%w: call %d started %q, which the ledger never prepared", ErrNondeterministic, idx, name)
	case planned && !t.external:
		p.diverged = fmt.Errorf("%w: call %d called local %q where the ledger has %q", ErrNondeterministic, idx, name, want.Tool)
	default:
		return nil
	}
	if e, ok := r.script.(*scriptEngine); ok && e.vm != nil && e.inSlice {
		e.vm.Interrupt(p.diverged)
	}
	return p.diverged
}

// Diverged reports the error that stopped a replayed script when it left
// its plan; nil while it follows it, or when the runtime replays nothing.
func (r *Runtime) Diverged() error {
	if r.plan == nil {
		return nil
	}
	return r.plan.diverged
}

// RandomSeed returns the seed of this session's Math.random.
func (r *Runtime) RandomSeed() RandomSeed { return r.seed }

// PlannedCalls returns the replay plan in call order; nil when the runtime
// replays nothing.
func (r *Runtime) PlannedCalls() []PlannedCall {
	if r.plan == nil {
		return nil
	}
	out := make([]PlannedCall, 0, len(r.plan.calls))
	for _, c := range r.plan.calls {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CallIndex < out[j].CallIndex })
	return out
}

// randomFloat is Math.random. Its source is made on the first call: most
// scripts never draw, and a ChaCha8 state is a third of a kilobyte.
func (r *Runtime) randomFloat() float64 {
	if r.random == nil {
		r.random = newRandom(r.seed)
	}
	return r.random.Float64()
}

// newRandom returns the session's Math.random source: ChaCha8, because a
// seed must give the same numbers on every host and Go version.
func newRandom(seed RandomSeed) *rand.Rand {
	return rand.New(rand.NewChaCha8(seed))
}
