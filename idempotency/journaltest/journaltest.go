// Package journaltest is the conformance suite that every
// idempotency.Journal passes. An implementation's test calls
// RunConformance with a factory that builds an empty journal on the clock
// and bound the suite asks for.
package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
)

// Options is what the suite asks of a new journal.
type Options struct {
	// Clock must be the journal's lease clock.
	Clock func() time.Time
	// MaxResultBytes must be the journal's result bound.
	MaxResultBytes int
}

// Factory returns an empty journal built with opts. It is called once per
// subtest.
type Factory func(t *testing.T, opts Options) idempotency.Journal

// MaxResultBytes is the bound the suite configures.
const MaxResultBytes = 1 << 10

// Lease is the lease the suite's owners ask for.
const Lease = 10 * time.Second

// Epoch is where the suite's clock starts.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	j     idempotency.Journal
}

func setup(t *testing.T, f Factory) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := NewClock(Epoch)
	return &env{t: t, ctx: ctx, clock: c, j: f(t, Options{Clock: c.Now, MaxResultBytes: MaxResultBytes})}
}

func (e *env) begin(key, owner string, want idempotency.Outcome) idempotency.Claim {
	e.t.Helper()
	c, err := e.j.Begin(e.ctx, key, owner, Lease)
	if err != nil {
		e.t.Fatalf("Begin(%q, %q): %v", key, owner, err)
	}
	if c.Outcome != want {
		e.t.Fatalf("Begin(%q, %q) outcome = %s, want %s (record %+v)", key, owner, c.Outcome, want, c.Record)
	}
	return c
}

func (e *env) resume(key, owner string, want idempotency.Outcome) idempotency.Claim {
	e.t.Helper()
	c, err := e.j.Resume(e.ctx, key, owner, Lease)
	if err != nil {
		e.t.Fatalf("Resume(%q, %q): %v", key, owner, err)
	}
	if c.Outcome != want {
		e.t.Fatalf("Resume(%q, %q) outcome = %s, want %s (record %+v)", key, owner, c.Outcome, want, c.Record)
	}
	return c
}

func (e *env) get(key string) idempotency.Record {
	e.t.Helper()
	r, err := e.j.Get(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", key, err)
	}
	return r
}

func (e *env) finish(c idempotency.Claim, r idempotency.Result) {
	e.t.Helper()
	if err := e.j.Finish(e.ctx, c, r); err != nil {
		e.t.Fatalf("Finish(%q): %v", c.Record.Key, err)
	}
}

func (e *env) store(key, owner string, r idempotency.Result, wantStored bool) idempotency.Record {
	e.t.Helper()
	rec, stored, err := e.j.Store(e.ctx, key, owner, r)
	if err != nil {
		e.t.Fatalf("Store(%q, %q): %v", key, owner, err)
	}
	if stored != wantStored {
		e.t.Fatalf("Store(%q, %q) stored = %v, want %v (record %+v)", key, owner, stored, wantStored, rec)
	}
	if rec.Key != key || rec.State != idempotency.StateDone || rec.Result == nil || rec.Revision == 0 {
		e.t.Fatalf("Store(%q, %q) record = %+v", key, owner, rec)
	}
	return rec
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func succeeded(text string) idempotency.Result {
	p := protocol.TextPayload(text)
	return idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &p}
}

// RunConformance runs every contract test against journals from f.
func RunConformance(t *testing.T, f Factory) {
	tests := []struct {
		name string
		run  func(*env)
	}{
		{"FreshBegin", testFreshBegin},
		{"ConcurrentBeginOneWins", testConcurrentBegin},
		{"ConcurrentTakeoverOneWins", testConcurrentTakeover},
		{"RunningElsewhere", testRunningElsewhere},
		{"DoneReplaysResult", testDoneReplays},
		{"DoneOutlivesLease", testDoneOutlivesLease},
		{"LeaseExpiryTakeover", testTakeover},
		{"RenewExtends", testRenewExtends},
		{"RenewAfterExpiryWithoutTakeover", testRenewAfterExpiry},
		{"StaleClaimLosesLease", testStaleClaim},
		{"AfterTakeoverLeaseLost", testAfterTakeover},
		{"FinishTwiceLeaseLost", testFinishTwice},
		{"ReleaseThenFresh", testRelease},
		{"ResultTooLargeWritesNothing", testTooLarge},
		{"InvalidBeginWritesNothing", testInvalidBegin},
		{"InvalidResultWritesNothing", testInvalidResult},
		{"ClaimNotHeld", testNotHeld},
		{"GetNotFound", testGetNotFound},
		{"AnyKeyBytes", testAnyKeyBytes},
		{"CancelledContext", testCancelledContext},
		{"StoreFresh", testStoreFresh},
		{"StoreFirstResultWins", testStoreFirstWins},
		{"ConcurrentStoreOneWins", testConcurrentStore},
		{"StoreOverRunningClaim", testStoreOverRunning},
		{"StoreOverReleased", testStoreOverReleased},
		{"StoreAfterFinish", testStoreAfterFinish},
		{"InvalidStoreWritesNothing", testInvalidStore},
		{"ResumeAfterLostBeginReply", testResumeLostReply},
		{"ResumeOwnExpiredLease", testResumeExpired},
		{"ResumeKeepsTakeover", testResumeKeepsTakeover},
		{"ResumeOtherwiseBegins", testResumeOtherwise},
		{"ConcurrentResumeAndTakeoverOneWins", testConcurrentResume},
		{"FreshClaimClearsTakenOver", testFreshClearsTakenOver},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(setup(t, f)) })
	}
}

func testFreshBegin(e *env) {
	c := e.begin("op-1", "worker-a", idempotency.Fresh)
	if !c.Held() || c.Owner != "worker-a" || c.Lease != Lease || c.Revision() == 0 {
		e.t.Fatalf("claim = %+v", c)
	}
	r := c.Record
	if r.Key != "op-1" || r.State != idempotency.StateRunning || r.Owner != "worker-a" ||
		r.Claims != 1 || r.Takeovers != 0 || r.TakenOver || r.PreviousOwner != "" || r.Result != nil || c.EffectUnknown() {
		e.t.Fatalf("record = %+v", r)
	}
	if !r.LeaseExpiresAt.Equal(Epoch.Add(Lease)) || !r.CreatedAt.Equal(Epoch) {
		e.t.Fatalf("record times = %+v", r)
	}
	got := e.get("op-1")
	if got.Revision != c.Revision() || got.Owner != "worker-a" || !got.LeaseExpiresAt.Equal(r.LeaseExpiresAt) {
		e.t.Fatalf("Get = %+v, want %+v", got, r)
	}
}

// race runs Begin on key from n owners at once and counts the outcomes.
func race(e *env, key string, n int) map[idempotency.Outcome]int {
	e.t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	outcomes := make(chan idempotency.Outcome, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := e.j.Begin(e.ctx, key, fmt.Sprintf("worker-%d", i), Lease)
			if err != nil {
				errs <- err
				return
			}
			outcomes <- c.Outcome
		})
	}
	close(start)
	wg.Wait()
	close(outcomes)
	close(errs)
	for err := range errs {
		e.t.Fatalf("Begin: %v", err)
	}
	got := map[idempotency.Outcome]int{}
	for o := range outcomes {
		got[o]++
	}
	return got
}

func testConcurrentBegin(e *env) {
	const owners = 8
	for k := range 10 {
		key := fmt.Sprintf("op-%d", k)
		got := race(e, key, owners)
		want := map[idempotency.Outcome]int{idempotency.Fresh: 1, idempotency.RunningElsewhere: owners - 1}
		if !reflect.DeepEqual(got, want) {
			e.t.Fatalf("%s: outcomes = %v, want %v", key, got, want)
		}
		if r := e.get(key); r.Claims != 1 {
			e.t.Fatalf("%s: claims = %d, want 1", key, r.Claims)
		}
	}
}

func testConcurrentTakeover(e *env) {
	const owners = 8
	e.begin("op", "crashed", idempotency.Fresh)
	e.clock.Advance(Lease)
	got := race(e, "op", owners)
	want := map[idempotency.Outcome]int{idempotency.TakenOver: 1, idempotency.RunningElsewhere: owners - 1}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("outcomes = %v, want %v", got, want)
	}
	if r := e.get("op"); r.Claims != 2 || r.Takeovers != 1 || r.PreviousOwner != "crashed" {
		e.t.Fatalf("record = %+v", r)
	}
}

func testRunningElsewhere(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease - time.Millisecond)
	for _, owner := range []string{"worker-b", "worker-a"} {
		// Claims are not re-entrant: a second delivery to the same owner
		// is still a duplicate of a running operation.
		c := e.begin("op", owner, idempotency.RunningElsewhere)
		if c.Held() || c.Record.Owner != "worker-a" || c.Record.Revision != a.Revision() ||
			!c.Record.LeaseExpiresAt.Equal(a.Record.LeaseExpiresAt) {
			e.t.Fatalf("%s: claim = %+v", owner, c)
		}
	}
	if r := e.get("op"); r.Revision != a.Revision() {
		e.t.Fatalf("revision moved: %d, want %d", r.Revision, a.Revision())
	}
}

func testDoneReplays(e *env) {
	jsonPayload := protocol.JSONPayload(json.RawMessage(`{"ok":true,"n":[1,2]}`))
	tests := []struct {
		name   string
		result idempotency.Result
	}{
		{"text", succeeded("released <v1> & done")},
		{"json", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &jsonPayload}},
		{"failed", idempotency.Result{Status: idempotency.StatusFailed, Error: "disk full"}},
		{"cancelled", idempotency.Result{Status: idempotency.StatusCancelled}},
		{"indeterminate", idempotency.Result{Status: idempotency.StatusIndeterminate, Error: "owner lost"}},
	}
	for _, tc := range tests {
		key := "op-" + tc.name
		c := e.begin(key, "worker-a", idempotency.Fresh)
		e.finish(c, tc.result)
		d := e.begin(key, "worker-b", idempotency.Done)
		if d.Held() || d.Record.State != idempotency.StateDone || d.Record.Owner != "worker-a" {
			e.t.Fatalf("%s: claim = %+v", tc.name, d)
		}
		if !reflect.DeepEqual(d.Record.Result, &tc.result) {
			e.t.Fatalf("%s: replayed %+v, want %+v", tc.name, d.Record.Result, tc.result)
		}
		if g := e.get(key); !reflect.DeepEqual(g.Result, &tc.result) || g.Revision != d.Record.Revision {
			e.t.Fatalf("%s: Get = %+v", tc.name, g)
		}
	}
}

func testDoneOutlivesLease(e *env) {
	c := e.begin("op", "worker-a", idempotency.Fresh)
	e.finish(c, succeeded("once"))
	e.clock.Advance(10 * Lease)
	d := e.begin("op", "worker-b", idempotency.Done)
	if d.Record.Result == nil || d.Record.Result.Payload.Text != "once" {
		e.t.Fatalf("claim = %+v", d)
	}
}

func testTakeover(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease - time.Nanosecond)
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	e.clock.Advance(time.Nanosecond) // the lease ends at its expiry instant
	b := e.begin("op", "worker-b", idempotency.TakenOver)
	r := b.Record
	if !b.Held() || !b.EffectUnknown() || r.Owner != "worker-b" || r.PreviousOwner != "worker-a" || r.Claims != 2 || r.Takeovers != 1 || !r.TakenOver ||
		r.Revision <= a.Revision() || !r.LeaseExpiresAt.Equal(Epoch.Add(2*Lease)) || !r.CreatedAt.Equal(Epoch) {
		e.t.Fatalf("claim = %+v", b)
	}
	e.finish(b, succeeded("second"))
	if g := e.get("op"); g.State != idempotency.StateDone || g.Owner != "worker-b" {
		e.t.Fatalf("record = %+v", g)
	}
}

func testRenewExtends(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease / 2)
	renewed, err := e.j.Renew(e.ctx, a)
	if err != nil {
		e.t.Fatalf("Renew: %v", err)
	}
	if renewed.Revision() <= a.Revision() || renewed.Outcome != idempotency.Fresh ||
		!renewed.Record.LeaseExpiresAt.Equal(Epoch.Add(Lease/2+Lease)) {
		e.t.Fatalf("renewed = %+v", renewed)
	}
	e.clock.Advance(Lease - time.Millisecond) // past the first expiry, before the renewed one
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	e.finish(renewed, succeeded("ok"))
	e.begin("op", "worker-b", idempotency.Done)
}

func testRenewAfterExpiry(e *env) {
	// A lease that ran out but that nobody took over is still the
	// caller's: the revision proves no one else wrote.
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(2 * Lease)
	r, err := e.j.Renew(e.ctx, a)
	if err != nil {
		e.t.Fatalf("Renew: %v", err)
	}
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	e.finish(r, succeeded("late but alone"))
}

func testStaleClaim(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	if _, err := e.j.Renew(e.ctx, a); err != nil {
		e.t.Fatalf("Renew: %v", err)
	}
	_, err := e.j.Renew(e.ctx, a)
	wantErr(e.t, "Renew with the superseded claim", err, idempotency.ErrLeaseLost)
	wantErr(e.t, "Finish with the superseded claim", e.j.Finish(e.ctx, a, succeeded("x")), idempotency.ErrLeaseLost)
}

func testAfterTakeover(e *env) {
	tests := []struct {
		name string
		call func(idempotency.Claim) error
	}{
		{"Renew", func(c idempotency.Claim) error { _, err := e.j.Renew(e.ctx, c); return err }},
		{"Finish", func(c idempotency.Claim) error { return e.j.Finish(e.ctx, c, succeeded("stale")) }},
		{"Release", func(c idempotency.Claim) error { return e.j.Release(e.ctx, c) }},
	}
	for _, tc := range tests {
		key := "op-" + tc.name
		a := e.begin(key, "worker-a", idempotency.Fresh)
		e.clock.Advance(Lease)
		b := e.begin(key, "worker-b", idempotency.TakenOver)
		wantErr(e.t, tc.name+" after takeover", tc.call(a), idempotency.ErrLeaseLost)
		if g := e.get(key); g.Revision != b.Revision() || g.Owner != "worker-b" || g.State != idempotency.StateRunning {
			e.t.Fatalf("%s: the loser changed the record: %+v", tc.name, g)
		}
	}
}

func testFinishTwice(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.finish(a, succeeded("first"))
	wantErr(e.t, "second Finish", e.j.Finish(e.ctx, a, succeeded("second")), idempotency.ErrLeaseLost)
	wantErr(e.t, "Release after Finish", e.j.Release(e.ctx, a), idempotency.ErrLeaseLost)
	if g := e.get("op"); g.Result.Payload.Text != "first" {
		e.t.Fatalf("stored %+v", g.Result)
	}
}

func testRelease(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	if err := e.j.Release(e.ctx, a); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	if g := e.get("op"); g.State != idempotency.StateReleased {
		e.t.Fatalf("record = %+v", g)
	}
	b := e.begin("op", "worker-b", idempotency.Fresh)
	if r := b.Record; r.Owner != "worker-b" || r.PreviousOwner != "worker-a" || r.Claims != 2 || r.Takeovers != 0 {
		e.t.Fatalf("record = %+v", r)
	}
	wantErr(e.t, "Finish with the released claim", e.j.Finish(e.ctx, a, succeeded("x")), idempotency.ErrLeaseLost)
	e.finish(b, succeeded("ran after release"))
}

func testTooLarge(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	tests := []struct {
		name   string
		result idempotency.Result
	}{
		{"payload", succeeded(strings.Repeat("x", MaxResultBytes+1))},
		{"error", idempotency.Result{Status: idempotency.StatusFailed, Error: strings.Repeat("e", MaxResultBytes+1)}},
		{"both", func() idempotency.Result {
			r := succeeded(strings.Repeat("x", MaxResultBytes))
			r.Error = "!"
			return r
		}()},
	}
	for _, tc := range tests {
		wantErr(e.t, tc.name, e.j.Finish(e.ctx, a, tc.result), idempotency.ErrResultTooLarge)
		if g := e.get("op"); g.Revision != a.Revision() || g.State != idempotency.StateRunning {
			e.t.Fatalf("%s: record changed: %+v", tc.name, g)
		}
	}
	// The lease is still held, so the caller can store what went wrong.
	e.finish(a, succeeded(strings.Repeat("x", MaxResultBytes)))
}

func testInvalidBegin(e *env) {
	tests := []struct {
		name, key, owner string
		lease            time.Duration
		wantErr          error
	}{
		{"empty key", "", "worker-a", Lease, idempotency.ErrInvalidKey},
		{"empty owner", "op", "", Lease, idempotency.ErrInvalidOwner},
		{"zero lease", "op", "worker-a", 0, idempotency.ErrInvalidLease},
		{"negative lease", "op", "worker-a", -time.Second, idempotency.ErrInvalidLease},
	}
	for _, tc := range tests {
		_, err := e.j.Begin(e.ctx, tc.key, tc.owner, tc.lease)
		wantErr(e.t, tc.name, err, tc.wantErr)
		_, err = e.j.Resume(e.ctx, tc.key, tc.owner, tc.lease)
		wantErr(e.t, tc.name+" (Resume)", err, tc.wantErr)
	}
	_, err := e.j.Get(e.ctx, "op")
	wantErr(e.t, "Get after rejected Begins", err, idempotency.ErrNotFound)
	_, err = e.j.Get(e.ctx, "")
	wantErr(e.t, "Get empty key", err, idempotency.ErrInvalidKey)
}

func testInvalidResult(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	badJSON := protocol.JSONPayload(json.RawMessage(`{"open":`))
	badFormat := protocol.WorkerPayload{Format: "xml", Text: "<a/>"}
	mixed := protocol.WorkerPayload{Format: protocol.FormatText, Text: "a", JSON: json.RawMessage(`1`)}
	tests := []struct {
		name    string
		result  idempotency.Result
		wantErr error
	}{
		{"no status", idempotency.Result{}, idempotency.ErrInvalidResult},
		{"retry status", idempotency.Result{Status: "retry_transient"}, idempotency.ErrInvalidResult},
		{"bad json", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &badJSON}, idempotency.ErrInvalidResult},
		{"bad format", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &badFormat}, idempotency.ErrInvalidResult},
		{"text with json", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &mixed}, idempotency.ErrInvalidResult},
	}
	for _, tc := range tests {
		wantErr(e.t, tc.name, e.j.Finish(e.ctx, a, tc.result), tc.wantErr)
		if g := e.get("op"); g.Revision != a.Revision() {
			e.t.Fatalf("%s: record changed: %+v", tc.name, g)
		}
	}
}

func testNotHeld(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	elsewhere := e.begin("op", "worker-b", idempotency.RunningElsewhere)
	done := e.begin("done", "worker-a", idempotency.Fresh)
	e.finish(done, succeeded("x"))
	replay := e.begin("done", "worker-b", idempotency.Done)
	tests := []struct {
		name  string
		claim idempotency.Claim
	}{
		{"running elsewhere", elsewhere},
		{"done", replay},
		{"zero", idempotency.Claim{}},
	}
	for _, tc := range tests {
		_, err := e.j.Renew(e.ctx, tc.claim)
		wantErr(e.t, tc.name+": Renew", err, idempotency.ErrNotHeld)
		wantErr(e.t, tc.name+": Finish", e.j.Finish(e.ctx, tc.claim, succeeded("x")), idempotency.ErrNotHeld)
		wantErr(e.t, tc.name+": Release", e.j.Release(e.ctx, tc.claim), idempotency.ErrNotHeld)
	}
	if g := e.get("op"); g.Revision != a.Revision() {
		e.t.Fatalf("record changed: %+v", g)
	}
}

func testGetNotFound(e *env) {
	_, err := e.j.Get(e.ctx, "never-begun")
	wantErr(e.t, "Get", err, idempotency.ErrNotFound)
}

func testAnyKeyBytes(e *env) {
	keys := []string{"a b", "splash.invoke.>", "*", "ü/\x00\n", strings.Repeat("k", 4096)}
	for i, k := range keys {
		c := e.begin(k, "worker-a", idempotency.Fresh)
		e.finish(c, succeeded(fmt.Sprint(i)))
	}
	for i, k := range keys {
		if g := e.get(k); g.Key != k || g.Result.Payload.Text != fmt.Sprint(i) {
			e.t.Fatalf("key %d: Get = %+v", i, g)
		}
	}
}

func testCancelledContext(e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.j.Begin(ctx, "op", "worker-a", Lease)
	wantErr(e.t, "Begin", err, context.Canceled)
	_, err = e.j.Resume(ctx, "op", "worker-a", Lease)
	wantErr(e.t, "Resume", err, context.Canceled)
	_, err = e.j.Get(e.ctx, "op")
	wantErr(e.t, "Get after cancelled Begin", err, idempotency.ErrNotFound)
}

func testStoreFresh(e *env) {
	res := succeeded("ran without a claim")
	rec := e.store("op", "worker-a", res, true)
	if rec.Owner != "worker-a" || rec.Claims != 0 || rec.PreviousOwner != "" || !rec.LeaseExpiresAt.IsZero() ||
		!rec.CreatedAt.Equal(Epoch) || !rec.UpdatedAt.Equal(Epoch) || !reflect.DeepEqual(rec.Result, &res) {
		e.t.Fatalf("record = %+v", rec)
	}
	if g := e.get("op"); g.Revision != rec.Revision || !reflect.DeepEqual(g.Result, &res) {
		e.t.Fatalf("Get = %+v, want %+v", g, rec)
	}
	// Begin sees an ordinary stored result.
	d := e.begin("op", "worker-b", idempotency.Done)
	if !reflect.DeepEqual(d.Record.Result, &res) {
		e.t.Fatalf("Begin replayed %+v", d.Record.Result)
	}
}

func testStoreFirstWins(e *env) {
	first := e.store("op", "worker-a", succeeded("first"), true)
	e.clock.Advance(Lease)
	second := e.store("op", "worker-b", idempotency.Result{Status: idempotency.StatusFailed, Error: "second"}, false)
	if second.Revision != first.Revision || second.Owner != "worker-a" || second.Result.Payload.Text != "first" {
		e.t.Fatalf("second Store returned %+v, want the first record %+v", second, first)
	}
	if g := e.get("op"); g.Revision != first.Revision {
		e.t.Fatalf("the losing Store wrote: %+v", g)
	}
}

func testConcurrentStore(e *env) {
	const owners = 8
	for k := range 5 {
		key := fmt.Sprintf("op-%d", k)
		type answer struct {
			owner  string
			rec    idempotency.Record
			stored bool
			err    error
		}
		answers := make(chan answer, owners)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range owners {
			wg.Go(func() {
				<-start
				owner := fmt.Sprintf("worker-%d", i)
				rec, stored, err := e.j.Store(e.ctx, key, owner, succeeded(owner))
				answers <- answer{owner, rec, stored, err}
			})
		}
		close(start)
		wg.Wait()
		close(answers)
		var winners []string
		var results []string
		for a := range answers {
			if a.err != nil {
				e.t.Fatalf("%s: Store: %v", key, a.err)
			}
			if a.stored {
				winners = append(winners, a.owner)
			}
			results = append(results, a.rec.Result.Payload.Text)
		}
		if len(winners) != 1 {
			e.t.Fatalf("%s: stored by %v, want exactly one", key, winners)
		}
		// Every caller answers with the winner's result, the losers too.
		for _, r := range results {
			if r != winners[0] {
				e.t.Fatalf("%s: answers %v, want all %q", key, results, winners[0])
			}
		}
		if g := e.get(key); g.Owner != winners[0] {
			e.t.Fatalf("%s: stored owner %q, want %q", key, g.Owner, winners[0])
		}
	}
}

func testStoreOverRunning(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	rec := e.store("op", "worker-b", succeeded("b"), true)
	if rec.Owner != "worker-b" || rec.PreviousOwner != "worker-a" || rec.Claims != 1 || !rec.LeaseExpiresAt.IsZero() {
		e.t.Fatalf("record = %+v", rec)
	}
	_, err := e.j.Renew(e.ctx, a)
	wantErr(e.t, "Renew after Store", err, idempotency.ErrLeaseLost)
	wantErr(e.t, "Finish after Store", e.j.Finish(e.ctx, a, succeeded("a")), idempotency.ErrLeaseLost)
	wantErr(e.t, "Release after Store", e.j.Release(e.ctx, a), idempotency.ErrLeaseLost)
	if d := e.begin("op", "worker-c", idempotency.Done); d.Record.Result.Payload.Text != "b" {
		e.t.Fatalf("Begin replayed %+v", d.Record.Result)
	}
}

func testStoreOverReleased(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	if err := e.j.Release(e.ctx, a); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	rec := e.store("op", "worker-b", succeeded("b"), true)
	if rec.PreviousOwner != "worker-a" || rec.Claims != 1 {
		e.t.Fatalf("record = %+v", rec)
	}
}

func testStoreAfterFinish(e *env) {
	a := e.begin("op", "worker-a", idempotency.Fresh)
	e.finish(a, succeeded("claimed run"))
	rec := e.store("op", "worker-b", succeeded("unclaimed run"), false)
	if rec.Owner != "worker-a" || rec.Result.Payload.Text != "claimed run" {
		e.t.Fatalf("record = %+v", rec)
	}
}

func testInvalidStore(e *env) {
	tests := []struct {
		name, key, owner string
		result           idempotency.Result
		wantErr          error
	}{
		{"empty key", "", "worker-a", succeeded("x"), idempotency.ErrInvalidKey},
		{"empty owner", "op", "", succeeded("x"), idempotency.ErrInvalidOwner},
		{"no status", "op", "worker-a", idempotency.Result{}, idempotency.ErrInvalidResult},
		{"retry status", "op", "worker-a", idempotency.Result{Status: "retry_transient"}, idempotency.ErrInvalidResult},
		{"too large", "op", "worker-a", succeeded(strings.Repeat("x", MaxResultBytes+1)), idempotency.ErrResultTooLarge},
	}
	for _, tc := range tests {
		_, stored, err := e.j.Store(e.ctx, tc.key, tc.owner, tc.result)
		wantErr(e.t, tc.name, err, tc.wantErr)
		if stored {
			e.t.Fatalf("%s: stored despite %v", tc.name, err)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, _, err := e.j.Store(ctx, "op", "worker-a", succeeded("x"))
	wantErr(e.t, "cancelled context", err, context.Canceled)
	_, err = e.j.Get(e.ctx, "op")
	wantErr(e.t, "Get after rejected Stores", err, idempotency.ErrNotFound)
	// The size bound is inclusive, as Finish's is.
	e.store("op", "worker-a", succeeded(strings.Repeat("x", MaxResultBytes)), true)
}

// testResumeLostReply: an owner whose Begin wrote the claim but lost the
// answer (a connection cut mid-write) gets its own lease back from
// Resume instead of meeting it as someone else's.
func testResumeLostReply(e *env) {
	lost := e.begin("op", "worker-a", idempotency.Fresh) // the caller never saw this answer
	e.clock.Advance(Lease / 2)
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	c := e.resume("op", "worker-a", idempotency.Resumed)
	r := c.Record
	if !c.Held() || c.EffectUnknown() || c.Owner != "worker-a" || c.Lease != Lease || c.Revision() <= lost.Revision() {
		e.t.Fatalf("claim = %+v", c)
	}
	if r.State != idempotency.StateRunning || r.Owner != "worker-a" || r.PreviousOwner != "" || r.Claims != 1 ||
		r.Takeovers != 0 || r.TakenOver || !r.LeaseExpiresAt.Equal(Epoch.Add(Lease/2+Lease)) || !r.CreatedAt.Equal(Epoch) {
		e.t.Fatalf("record = %+v", r)
	}
	// Resuming again is the same claim once more, for as long as the
	// owner cannot tell whether its write landed.
	c = e.resume("op", "worker-a", idempotency.Resumed)
	e.clock.Advance(Lease - time.Millisecond) // past the first expiry, before the resumed one
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	wantErr(e.t, "Finish with the unanswered claim", e.j.Finish(e.ctx, lost, succeeded("x")), idempotency.ErrLeaseLost)
	e.finish(c, succeeded("once"))
	if d := e.begin("op", "worker-b", idempotency.Done); d.Record.Result.Payload.Text != "once" || d.Record.Claims != 1 {
		e.t.Fatalf("claim = %+v", d)
	}
	e.resume("op", "worker-a", idempotency.Done)
}

// testResumeExpired: an expired lease that nobody took over is still its
// owner's, so Resume gives it back rather than taking it over.
func testResumeExpired(e *env) {
	e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(2 * Lease)
	c := e.resume("op", "worker-a", idempotency.Resumed)
	if r := c.Record; c.EffectUnknown() || r.Claims != 1 || r.Takeovers != 0 || r.TakenOver || r.PreviousOwner != "" ||
		!r.LeaseExpiresAt.Equal(Epoch.Add(3*Lease)) {
		e.t.Fatalf("claim = %+v", c)
	}
	e.begin("op", "worker-b", idempotency.RunningElsewhere)
	e.finish(c, succeeded("late but alone"))
}

// testResumeKeepsTakeover: resuming a lease that its owner took over from
// a lost holder still says that the effect is unknown; the lost holder
// cannot resume what it no longer owns.
func testResumeKeepsTakeover(e *env) {
	e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease)
	e.begin("op", "worker-b", idempotency.TakenOver) // the answer is lost
	c := e.resume("op", "worker-b", idempotency.Resumed)
	if r := c.Record; !c.Held() || !c.EffectUnknown() || !r.TakenOver || r.Owner != "worker-b" ||
		r.PreviousOwner != "worker-a" || r.Claims != 2 || r.Takeovers != 1 {
		e.t.Fatalf("claim = %+v", c)
	}
	if a := e.resume("op", "worker-a", idempotency.RunningElsewhere); a.Held() || a.Record.Revision != c.Revision() {
		e.t.Fatalf("the lost holder resumed: %+v", a)
	}
	e.finish(c, idempotency.Result{Status: idempotency.StatusIndeterminate})
}

// testResumeOtherwise: where the record is not the caller's running
// lease, Resume answers and writes as Begin does.
func testResumeOtherwise(e *env) {
	c := e.resume("new", "worker-a", idempotency.Fresh)
	if r := c.Record; r.Claims != 1 || r.Owner != "worker-a" || c.EffectUnknown() {
		e.t.Fatalf("claim = %+v", c)
	}

	live := e.begin("live", "worker-a", idempotency.Fresh)
	if c := e.resume("live", "worker-b", idempotency.RunningElsewhere); c.Record.Revision != live.Revision() {
		e.t.Fatalf("claim = %+v", c)
	}

	done := e.begin("done", "worker-a", idempotency.Fresh)
	e.finish(done, succeeded("x"))
	for _, owner := range []string{"worker-a", "worker-b"} {
		if c := e.resume("done", owner, idempotency.Done); c.Record.Result.Payload.Text != "x" {
			e.t.Fatalf("%s: claim = %+v", owner, c)
		}
	}

	rel := e.begin("released", "worker-a", idempotency.Fresh)
	if err := e.j.Release(e.ctx, rel); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	if c := e.resume("released", "worker-a", idempotency.Fresh); c.Record.Claims != 2 || c.Record.PreviousOwner != "worker-a" {
		e.t.Fatalf("claim = %+v", c)
	}

	e.begin("expired", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease)
	c = e.resume("expired", "worker-b", idempotency.TakenOver)
	if r := c.Record; !c.EffectUnknown() || !r.TakenOver || r.Takeovers != 1 || r.PreviousOwner != "worker-a" {
		e.t.Fatalf("claim = %+v", c)
	}
}

// testConcurrentResume: an expired owner resuming races others taking its
// lease over; exactly one holds the lease afterwards.
func testConcurrentResume(e *env) {
	const others = 7
	for k := range 10 {
		key := fmt.Sprintf("op-%d", k)
		e.begin(key, "worker-a", idempotency.Fresh)
		e.clock.Advance(Lease)
		var wg sync.WaitGroup
		start := make(chan struct{})
		claims := make(chan idempotency.Claim, others+1)
		errs := make(chan error, others+1)
		call := func(f func() (idempotency.Claim, error)) {
			wg.Go(func() {
				<-start
				c, err := f()
				if err != nil {
					errs <- err
					return
				}
				claims <- c
			})
		}
		call(func() (idempotency.Claim, error) { return e.j.Resume(e.ctx, key, "worker-a", Lease) })
		for i := range others {
			call(func() (idempotency.Claim, error) { return e.j.Begin(e.ctx, key, fmt.Sprintf("worker-%d", i), Lease) })
		}
		close(start)
		wg.Wait()
		close(claims)
		close(errs)
		for err := range errs {
			e.t.Fatalf("%s: %v", key, err)
		}
		var held []idempotency.Claim
		for c := range claims {
			if c.Held() {
				held = append(held, c)
			} else if c.Outcome != idempotency.RunningElsewhere {
				e.t.Fatalf("%s: outcome %s", key, c.Outcome)
			}
		}
		if len(held) != 1 {
			e.t.Fatalf("%s: %d claims hold the lease, want 1: %+v", key, len(held), held)
		}
		r := e.get(key)
		switch h := held[0]; {
		case h.Outcome == idempotency.Resumed && h.Owner == "worker-a":
			if r.Claims != 1 || r.Takeovers != 0 || r.Owner != "worker-a" {
				e.t.Fatalf("%s: resumed, record = %+v", key, r)
			}
		case h.Outcome == idempotency.TakenOver && h.Owner != "worker-a":
			if r.Claims != 2 || r.Takeovers != 1 || r.Owner != h.Owner {
				e.t.Fatalf("%s: taken over, record = %+v", key, r)
			}
		default:
			e.t.Fatalf("%s: held claim %+v", key, h)
		}
	}
}

// testFreshClaimClearsTakenOver: the flag describes the last lease
// granted, so a fresh claim after a taken-over one is released clears it.
func testFreshClearsTakenOver(e *env) {
	e.begin("op", "worker-a", idempotency.Fresh)
	e.clock.Advance(Lease)
	b := e.begin("op", "worker-b", idempotency.TakenOver)
	if err := e.j.Release(e.ctx, b); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	if g := e.get("op"); g.State != idempotency.StateReleased || !g.TakenOver {
		e.t.Fatalf("released record = %+v", g)
	}
	c := e.begin("op", "worker-c", idempotency.Fresh)
	if r := c.Record; r.TakenOver || c.EffectUnknown() || r.Takeovers != 1 || r.Claims != 3 {
		e.t.Fatalf("claim = %+v", c)
	}
	// Resumed, the fresh claim stays fresh.
	if r := e.resume("op", "worker-c", idempotency.Resumed); r.EffectUnknown() {
		e.t.Fatalf("resumed claim = %+v", r)
	}
}
