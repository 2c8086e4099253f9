package fabric_test

import (
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/recordauth"
	"github.com/splashfabric/splashfabric/protocol"
)

// A codec seals with its ring's current key and names it in HeaderKey; a
// codec whose ring was rotated since opens what the retired key sealed,
// and a codec that lacks the named key refuses the frame as
// ErrUnknownKey, without trying its own keys.
func TestCodecVerifiesWithTheNamedKey(t *testing.T) {
	old := fabrictest.NewCodec(t, fabrictest.Key)
	rotated, err := fabrictest.Key.Ring().Rotate(fabrictest.OtherKey)
	if err != nil {
		t.Fatal(err)
	}
	now := fabrictest.NewCodec(t, rotated)
	if now.KeyID() != protocol.KeyIDOf(fabrictest.OtherKey) || !now.HasKey(protocol.KeyIDOf(fabrictest.Key)) {
		t.Fatalf("rotated codec seals with %s", now.KeyID())
	}

	sealedOld, err := old.SealInvoke(fabrictest.Invoke("req-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := sealedOld.Header.Get(fabric.HeaderKey); got != protocol.KeyIDOf(fabrictest.Key) {
		t.Fatalf("%s = %q", fabric.HeaderKey, got)
	}
	if _, err := now.OpenInvoke(sealedOld.Header, sealedOld.Data); err != nil {
		t.Fatalf("a retired key's frame: %v", err)
	}
	sealedNew, err := now.SealInvoke(fabrictest.Invoke("req-2", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.OpenInvoke(sealedNew.Header, sealedNew.Data)
	fabrictest.WantErrIs(t, err, fabric.ErrForged, fabric.ErrUnknownKey, protocol.ErrBadTag)

	// A frame naming the wrong key of the ring fails its tag.
	sealedNew.Header.Set(fabric.HeaderKey, protocol.KeyIDOf(fabrictest.Key))
	_, err = now.OpenInvoke(sealedNew.Header, sealedNew.Data)
	fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrBadTag)

	// A frame naming no key is tried under each key of the ring.
	sealedNew.Header.Del(fabric.HeaderKey)
	if _, err := now.OpenInvoke(sealedNew.Header, sealedNew.Data); err != nil {
		t.Fatalf("a frame without a key id: %v", err)
	}
	for _, bad := range [][]string{{"a", "b"}, {"has.dot"}, {""}} {
		sealedNew.Header[fabric.HeaderKey] = bad
		_, err = now.OpenInvoke(sealedNew.Header, sealedNew.Data)
		fabrictest.WantErrIs(t, err, fabric.ErrForged, protocol.ErrMalformedFrame)
	}

	// Cancel records name their key too.
	rec, err := old.SealCancelRecord(protocol.Cancel{RequestID: "req-1", Tool: "t", Attempt: 1, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := now.OpenCancelRecord(rec); err != nil {
		t.Fatalf("a retired key's cancel record: %v", err)
	}
}

// CountKeyUse counts what each key still holds in every store: the
// ledger's records (not its tombstones), the latest value of each bucket
// key (not deleted ones), every journal bucket, and the events' key ids.
func TestCountKeyUse(t *testing.T) {
	e := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	a, b := protocol.KeyIDOf(fabrictest.Key), protocol.KeyIDOf(fabrictest.OtherKey)
	ledgerKey, err := recordauth.Derive(fabrictest.Key, recordauth.StoreLedger)
	if err != nil {
		t.Fatal(err)
	}
	sessionKey, err := recordauth.Derive(fabrictest.OtherKey, recordauth.StoreSessions)
	if err != nil {
		t.Fatal(err)
	}
	journalKey, err := recordauth.Derive(fabrictest.OtherKey, recordauth.StoreJournal)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(subject string, data []byte, h nats.Header) {
		t.Helper()
		if _, err := e.JS.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: h}); err != nil {
			t.Fatal(err)
		}
	}
	publish(fabric.LedgerSubject("s1"), ledgerKey.Seal("s1", []byte("{}")), nil)
	publish(fabric.LedgerSubject("s1"), ledgerKey.Seal("s1", []byte("{}")), nil)
	publish(fabric.LedgerSubject("s2"), nil, nats.Header{"Splash-Ledger-Removed": {"1"}})

	sessions, err := e.JS.KeyValue(ctx, fabric.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"s.1", "s.2", "gone"} {
		if _, err := sessions.Put(ctx, k, sessionKey.Seal(k, []byte("{}"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sessions.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Put(ctx, "plain", []byte("{}")); err != nil {
		t.Fatal(err)
	}

	cancels, err := e.JS.KeyValue(ctx, fabric.BucketCancel)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := fabrictest.NewCodec(t, fabrictest.Key).SealCancelRecord(protocol.Cancel{RequestID: "r", Tool: "t", Attempt: 1, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cancels.Put(ctx, "c1", rec); err != nil {
		t.Fatal(err)
	}

	journal, err := e.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fabric.JournalBucketPrefix + "_pool_x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Put(ctx, "j1", journalKey.Seal("j1", []byte("{}"))); err != nil {
		t.Fatal(err)
	}

	answer, err := fabrictest.NewCodec(t, fabrictest.OtherKey).SealWorker("req", 1, 1, protocol.ResultMessage(protocol.Result{RequestID: "req", Attempt: 1, Status: protocol.ResultFailed, Error: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	publish(fabric.EventsSubject("h1", "t"), answer.Data, answer.Header)

	use, err := fabric.CountKeyUse(ctx, e.JS)
	if err != nil {
		t.Fatal(err)
	}
	want := fabric.KeyUse{
		fabric.KeyUseLedger:   {a: 2},
		fabric.KeyUseSessions: {b: 2, "unsealed": 1},
		fabric.KeyUseCancels:  {a: 1},
		fabric.KeyUseJournals: {b: 1},
		fabric.KeyUseEvents:   {b: 1},
	}
	if !reflect.DeepEqual(use, want) {
		t.Fatalf("CountKeyUse = %v, want %v", use, want)
	}
	if use.Total(a) != 3 || use.Total(b) != 4 {
		t.Fatalf("totals %d, %d", use.Total(a), use.Total(b))
	}
}
