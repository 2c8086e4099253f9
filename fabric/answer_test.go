package fabric_test

import (
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestAnswerSubject(t *testing.T) {
	key := "sk1-00112233445566778899aabbccddeeff-7"
	got := fabric.AnswerSubject("h1", key)
	// The same digest as the journal's key, so an operator can match an
	// answer subject with a journal record.
	if want := "splash.events.h1.r." + idempotency.StorageKey(key); got != want {
		t.Fatalf("AnswerSubject = %q, want %q", got, want)
	}
	// A key with subject syntax in it stays one token.
	if s := fabric.AnswerSubject("h1", "a.b *>"); strings.Count(s, ".") != 4 {
		t.Fatalf("AnswerSubject of a dotted key = %q", s)
	}
	filters := fabric.HostEventsSubjects("h1")
	if len(filters) != 2 || filters[0] != fabric.EventsSubject("h1") || filters[1] != "splash.events.h1.r.>" {
		t.Fatalf("HostEventsSubjects = %q", filters)
	}
}

// TestLookupAnswer stores messages on answer subjects and reads them back:
// a terminal answer is found; an empty subject is not; a forgery or a
// frame that is no stored answer wraps ErrForged.
func TestLookupAnswer(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	codec := newCodec(t, testKey)
	stream, err := e.js.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	store := func(c *fabric.Codec, key string, msg protocol.WorkerMessage) {
		t.Helper()
		m, err := c.SealWorker("req-1", 1, 1, msg)
		if err != nil {
			t.Fatal(err)
		}
		m.Subject = fabric.AnswerSubject("h1", key)
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	store(codec, "ok", protocol.ResultMessage(validResult("req-1", 1)))
	store(codec, "cancelled", protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "req-1", Attempt: 1, Disposition: protocol.CancelAcknowledged}))
	store(newCodec(t, otherKey), "forged", protocol.ResultMessage(validResult("req-1", 1)))
	store(codec, "retryable", protocol.ResultMessage(protocol.Result{RequestID: "req-1", Attempt: 1, Status: protocol.ResultRetryTransient, Error: "busy"}))
	store(codec, "too-late", protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "req-1", Attempt: 1, Disposition: protocol.CancelTooLate}))

	tests := []struct {
		key       string
		wantFound bool
		wantKind  protocol.MessageKind
		wantErr   error
	}{
		{"ok", true, protocol.KindResult, nil},
		{"cancelled", true, protocol.KindCancelDisposition, nil},
		{"never", false, "", nil},
		{"forged", false, "", fabric.ErrForged},
		{"retryable", false, "", fabric.ErrForged},
		{"too-late", false, "", fabric.ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			msg, found, err := fabric.LookupAnswer(ctx, stream, codec, "h1", tt.key)
			wantErrIs(t, err, tt.wantErr)
			if found != tt.wantFound || (found && msg.Kind != tt.wantKind) {
				t.Fatalf("LookupAnswer = %+v, %v; want found %v kind %q", msg, found, tt.wantFound, tt.wantKind)
			}
		})
	}
	_, _, err = fabric.LookupAnswer(ctx, stream, codec, "bad host", "ok")
	wantErrIs(t, err, fabric.ErrInvalidHostID)
}

// TestLookupAnswerNeedsDirectGet: on a stream without direct gets the
// lookup fails rather than fall back to a get by sequence, which a worker
// is not allowed.
func TestLookupAnswerNeedsDirectGet(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	s, err := e.js.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	s, err = e.js.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = fabric.LookupAnswer(ctx, s, newCodec(t, testKey), "h1", "ok")
	wantErrIs(t, err, fabric.ErrNoDirectGet)
	// Provisioning again turns direct gets back on, in place.
	if err := fabric.Provision(ctx, e.js, e.cfg); err != nil {
		t.Fatal(err)
	}
	s, err = e.js.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if !s.CachedInfo().Config.AllowDirect {
		t.Fatal("Provision left SPLASH_EVENTS without direct get")
	}
}
