package hostnats_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workflow"
	"github.com/splashfabric/splashfabric/workflow/logtest"
)

var ledgerT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newLedgerLog(t *testing.T, env *fabrictest.Env) *hostnats.LedgerLog {
	t.Helper()
	l, err := hostnats.NewLedgerLog(fabrictest.Ctx(t), env.NC, env.Cfg, fabrictest.Key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLedgerLogConformance holds LedgerLog to workflow.Log's contract; a
// retried Append matters most here, since a write can be stored while its
// acknowledgement is lost (its node stopped), and the fence then refuses
// the writer's second try.
func TestLedgerLogConformance(t *testing.T) {
	logtest.RunConformance(t, func(t *testing.T) func() workflow.Log {
		env := fabrictest.NewEnv(t)
		return func() workflow.Log { return newLedgerLog(t, env) }
	})
}

func TestLedgerLogRoundTripsAndFencesWriters(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	a, b := newLedgerLog(t, env), newLedgerLog(t, env)
	all := logtest.Entries(5)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Append(ctx, "s-h1-1", 0, all[:1]))
	must(a.Append(ctx, "s-h1-1", 1, all[1:3]))
	// b never read the ledger: it learns its end from the stream.
	must(b.Append(ctx, "s-h1-1", 3, all[3:4]))
	// a believes the ledger ends at 3; its write is fenced off.
	if err := a.Append(ctx, "s-h1-1", 3, logtest.Other(3, 1)); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("a stale writer: %v, want ErrLedgerConflict", err)
	}
	if err := b.Append(ctx, "s-h1-1", 2, all[2:3]); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("a writer behind its own tail: %v", err)
	}
	got, err := a.Load(ctx, "s-h1-1")
	must(err)
	if len(got) != 4 || got[3].Applied.Output != "out 3" || !got[0].At.Equal(ledgerT0) {
		t.Fatalf("Load = %+v", got)
	}
	// After its Load, a owns the tail again.
	must(a.Append(ctx, "s-h1-1", 4, all[4:]))

	must(a.Append(ctx, "s-h1-2", 0, all[:1]))
	sessions, err := b.Sessions(ctx)
	must(err)
	slices.Sort(sessions)
	if !slices.Equal(sessions, []string{"s-h1-1", "s-h1-2"}) {
		t.Fatalf("Sessions = %v", sessions)
	}
	must(b.Remove(ctx, "s-h1-1"))
	if _, err := a.Load(ctx, "s-h1-1"); !errors.Is(err, workflow.ErrUnknownLedger) {
		t.Fatalf("Load after Remove: %v", err)
	}
	wantLedgers(t, b, "s-h1-1", false, "s-h1-2")
	// A writer that still believes in the removed ledger is fenced off.
	if err := a.Append(ctx, "s-h1-1", 5, all[:1]); !errors.Is(err, workflow.ErrLedgerConflict) {
		t.Fatalf("a write to a removed ledger: %v, want ErrLedgerConflict", err)
	}
	// A removed session starts again from nothing, its removal's
	// tombstone still stored or not.
	must(a.Append(ctx, "s-h1-1", 0, all[:1]))
	must(a.Append(ctx, "s-h1-1", 1, all[1:2]))
	got, err = b.Load(ctx, "s-h1-1")
	must(err)
	if len(got) != 2 || got[1].Applied.Output != "out 1" {
		t.Fatalf("Load of a ledger begun again = %+v", got)
	}
	wantLedgers(t, b, "s-h1-1", true, "s-h1-1", "s-h1-2")
}

// wantLedgers checks Has(session) and Sessions against want.
func wantLedgers(t *testing.T, l *hostnats.LedgerLog, session string, has bool, want ...string) {
	t.Helper()
	ctx := fabrictest.Ctx(t)
	if got, err := l.Has(ctx, session); err != nil || got != has {
		t.Fatalf("Has(%s) = %v, %v; want %v", session, got, err, has)
	}
	sessions, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(sessions)
	if !slices.Equal(sessions, want) {
		t.Fatalf("Sessions = %v, want %v", sessions, want)
	}
}

// TestLedgerRemovalIsOneMessageThatExpires: Remove stores a single
// tombstone that drops the ledger's messages at once and expires by its
// own TTL, leaving the subject empty, with no purge request.
func TestLedgerRemovalIsOneMessageThatExpires(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	l := newLedgerLog(t, env)
	if err := l.Append(ctx, "s-h1-1", 0, logtest.Entries(3)); err != nil {
		t.Fatal(err)
	}
	stream, err := env.JS.Stream(ctx, fabric.StreamLedger)
	if err != nil {
		t.Fatal(err)
	}
	subject := fabric.LedgerSubject("s-h1-1")
	held := func() (msgs uint64, lastSeq uint64) {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject], info.State.LastSeq
	}
	_, before := held()
	if err := l.Remove(ctx, "s-h1-1"); err != nil {
		t.Fatal(err)
	}
	if n, last := held(); n != 1 || last != before+1 {
		t.Fatalf("after Remove the subject holds %d messages, last seq %d; want the tombstone alone at %d", n, last, before+1)
	}
	testwait.Until(t, 0, "the tombstone to expire", func() bool {
		n, _ := held()
		return n == 0
	})
	wantLedgers(t, l, "s-h1-1", false)
	// Removing what is gone already is no error.
	if err := l.Remove(ctx, "s-h1-1"); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerLogSplitsALargeAppend(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	l := newLedgerLog(t, env)
	big := logtest.Entries(1)
	chunk := strings.Repeat("x", int(env.Cfg.MaxMsgSize)/3)
	for i := 1; i <= 6; i++ {
		big = append(big, workflow.Entry{At: ledgerT0, Applied: &workflow.Applied{Kind: workflow.InputSucceeded, Op: 1, Output: chunk}})
	}
	if err := l.Append(ctx, "s-big", 0, big); err != nil {
		t.Fatal(err)
	}
	got, err := newLedgerLog(t, env).Load(ctx, "s-big")
	if err != nil || len(got) != len(big) {
		t.Fatalf("Load = %d entries, %v; want %d", len(got), err, len(big))
	}
}

func TestLedgerLogRefusesForgedRecords(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	l := newLedgerLog(t, env)
	if err := l.Append(ctx, "s-a", 0, logtest.Entries(2)); err != nil {
		t.Fatal(err)
	}
	other, err := hostnats.NewLedgerLog(ctx, env.NC, env.Cfg, fabrictest.OtherKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Append(ctx, "s-b", 0, logtest.Entries(2)); err != nil {
		t.Fatal(err)
	}
	// A record copied from one session's ledger to another's.
	msg, err := env.JS.Stream(ctx, fabric.StreamLedger)
	if err != nil {
		t.Fatal(err)
	}
	last, err := msg.GetLastMsgForSubject(ctx, "splash.ledger.s-a")
	if err != nil {
		t.Fatal(err)
	}
	copied := nats.NewMsg("splash.ledger.s-c")
	copied.Data, copied.Header = last.Data, last.Header
	if _, err := env.JS.PublishMsg(ctx, copied); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, session string }{
		{"sealed under another key", "s-b"},
		{"moved to another session", "s-c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := l.Load(ctx, tt.session); !errors.Is(err, hostnats.ErrLedgerRejected) {
				t.Fatalf("Load = %v, want ErrLedgerRejected", err)
			}
		})
	}
	if _, err := l.Load(ctx, "not.one.token"); !errors.Is(err, workflow.ErrInvalidEntry) {
		t.Fatalf("a session id with dots: %v", err)
	}
}
