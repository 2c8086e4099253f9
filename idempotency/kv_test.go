package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	t.Cleanup(cancel)
	return ctx
}

func textResult(s string) idempotency.Result {
	p := protocol.TextPayload(s)
	return idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &p}
}

func TestNewKVProvisionsBucket(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	j := newKV(t, js, idempotency.KVConfig{TTL: time.Hour})
	if j.Bucket() != idempotency.BucketName {
		t.Fatalf("bucket = %q", j.Bucket())
	}
	// Binding again with another horizon updates the bucket in place.
	newKV(t, js, idempotency.KVConfig{TTL: 2 * time.Hour})
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if st.History() != 1 || st.TTL() != 2*time.Hour || info.Config.Storage != jetstream.FileStorage || info.Config.Replicas != 1 {
		t.Fatalf("bucket: history %d ttl %v storage %v replicas %d", st.History(), st.TTL(), info.Config.Storage, info.Config.Replicas)
	}
}

func TestNewKVInvalidConfig(t *testing.T) {
	js := newJetStream(t, natstest.Start(t))
	tests := []struct {
		name    string
		cfg     idempotency.KVConfig
		wantErr error
	}{
		{"negative ttl", idempotency.KVConfig{TTL: -time.Second}, idempotency.ErrInvalidConfig},
		{"negative replicas", idempotency.KVConfig{Replicas: -1}, idempotency.ErrInvalidConfig},
		{"six replicas", idempotency.KVConfig{Replicas: 6}, idempotency.ErrInvalidConfig},
		{"negative result bound", idempotency.KVConfig{MaxResultBytes: -1}, idempotency.ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := idempotency.NewKV(testContext(t), js, tc.cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	if _, err := js.KeyValue(testContext(t), idempotency.BucketName); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("a rejected config created the bucket: %v", err)
	}
}

func TestKVStoresUnderDigest(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	j := newKV(t, js, idempotency.KVConfig{})
	const key = "session-nonce/call 7.*"
	c, err := j.Begin(ctx, key, "worker-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, idempotency.StorageKey(key))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(e.Value(), &stored); err != nil {
		t.Fatal(err)
	}
	if e.Revision() != c.Revision() || stored["key"] != key || stored["state"] != "running" || stored["owner"] != "worker-a" {
		t.Fatalf("stored rev %d %s", e.Revision(), e.Value())
	}
	if got := idempotency.StorageKey(key); len(got) != 64 {
		t.Fatalf("storage key %q", got)
	}
}

func TestKVSurvivesServerRestart(t *testing.T) {
	ctx := testContext(t)
	srv := natstest.Start(t)
	j := newKV(t, newJetStream(t, srv), idempotency.KVConfig{})
	c, err := j.Begin(ctx, "op", "worker-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(ctx, c, textResult("kept")); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	// natstest's own cleanup is bound to the server it first started, so
	// the restarted one is shut down here.
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	j2 := newKV(t, newJetStream(t, srv), idempotency.KVConfig{})
	d, err := j2.Begin(ctx, "op", "worker-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != idempotency.Done || d.Record.Result.Payload.Text != "kept" {
		t.Fatalf("after restart: %+v", d)
	}
}

func TestKVHorizonForgetsRecords(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	// The bucket's TTL runs on the server's clock, so this test waits on
	// real time, polling for the record to go.
	j := newKV(t, js, idempotency.KVConfig{TTL: 300 * time.Millisecond})
	running, err := j.Begin(ctx, "running", "worker-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	done, err := j.Begin(ctx, "done", "worker-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(ctx, done, textResult("x")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"running", "done"} {
		testwait.Until(t, 0, key+" to pass the horizon", func() bool {
			_, err := j.Get(ctx, key)
			return errors.Is(err, idempotency.ErrNotFound)
		})
	}
	if err := j.Finish(ctx, running, textResult("late")); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Finish after the horizon: %v, want ErrLeaseLost", err)
	}
	again, err := j.Begin(ctx, "done", "worker-b", time.Hour)
	if err != nil || again.Outcome != idempotency.Fresh {
		t.Fatalf("Begin after the horizon: %+v, %v", again, err)
	}
}

func TestKVBeginOverDeleteMarker(t *testing.T) {
	// An operator may delete a key by hand; kv.Create then writes over the
	// delete marker, a path whose conflicts surface as a raw API error.
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	j := newKV(t, js, idempotency.KVConfig{})
	if _, err := j.Begin(ctx, "op", "worker-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, idempotency.StorageKey("op")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Get(ctx, "op"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
	c, err := j.Begin(ctx, "op", "worker-b", time.Minute)
	if err != nil || c.Outcome != idempotency.Fresh || c.Record.Claims != 1 {
		t.Fatalf("Begin after delete: %+v, %v", c, err)
	}
	if e, err := j.Begin(ctx, "op", "worker-c", time.Minute); err != nil || e.Outcome != idempotency.RunningElsewhere {
		t.Fatalf("second Begin after delete: %+v, %v", e, err)
	}
}

func TestKVCorruptRecordIsNotOverwritten(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	j := newKV(t, js, idempotency.KVConfig{})
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key string
		value     []byte
	}{
		{"not json", "garbage", []byte("not json")},
		{"foreign key", "foreign", []byte(`{"key":"someone else","state":"done"}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := kv.Put(ctx, idempotency.StorageKey(tc.key), tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Begin(ctx, tc.key, "worker-a", time.Minute); !errors.Is(err, idempotency.ErrCorruptRecord) {
				t.Fatalf("Begin: %v, want ErrCorruptRecord", err)
			}
			if _, err := j.Get(ctx, tc.key); !errors.Is(err, idempotency.ErrCorruptRecord) {
				t.Fatalf("Get: %v, want ErrCorruptRecord", err)
			}
			if e, err := kv.Get(ctx, idempotency.StorageKey(tc.key)); err != nil || e.Revision() != rev {
				t.Fatalf("value rewritten: %v, %v", e, err)
			}
		})
	}
}

func TestKVEncodedRecordOverMessageLimit(t *testing.T) {
	// Control characters escape to six bytes each in JSON, so a result
	// within MaxResultBytes can still encode past the message limit; the
	// journal refuses it before writing and the lease stays held.
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	limit := int(js.Conn().MaxPayload())
	j := newKV(t, js, idempotency.KVConfig{MaxResultBytes: limit})
	c, err := j.Begin(ctx, "op", "worker-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	text := make([]byte, limit/2)
	if err := j.Finish(ctx, c, textResult(string(text))); !errors.Is(err, idempotency.ErrResultTooLarge) {
		t.Fatalf("Finish: %v, want ErrResultTooLarge", err)
	}
	if err := j.Finish(ctx, c, idempotency.Result{Status: idempotency.StatusFailed, Error: "output too large"}); err != nil {
		t.Fatalf("Finish after the refused write: %v", err)
	}
}
