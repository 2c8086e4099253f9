package workeragent_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

var (
	faultSeeds = flag.Int("journal-faults.seeds", 0, "run the journal fault model with this many random seeds besides the fixed ones")
	faultSeed  = flag.Uint64("journal-faults.seed", 0, "replay the journal fault model with this seed alone")
)

// faultFixedSeeds run in every go test.
var faultFixedSeeds = []uint64{1, 2, 3, 7, 42}

// faultyJournal loses the answers of journal calls as the seed decides:
// each call of a key may lose its answer, after the write landed or
// before it reached the journal, up to a budget per key, so that every
// call is answered again within a lease. It records what it did for the
// failure report.
type faultyJournal struct {
	idempotency.Journal
	mu     sync.Mutex
	rng    *rand.Rand
	budget map[string]int
	trace  []string
}

const faultBudget = 3

// fault decides whether op on key loses its answer, and if so whether
// it lands first.
func (j *faultyJournal) fault(op, key string) (lose, landed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	left, ok := j.budget[key]
	if !ok {
		left = faultBudget
	}
	if left == 0 || j.rng.IntN(3) != 0 {
		j.trace = append(j.trace, fmt.Sprintf("%s %s", op, key))
		return false, false
	}
	j.budget[key] = left - 1
	landed = j.rng.IntN(2) == 0
	j.trace = append(j.trace, fmt.Sprintf("%s %s: answer lost, landed %v", op, key, landed))
	return true, landed
}

// lossy runs write under the fault fault decides.
func (j *faultyJournal) lossy(op, key string, write func() error) error {
	lose, landed := j.fault(op, key)
	if !lose {
		return write()
	}
	if landed {
		if err := write(); err != nil {
			return err
		}
	}
	return errAnswerLost
}

func (j *faultyJournal) Begin(ctx context.Context, key, owner string, lease time.Duration) (c idempotency.Claim, err error) {
	err = j.lossy("begin", key, func() (err error) { c, err = j.Journal.Begin(ctx, key, owner, lease); return err })
	return c, err
}

func (j *faultyJournal) Resume(ctx context.Context, key, owner string, lease time.Duration) (c idempotency.Claim, err error) {
	err = j.lossy("resume", key, func() (err error) { c, err = j.Journal.Resume(ctx, key, owner, lease); return err })
	return c, err
}

func (j *faultyJournal) Renew(ctx context.Context, c idempotency.Claim) (out idempotency.Claim, err error) {
	err = j.lossy("renew", c.Record.Key, func() (err error) { out, err = j.Journal.Renew(ctx, c); return err })
	return out, err
}

func (j *faultyJournal) Finish(ctx context.Context, c idempotency.Claim, r idempotency.Result) error {
	return j.lossy("finish", c.Record.Key, func() error { return j.Journal.Finish(ctx, c, r) })
}

func (j *faultyJournal) Release(ctx context.Context, c idempotency.Claim) error {
	return j.lossy("release", c.Record.Key, func() error { return j.Journal.Release(ctx, c) })
}

// faultCall is what the seed makes of one call: whether its first run
// fails retryably, how long each run works (long enough, for some, to be
// renewed once or twice), and how many copies of it the stream holds (a
// second, as a republish past the duplicate window makes, races the first
// on its key).
type faultCall struct {
	inv        protocol.Invoke
	retryFirst bool
	work       time.Duration
	copies     int
}

// TestJournalFaultModel runs claimed calls on two agents while the
// journal loses the answers of its writes, landed or not, at generated
// points of every claim's life: Begin, Resume, renewals, Finish and
// Release. Some calls have two copies in the stream, which race on their
// key. With no crash, every call must end as if nothing were lost: each
// answer the host takes is checked as it comes (never indeterminate, the
// call's own output, a retryable failure only where the handler returned
// one), and at the end every key's record is its one result, from one
// successful run. A host plays its part by hand: a retryable failure is
// answered with the next attempt.
//
// A failing seed prints the journal's trace; -journal-faults.seed replays
// its choices (the goroutines' interleaving is the scheduler's).
func TestJournalFaultModel(t *testing.T) {
	seeds := testwait.Seeds(faultFixedSeeds, *faultSeeds, *faultSeed)
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runJournalFaultModel(t, seed) })
	}
}

func runJournalFaultModel(t *testing.T, seed uint64) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(seed, ^seed))
	var j *faultyJournal
	calls := map[string]*faultCall{}
	runs := map[string]*atomic.Int64{}
	successes := map[string]*atomic.Int64{}
	for range 8 {
		inv := e.newInvoke("ledger", fmt.Sprintf("in-%d", rng.IntN(1000)))
		c := &faultCall{inv: inv, retryFirst: rng.IntN(3) == 0, copies: 1}
		if rng.IntN(2) == 0 {
			c.work = time.Duration(250+rng.IntN(250)) * time.Millisecond
		}
		if !c.retryFirst && rng.IntN(3) == 0 {
			c.copies = 2
		}
		calls[inv.IdempotencyKey] = c
		runs[inv.IdempotencyKey] = new(atomic.Int64)
		successes[inv.IdempotencyKey] = new(atomic.Int64)
	}
	shareJournal := func(cfg *workeragent.Config) {
		if j == nil {
			j = &faultyJournal{Journal: cfg.Journal, rng: rand.New(rand.NewPCG(^seed, seed)), budget: map[string]int{}}
		}
		cfg.Journal = j
	}
	register := func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "ledger"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			c := calls[call.IdempotencyKey]
			n := runs[call.IdempotencyKey].Add(1)
			select {
			case <-time.After(c.work):
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
			if c.retryFirst && n == 1 {
				return workeragent.Output{}, workeragent.Retryable(errors.New("busy"))
			}
			successes[call.IdempotencyKey].Add(1)
			return workeragent.Result(strings.ToUpper(call.Input.Text)), nil
		})))
	}
	agents := []*running{e.startAgentWith("w1", shareJournal, register), e.startAgentWith("w2", shareJournal, register)}
	fail := func(format string, args ...any) {
		t.Helper()
		j.mu.Lock()
		trace := strings.Join(j.trace, "\n  ")
		j.mu.Unlock()
		t.Fatalf("seed %d: %s\njournal trace:\n  %s\nreplay: go test ./workeragent -run TestJournalFaultModel -journal-faults.seed %d",
			seed, fmt.Sprintf(format, args...), trace, seed)
	}

	byRequest := map[string]*faultCall{}
	for _, c := range calls {
		byRequest[c.inv.RequestID] = c
		e.publish(c.inv)
		if c.copies == 2 {
			e.publishAs(c.inv, c.inv.IdempotencyKey+"/copy")
		}
	}
	// The events stream keeps one terminal answer per attempt, so the
	// copies of a call answer once between them; that both were settled
	// shows in the consumer's pending count below.
	done := map[string]bool{}
	for len(done) < len(calls) {
		res := e.result(t)
		c := byRequest[res.RequestID]
		switch {
		case c == nil:
			fail("an answer to no call: %+v", res)
		case done[c.inv.IdempotencyKey]:
			fail("a second answer after the result: %+v", res)
		case res.Attempt != c.inv.Attempt:
			fail("an answer to attempt %d while attempt %d runs: %+v", res.Attempt, c.inv.Attempt, res)
		case res.Status == protocol.ResultRetryTransient && c.retryFirst && c.inv.Attempt == 1:
			c.inv.Attempt++
			e.publish(c.inv)
		case res.Status == protocol.ResultSucceeded && res.Payload.Text == strings.ToUpper(c.inv.Input.Text):
			done[c.inv.IdempotencyKey] = true
		default:
			fail("call %s attempt %d answered %+v", c.inv.IdempotencyKey, c.inv.Attempt, res)
		}
	}
	testwait.Until(t, 0, "every call acked", func() bool { return e.pending(t, "ledger") == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	for key, c := range calls {
		rec, err := j.Journal.Get(ctx, key)
		switch {
		case err != nil:
			fail("record of %s: %v", key, err)
		case rec.State != idempotency.StateDone || rec.Result == nil || rec.Result.Payload.Text != strings.ToUpper(c.inv.Input.Text) || rec.Takeovers != 0:
			fail("record of %s: %+v", key, rec)
		case successes[key].Load() != 1:
			fail("%s succeeded in %d runs", key, successes[key].Load())
		}
	}
	var deferred, hits uint64
	for _, a := range agents {
		s := a.Stats()
		if s.TakenOver != 0 || s.Indeterminate != 0 {
			fail("stats of an agent: %+v", s)
		}
		deferred, hits = deferred+s.Deferred, hits+s.DedupeHits
	}
	j.mu.Lock()
	lost := 0
	for _, left := range j.budget {
		lost += faultBudget - left
	}
	j.mu.Unlock()
	t.Logf("seed %d: %d answers lost, %d deliveries deferred to another holder, %d answered from the journal", seed, lost, deferred, hits)
}
