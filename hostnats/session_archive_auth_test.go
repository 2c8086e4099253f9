package hostnats_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// rejectLog collects what an archive reports to WithRecordRejectHandler.
type rejectLog struct {
	mu      sync.Mutex
	reasons []string
}

func (r *rejectLog) add(reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *rejectLog) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

// TestSessionArchiveRefusesForgedRecords writes into the bucket as a
// client with JetStream rights but without the frame key would (an
// unrestricted NATS user): whatever it writes, the archive refuses to
// answer from it, says why, and reports it.
func TestSessionArchiveRefusesForgedRecords(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	rejects := &rejectLog{}
	a := newArchive(t, env, hostnats.WithRecordRejectHandler(rejects.add))
	kv := sessionBucket(t, env)

	// Genuine records to copy and alter.
	const genuine = "s-h1-0123456789ab-1"
	a.Record(hostloop.SessionStatus{ID: genuine, State: hostloop.SessionCompleted, Value: "42", Created: created})
	if err := a.Register(ctx, hostloop.Incarnation{ID: "h1-0123456789ab", HostID: "h1", Started: created}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "s."+genuine)
	if err != nil {
		t.Fatal(err)
	}
	sealed := e.Value()
	altered := append([]byte(nil), sealed...)
	altered[len(altered)-20] ^= 0x01
	strangerKey, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := hostnats.NewSessionArchive(ctx, env.NC, env.Cfg, strangerKey)
	if err != nil {
		t.Fatal(err)
	}
	stranger.Record(hostloop.SessionStatus{ID: "s-h1-0123456789ab-5", State: hostloop.SessionCompleted, Value: "from another fabric", Created: created})
	if err := stranger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_ = stranger.Close()

	forged := []byte(`{"id":"s-h1-0123456789ab-2","state":"completed","value":"forged","created":"2030-01-02T03:04:05Z"}`)
	tests := []struct {
		name       string
		id         hostloop.SessionID
		value      []byte // nil: leave what is stored
		wantReason string
	}{
		// The reproduction: a plain record put by a client without the
		// key. A record an earlier version wrote unsealed reads the same.
		{"unsealed record", "s-h1-0123456789ab-2", forged, "unsigned"},
		{"sealed record altered", "s-h1-0123456789ab-3", altered, "bad_tag"},
		{"genuine record copied under another id", "s-h1-0123456789ab-4", sealed, "bad_tag"},
		{"record sealed with another frame key", "s-h1-0123456789ab-5", nil, "bad_tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.value != nil {
				if _, err := kv.Put(ctx, "s."+string(tt.id), tt.value); err != nil {
					t.Fatal(err)
				}
			}
			before := len(rejects.snapshot())
			st, err := a.Lookup(ctx, tt.id)
			if !errors.Is(err, hostloop.ErrRecordRejected) {
				t.Fatalf("Lookup = %+v, %v; want ErrRecordRejected", st, err)
			}
			if st.ID != "" || st.State != "" || st.Value != "" {
				t.Errorf("Lookup returned a status with its error: %+v", st)
			}
			got := rejects.snapshot()[before:]
			if len(got) != 1 || got[0] != tt.wantReason {
				t.Errorf("reported %q, want [%s]", got, tt.wantReason)
			}
		})
	}

	// The genuine record still answers.
	if st, err := a.Lookup(ctx, genuine); err != nil || st.Value != "42" {
		t.Fatalf("genuine record: %+v, %v", st, err)
	}

	// A forged incarnation would turn any unknown id into a lost session.
	if _, err := kv.Put(ctx, "i.h1-00000000000f", []byte(`{"id":"h1-00000000000f","host_id":"h1","started":"2030-01-02T03:04:05Z"}`)); err != nil {
		t.Fatal(err)
	}
	if inc, err := a.Incarnation(ctx, "h1-00000000000f"); !errors.Is(err, hostloop.ErrRecordRejected) {
		t.Fatalf("forged incarnation: %+v, %v; want ErrRecordRejected", inc, err)
	}
}

// TestLoopDoesNotServeAForgedRecord: through the host loop, a forged record
// is an error (ErrArchiveUnavailable wrapping ErrRecordRejected), never a
// status, for a finished session and for a lost one alike.
func TestLoopDoesNotServeAForgedRecord(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	a := newArchive(t, env)
	l, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: hostloop.NewMemTransport(1), HostID: "h1", Archive: a,
		Catalog: func(rt *host.Runtime) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	kv := sessionBucket(t, env)
	// A session of an earlier incarnation whose record was forged, and
	// one of a forged incarnation.
	for key, value := range map[string]string{
		"s.s-h1-0123456789ab-1": `{"id":"s-h1-0123456789ab-1","state":"completed","value":"forged","created":"2030-01-02T03:04:05Z"}`,
		"i.h1-00000000000f":     `{"id":"h1-00000000000f","host_id":"h1","started":"2030-01-02T03:04:05Z"}`,
	} {
		if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []hostloop.SessionID{"s-h1-0123456789ab-1", "s-h1-00000000000f-1"} {
		st, _, err := l.Status(ctx, id)
		if !errors.Is(err, hostloop.ErrRecordRejected) || !errors.Is(err, hostloop.ErrArchiveUnavailable) {
			t.Fatalf("%s: Status = %+v, %v; want ErrRecordRejected", id, st, err)
		}
	}
}

func TestNewSessionArchiveNeedsAKey(t *testing.T) {
	env := fabrictest.NewEnv(t)
	_, err := hostnats.NewSessionArchive(fabrictest.Ctx(t), env.NC, env.Cfg, protocol.SessionKey{})
	fabrictest.WantErrIs(t, err, fabric.ErrInvalidConfig)
}
