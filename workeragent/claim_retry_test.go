package workeragent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

// endLossyJournal loses the answer of the first Finish or Release (lose
// names which): the write is made (landed) or not, and then fails as if
// its answer were lost.
type endLossyJournal struct {
	idempotency.Journal
	lose   string
	landed bool
	lost   atomic.Bool
}

func (j *endLossyJournal) loses(op string) bool {
	return j.lose == op && j.lost.CompareAndSwap(false, true)
}

func (j *endLossyJournal) Finish(ctx context.Context, c idempotency.Claim, r idempotency.Result) error {
	if !j.loses("finish") {
		return j.Journal.Finish(ctx, c, r)
	}
	if j.landed {
		if err := j.Journal.Finish(ctx, c, r); err != nil {
			return err
		}
	}
	return errAnswerLost
}

func (j *endLossyJournal) Release(ctx context.Context, c idempotency.Claim) error {
	if !j.loses("release") {
		return j.Journal.Release(ctx, c)
	}
	if j.landed {
		if err := j.Journal.Release(ctx, c); err != nil {
			return err
		}
	}
	return errAnswerLost
}

// TestLostEndOfClaimIsWrittenAgain: a claim's last write (the Finish of a
// result, the Release of a retryable failure) whose answer is lost is made
// again until the journal holds it, so the key does not stay running
// under a claim that has ended. The next delivery of the key then finds
// what the call ended with: the stored result replayed, or the key free
// for the next attempt. Where the write did not land, it met the claim as
// a lost holder's instead and ended the call indeterminate.
func TestLostEndOfClaimIsWrittenAgain(t *testing.T) {
	for _, tt := range []struct {
		lose   string
		landed bool
	}{
		{"finish", true}, {"finish", false}, {"release", true}, {"release", false},
	} {
		name := tt.lose + map[bool]string{true: ", write landed", false: ", write lost"}[tt.landed]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			var effects atomic.Int64
			var j *endLossyJournal
			a := e.startAgentWith("w1", func(c *workeragent.Config) {
				j = &endLossyJournal{Journal: c.Journal, lose: tt.lose, landed: tt.landed}
				c.Journal = j
			}, func(a *workeragent.Agent) {
				must(t, a.HandleTool(tooltest.Text(t, "ledger"), workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
					n := effects.Add(1)
					if tt.lose == "release" && n == 1 {
						return workeragent.Output{}, workeragent.Retryable(errors.New("busy"))
					}
					return workeragent.Result(strings.ToUpper(c.Input.Text)), nil
				})))
			})
			inv := e.newInvoke("ledger", "once")
			e.publish(inv)
			first := e.result(t)
			testwait.Until(t, 0, "call acked", func() bool { return e.pending(t, "ledger") == 0 })
			if !j.lost.Load() {
				t.Fatalf("no %s answer was lost", tt.lose)
			}

			// The key's next delivery: a later attempt after a retryable
			// failure, a duplicate after a result.
			inv.Attempt = 2
			e.publish(inv)
			second := e.result(t)
			if second.Status != protocol.ResultSucceeded || second.Payload.Text != "ONCE" {
				t.Fatalf("results = %+v, then %+v", first, second)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
			defer cancel()
			rec, err := j.Get(ctx, inv.IdempotencyKey)
			must(t, err)
			wantEffects, wantClaims, wantHits := int64(1), uint32(1), uint64(1)
			if tt.lose == "release" {
				wantEffects, wantClaims, wantHits = 2, 2, 0
			}
			if rec.State != idempotency.StateDone || rec.Claims != wantClaims || rec.Takeovers != 0 {
				t.Fatalf("record = %+v", rec)
			}
			s := a.Stats()
			if effects.Load() != wantEffects || s.DedupeHits != wantHits || s.Deferred != 0 || s.TakenOver != 0 || s.Indeterminate != 0 {
				t.Fatalf("effects = %d, stats = %+v", effects.Load(), s)
			}
		})
	}
}
