package fabric_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestProvisionIsIdempotentAndFollowsConfig(t *testing.T) {
	env := fabrictest.NewEnv(t) // provisioned once with the default
	ctx := fabrictest.Ctx(t)
	if err := fabric.Provision(ctx, env.JS, env.Cfg); err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	if _, err := fabric.EnsureToolConsumer(ctx, env.JS, env.Cfg, "text.remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := fabric.EnsureToolConsumer(ctx, env.JS, env.Cfg, "text.remote"); err != nil {
		t.Fatalf("second EnsureToolConsumer: %v", err)
	}

	changed := env.Cfg
	changed.DuplicateWindow = time.Minute
	changed.MaxMsgSize = 64 << 10
	changed.EventsMaxAge = 30 * time.Second // below the duplicate window
	changed.DedupeHorizon = time.Hour
	changed.AckWait = 7 * time.Second
	changed.MaxDeliver = 9
	changed.MaxAckPending = 77
	if err := fabric.Provision(ctx, env.JS, changed); err != nil {
		t.Fatalf("Provision with changed config: %v", err)
	}
	cons, err := fabric.EnsureToolConsumer(ctx, env.JS, changed, "text.remote")
	if err != nil {
		t.Fatal(err)
	}

	inv := streamConfig(t, env.JS, fabric.StreamInvoke)
	if inv.Retention != jetstream.WorkQueuePolicy || inv.Duplicates != time.Minute || inv.MaxMsgSize != 64<<10 ||
		inv.Storage != jetstream.FileStorage || len(inv.Subjects) != 1 || inv.Subjects[0] != "splash.invoke.>" {
		t.Fatalf("%s config = %+v", fabric.StreamInvoke, inv)
	}
	ev := streamConfig(t, env.JS, fabric.StreamEvents)
	if ev.Retention != jetstream.LimitsPolicy || ev.MaxAge != 30*time.Second || ev.Duplicates != 30*time.Second {
		t.Fatalf("%s config = %+v", fabric.StreamEvents, ev)
	}
	kv, err := env.JS.KeyValue(ctx, fabric.BucketCancel)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != time.Hour {
		t.Fatalf("cancel bucket TTL = %v", st.TTL())
	}
	cc := cons.CachedInfo().Config
	if cc.Durable != "pool_text_remote" || cc.FilterSubject != "splash.invoke.text.remote" || cc.AckPolicy != jetstream.AckExplicitPolicy ||
		cc.AckWait != 7*time.Second || cc.MaxDeliver != 9 || cc.MaxAckPending != 77 {
		t.Fatalf("consumer config = %+v", cc)
	}
}

func streamConfig(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(fabrictest.Ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

func TestProvisionRejectsInvalidConfigAndCreatesNothing(t *testing.T) {
	srv := natstest.Start(t)
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	cfg := fabric.DefaultConfig()
	cfg.Replicas = 0
	fabrictest.WantErrIs(t, fabric.Provision(fabrictest.Ctx(t), js, cfg), fabric.ErrInvalidConfig)
	if _, err := js.Stream(fabrictest.Ctx(t), fabric.StreamInvoke); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("stream after rejected Provision: %v", err)
	}
}

func TestEnsureToolConsumerRejectsInvalidToolNames(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tests := []struct {
		tool    string
		wantErr error
	}{
		{"", protocol.ErrInvalidToolName},
		{"a..b", protocol.ErrInvalidToolName},
		{"a.*", protocol.ErrInvalidToolName},
		{"a.>", protocol.ErrInvalidToolName},
		{"sp ace", protocol.ErrInvalidToolName},
		{"trailing.", protocol.ErrInvalidToolName},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			_, err := fabric.EnsureToolConsumer(fabrictest.Ctx(t), env.JS, env.Cfg, tt.tool)
			fabrictest.WantErrIs(t, err, tt.wantErr)
		})
	}
	s, err := env.JS.Stream(fabrictest.Ctx(t), fabric.StreamInvoke)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(fabrictest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Fatalf("consumers after rejected names = %d", info.State.Consumers)
	}
}

func TestToolsWithDottedNamesGetSeparateQueues(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	for _, tool := range []string{"text", "text.remote", "text_remote"} {
		if _, err := fabric.EnsureToolConsumer(ctx, env.JS, env.Cfg, tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
}

func TestProvisionCreatesTheSessionBucket(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	changed := env.Cfg
	changed.SessionRetention = time.Hour
	changed.MaxMsgSize = 16 << 10
	if err := fabric.Provision(ctx, env.JS, changed); err != nil {
		t.Fatal(err)
	}
	kv, err := env.JS.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if st.TTL() != time.Hour || st.History() != 1 || info.Config.MaxMsgSize != 16<<10 || changed.SessionValueBytes() != 16<<10 || info.Config.Storage != jetstream.FileStorage {
		t.Fatalf("bucket ttl %v history %d max %d", st.TTL(), st.History(), info.Config.MaxMsgSize)
	}
}

// A ledger lives as long as its session: SPLASH_LEDGER keeps no age, and
// provisioning a stream an earlier version made with seven days (counted
// from each append, so a session waiting on a slow tool lost its history)
// lifts it.
func TestProvisionKeepsLedgersWithoutAge(t *testing.T) {
	env := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	if got := streamConfig(t, env.JS, fabric.StreamLedger).MaxAge; got != 0 {
		t.Fatalf("%s MaxAge = %v, want none", fabric.StreamLedger, got)
	}
	aged := streamConfig(t, env.JS, fabric.StreamLedger)
	aged.MaxAge = 7 * 24 * time.Hour
	if _, err := env.JS.UpdateStream(ctx, aged); err != nil {
		t.Fatal(err)
	}
	if err := fabric.Provision(ctx, env.JS, env.Cfg); err != nil {
		t.Fatal(err)
	}
	if got := streamConfig(t, env.JS, fabric.StreamLedger).MaxAge; got != 0 {
		t.Fatalf("after provisioning an aged stream, MaxAge = %v, want none", got)
	}
}
