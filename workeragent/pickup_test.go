package workeragent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"

	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
)

// errAnswerLost stands for a journal write whose answer never came back:
// the node that took it went away, or the request timed out.
var errAnswerLost = errors.New("nats: timeout")

// lossyJournal loses the answers of the first lose Begins: each Begin is
// written (landed true) or not, and then fails as if its answer were
// lost, after a delay standing for the request's timeout.
type lossyJournal struct {
	idempotency.Journal
	landed bool
	delay  time.Duration
	lose   atomic.Int64
	begins atomic.Int64
	resume atomic.Int64
}

func (j *lossyJournal) Begin(ctx context.Context, key, owner string, lease time.Duration) (idempotency.Claim, error) {
	j.begins.Add(1)
	if j.lose.Add(-1) < 0 {
		return j.Journal.Begin(ctx, key, owner, lease)
	}
	if j.landed {
		if _, err := j.Journal.Begin(ctx, key, owner, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	time.Sleep(j.delay)
	return idempotency.Claim{}, errAnswerLost
}

func (j *lossyJournal) Resume(ctx context.Context, key, owner string, lease time.Duration) (idempotency.Claim, error) {
	j.resume.Add(1)
	return j.Journal.Resume(ctx, key, owner, lease)
}

// TestLostClaimAnswerIsResumed: a worker whose Begin wrote the claim but
// lost the answer recognises the claim as its own, runs the call once
// and answers it, instead of deferring to itself until the lease runs out
// and then ending the call indeterminate. The pickup keeps the message in
// progress meanwhile, though the lost answer takes longer than the ack
// wait.
func TestLostClaimAnswerIsResumed(t *testing.T) {
	for _, landed := range []bool{true, false} {
		name := map[bool]string{true: "write landed", false: "write lost"}[landed]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			var effects atomic.Int64
			var j *lossyJournal
			a := e.startAgentWith("w1", func(c *workeragent.Config) {
				j = &lossyJournal{Journal: c.Journal, landed: landed, delay: e.fcfg.AckWait * 3 / 2}
				j.lose.Store(1)
				c.Journal = j
			}, func(a *workeragent.Agent) {
				must(t, a.HandleTool(tooltest.Text(t, "ledger"), upper(&effects)))
			})
			inv := e.newInvoke("ledger", "once")
			e.publish(inv)
			if res := e.result(t); res.Status != protocol.ResultSucceeded || res.Payload.Text != "ONCE" {
				t.Fatalf("result = %+v", res)
			}
			if got := effects.Load(); got != 1 {
				t.Fatalf("effects = %d, want 1", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
			defer cancel()
			rec, err := j.Get(ctx, inv.IdempotencyKey)
			must(t, err)
			if rec.State != idempotency.StateDone || rec.Claims != 1 || rec.Takeovers != 0 {
				t.Fatalf("record = %+v", rec)
			}
			if s := a.Stats(); s.Redeliveries != 0 || s.Deferred != 0 || s.TakenOver != 0 || s.Indeterminate != 0 || s.Executed != 1 {
				t.Fatalf("stats = %+v", s)
			}
			if j.begins.Load() != 1 || j.resume.Load() != 1 {
				t.Fatalf("%d Begins, %d Resumes; want 1 and 1", j.begins.Load(), j.resume.Load())
			}
		})
	}
}

// TestResumedTakeoverIsIndeterminate: a lost answer to a Begin that took
// over an expired holder's lease is resumed as such: the earlier holder's
// effect is unknown, so the call ends indeterminate without running.
func TestResumedTakeoverIsIndeterminate(t *testing.T) {
	e := newEnv(t)
	var effects atomic.Int64
	var j *lossyJournal
	a := e.startAgentWith("w1", func(c *workeragent.Config) {
		j = &lossyJournal{Journal: c.Journal, landed: true}
		j.lose.Store(1)
		c.Journal = j
	}, func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "ledger"), upper(&effects)))
	})
	inv := e.newInvoke("ledger", "x")
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	// A crashed holder's claim, expired by the time the worker reads it.
	if _, err := j.Journal.Begin(ctx, inv.IdempotencyKey, "crashed/1", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	e.publish(inv)
	if res := e.result(t); res.Status != protocol.ResultIndeterminate {
		t.Fatalf("result = %+v", res)
	}
	if got := effects.Load(); got != 0 {
		t.Fatalf("effects = %d, want 0", got)
	}
	rec, err := j.Get(ctx, inv.IdempotencyKey)
	must(t, err)
	if rec.State != idempotency.StateDone || rec.Result.Status != idempotency.StatusIndeterminate ||
		rec.Claims != 2 || rec.Takeovers != 1 || rec.PreviousOwner != "crashed/1" {
		t.Fatalf("record = %+v", rec)
	}
	if s := a.Stats(); s.TakenOver != 1 || s.Indeterminate != 1 || s.Executed != 0 {
		t.Fatalf("stats = %+v", s)
	}
}
