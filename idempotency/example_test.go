package idempotency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/idempotency/journaltest"
	"github.com/splashfabric/splashfabric/protocol"
)

// A worker runs an operation once; a duplicate delivery of the same key
// replays the stored result instead of running it again.
func ExampleMemory() {
	ctx := context.Background()
	j := idempotency.NewMemory(nil)

	c, _ := j.Begin(ctx, "nonce/42", "worker-a", 30*time.Second)
	fmt.Println("first delivery:", c.Outcome)
	out := protocol.TextPayload("released v1.2")
	_ = j.Finish(ctx, c, idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &out})

	dup, _ := j.Begin(ctx, "nonce/42", "worker-b", 30*time.Second)
	fmt.Println("duplicate:", dup.Outcome, dup.Record.Result.Payload.Text)
	// Output:
	// first delivery: fresh
	// duplicate: done released v1.2
}

// An operation that may run more than once takes no claim: it runs, then
// stores its result unless one is stored already. A duplicate that ran
// too answers with the stored result, so every answer under the key is
// the same.
func ExampleMemory_Store() {
	ctx := context.Background()
	j := idempotency.NewMemory(nil)

	first := protocol.TextPayload("v1.2 at 10:00:00")
	rec, stored, _ := j.Store(ctx, "nonce/9", "worker-a", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &first})
	fmt.Println("worker-a stored:", stored, rec.Result.Payload.Text)

	again := protocol.TextPayload("v1.2 at 10:00:01")
	rec, stored, _ = j.Store(ctx, "nonce/9", "worker-b", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &again})
	fmt.Println("worker-b stored:", stored, "answers", rec.Result.Payload.Text)
	// Output:
	// worker-a stored: true v1.2 at 10:00:00
	// worker-b stored: false answers v1.2 at 10:00:00
}

// The life of one operation whose first owner crashed: its lease runs out,
// a second worker takes over and, because the tool is not idempotent,
// records the outcome as indeterminate rather than running it again.
func ExampleJournal() {
	ctx := context.Background()
	clock := journaltest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var j idempotency.Journal = idempotency.NewMemory(clock.Now)
	const lease = 10 * time.Second

	a, _ := j.Begin(ctx, "nonce/7", "worker-a", lease)
	a, _ = j.Renew(ctx, a) // while the handler runs
	fmt.Println("worker-a:", a.Outcome)

	b, _ := j.Begin(ctx, "nonce/7", "worker-b", lease)
	fmt.Println("worker-b while worker-a lives:", b.Outcome)

	clock.Advance(lease) // worker-a crashed and stopped renewing
	b, _ = j.Begin(ctx, "nonce/7", "worker-b", lease)
	fmt.Println("worker-b after the lease:", b.Outcome, "from", b.Record.PreviousOwner)

	idempotent := false
	result := idempotency.Result{Status: idempotency.StatusIndeterminate, Error: "previous owner lost mid-call"}
	if idempotent {
		out := protocol.TextPayload("ran again")
		result = idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &out}
	}
	_ = j.Finish(ctx, b, result)

	err := j.Finish(ctx, a, idempotency.Result{Status: idempotency.StatusSucceeded})
	fmt.Println("worker-a finishing late:", err)

	rec, _ := j.Get(ctx, "nonce/7")
	fmt.Println("stored:", rec.State, rec.Result.Status, "claims", rec.Claims, "takeovers", rec.Takeovers)
	// Output:
	// worker-a: fresh
	// worker-b while worker-a lives: running_elsewhere
	// worker-b after the lease: taken_over from worker-a
	// worker-a finishing late: idempotency: lease lost: "nonce/7"
	// stored: done indeterminate claims 2 takeovers 1
}

// A worker's Begin wrote the claim, but the answer was lost with the
// connection, so the worker cannot tell whether it holds the key. Asking
// again with Begin, it would meet its own claim as another holder's;
// Resume, under the same owner id, gives the claim back, and the
// operation runs once instead of ending indeterminate.
func ExampleMemory_Resume() {
	ctx := context.Background()
	j := idempotency.NewMemory(nil)
	const lease = 10 * time.Second

	_, _ = j.Begin(ctx, "nonce/8", "worker-a/1", lease) // the answer is lost

	again, _ := j.Begin(ctx, "nonce/8", "worker-a/1", lease)
	fmt.Println("Begin again:", again.Outcome)

	c, _ := j.Resume(ctx, "nonce/8", "worker-a/1", lease)
	fmt.Println("Resume:", c.Outcome, "held", c.Held(), "effect unknown", c.EffectUnknown())
	out := protocol.TextPayload("ran once")
	_ = j.Finish(ctx, c, idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &out})

	rec, _ := j.Get(ctx, "nonce/8")
	fmt.Println("stored:", rec.State, rec.Result.Payload.Text, "claims", rec.Claims)
	// Output:
	// Begin again: running_elsewhere
	// Resume: resumed held true effect unknown false
	// stored: done ran once claims 1
}
