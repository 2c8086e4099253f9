package hostnats_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/workflow"
	"github.com/splashfabric/splashfabric/workflow/logtest"
)

// A ledger write stored while its acknowledgement was lost is not waited
// for until the write's deadline: its try gives up after a bounded wait,
// the next try finds the ledger already holds it, and the write succeeds
// long before the caller's context ends.
func TestLedgerWriteOutlivesALostAcknowledgement(t *testing.T) {
	const session = "s-h1-lost"
	entries := logtest.Entries(2)
	tests := []struct {
		name   string
		before []workflow.Entry
		write  func(context.Context, *hostnats.LedgerLog) error
		// stored reports the write in the stream.
		stored func(*jetstream.RawStreamMsg) bool
		// want is the entries left, 0 for none: no ledger.
		want int
	}{
		{
			name:   "append",
			write:  func(ctx context.Context, l *hostnats.LedgerLog) error { return l.Append(ctx, session, 0, entries) },
			stored: func(*jetstream.RawStreamMsg) bool { return true },
			want:   len(entries),
		},
		{
			name:   "remove",
			before: entries,
			write:  func(ctx context.Context, l *hostnats.LedgerLog) error { return l.Remove(ctx, session) },
			stored: func(m *jetstream.RawStreamMsg) bool { return m.Header.Get("Splash-Ledger-Removed") != "" },
			want:   0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fabrictest.NewEnv(t)
			p := env.Srv.StartCutProxy(t)
			nc := p.Connect(t)
			ctx := fabrictest.Ctx(t)
			log, err := hostnats.NewLedgerLog(ctx, nc, env.Cfg, fabrictest.Key)
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				if err := log.Append(ctx, session, 0, tt.before); err != nil {
					t.Fatal(err)
				}
			}
			stream, err := env.JS.Stream(ctx, fabric.StreamLedger)
			if err != nil {
				t.Fatal(err)
			}

			p.Mute()
			done := make(chan error, 1)
			go func() { done <- tt.write(ctx, log) }()
			testwait.Until(t, 0, "the write stored", func() bool {
				m, err := stream.GetLastMsgForSubject(ctx, fabric.LedgerSubject(session))
				return err == nil && tt.stored(m)
			})
			p.Cut()

			if err := <-done; err != nil {
				deadline, _ := ctx.Deadline()
				t.Fatalf("write = %v (%v before the caller's deadline), want it to take the write that landed", err, time.Until(deadline).Round(time.Second))
			}
			reader := newLedgerLog(t, env)
			if tt.want == 0 {
				if has, err := reader.Has(ctx, session); err != nil || has {
					t.Fatalf("Has = %v, %v; want the ledger removed", has, err)
				}
				return
			}
			got, err := reader.Load(ctx, session)
			if err != nil || len(got) != tt.want {
				t.Fatalf("Load = %d entries, %v; want %d", len(got), err, tt.want)
			}
		})
	}
}
