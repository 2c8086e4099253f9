package idempotency_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/natstest"
	"github.com/splashfabric/splashfabric/protocol"
)

// testFrameKey is the frame key of the tests' workers.
var testFrameKey = protocol.SessionKeyFromArray([protocol.AuthTagBytes]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})

// reasons collects what a journal reports to KVConfig.OnReject.
type reasons struct {
	mu  sync.Mutex
	got []string
}

func (r *reasons) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reason)
}

func (r *reasons) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestKVRefusesForgedRecords writes the journal's bucket as a NATS client
// without the frame key could: a forged result, a genuine record altered
// or copied under another key, a record of another fabric, and a record
// an unsealed journal wrote (as before records were sealed). A sealed
// journal replays none of them, reports each, and overwrites none.
func TestKVRefusesForgedRecords(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	rejects := &reasons{}
	j := newKV(t, js, idempotency.KVConfig{Key: testFrameKey, OnReject: rejects.add})
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}

	// Genuine done records, to copy and to alter in place.
	stored := map[string][]byte{}
	for _, key := range []string{"genuine", "altered"} {
		c, err := j.Begin(ctx, key, "worker-a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(ctx, c, textResult("real")); err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, idempotency.StorageKey(key))
		if err != nil {
			t.Fatal(err)
		}
		stored[key] = e.Value()
	}
	altered := slices.Clone(stored["altered"])
	altered[len(altered)-10] ^= 0x01

	// Records written by an unsealed journal and by one of another
	// fabric, on the same bucket.
	other, err := protocol.GenerateSessionKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		key string
		cfg idempotency.KVConfig
	}{{"written unsealed", idempotency.KVConfig{}}, {"another fabric", idempotency.KVConfig{Key: other}}} {
		if _, _, err := newKV(t, js, w.cfg).Store(ctx, w.key, "worker-x", textResult("not yours")); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name, key  string
		value      []byte // nil: keep what is stored
		wantReason string
	}{
		{"forged result", "forged", []byte(`{"key":"forged","state":"done","claims":1,"created_at":"2030-01-02T03:04:05Z","updated_at":"2030-01-02T03:04:05Z","result":{"status":"succeeded","payload":{"format":"text","text":"forged"}}}`), "unsigned"},
		{"written unsealed", "written unsealed", nil, "unsigned"},
		{"sealed record altered", "altered", altered, "bad_tag"},
		{"genuine record copied under another key", "copied", stored["genuine"], "bad_tag"},
		{"another fabric", "another fabric", nil, "bad_tag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sk := idempotency.StorageKey(tc.key)
			if tc.value != nil {
				if _, err := kv.Put(ctx, sk, tc.value); err != nil {
					t.Fatal(err)
				}
			}
			before, err := kv.Get(ctx, sk)
			if err != nil {
				t.Fatal(err)
			}
			n := len(rejects.snapshot())
			calls := []struct {
				name string
				call func() error
			}{
				{"Begin", func() error { _, err := j.Begin(ctx, tc.key, "worker-a", time.Minute); return err }},
				{"Resume", func() error { _, err := j.Resume(ctx, tc.key, "worker-a", time.Minute); return err }},
				{"Get", func() error { _, err := j.Get(ctx, tc.key); return err }},
				{"Store", func() error {
					_, _, err := j.Store(ctx, tc.key, "worker-a", textResult("mine"))
					return err
				}},
			}
			for _, c := range calls {
				if err := c.call(); !errors.Is(err, idempotency.ErrRecordRejected) || !errors.Is(err, idempotency.ErrCorruptRecord) {
					t.Errorf("%s: %v, want ErrRecordRejected (an ErrCorruptRecord)", c.name, err)
				}
			}
			got := rejects.snapshot()[n:]
			if len(got) != len(calls) || slices.ContainsFunc(got, func(r string) bool { return r != tc.wantReason }) {
				t.Errorf("reported %q, want %s for each of %d calls", got, tc.wantReason, len(calls))
			}
			if after, err := kv.Get(ctx, sk); err != nil || after.Revision() != before.Revision() {
				t.Fatalf("record rewritten: %v, %v", after, err)
			}
		})
	}

	// The genuine record still replays.
	if c, err := j.Begin(ctx, "genuine", "worker-b", time.Minute); err != nil || c.Outcome != idempotency.Done || c.Record.Result.Payload.Text != "real" {
		t.Fatalf("genuine record: %+v, %v", c, err)
	}
}

// TestKVSealedRecordIsNotPlainJSON: what a sealed journal stores is its
// record behind a tag, so no reader of the bucket mistakes it for an
// unsealed one.
func TestKVSealedRecordIsNotPlainJSON(t *testing.T) {
	ctx := testContext(t)
	js := newJetStream(t, natstest.Start(t))
	j := newKV(t, js, idempotency.KVConfig{Key: testFrameKey})
	if _, err := j.Begin(ctx, "op", "worker-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, idempotency.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, idempotency.StorageKey("op"))
	if err != nil {
		t.Fatal(err)
	}
	if v := string(e.Value()); len(v) < 5 || v[:5] != "sfr2." {
		t.Fatalf("stored %q", v)
	}
}
