package fabric_test

import (
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

func TestAnswerSubject(t *testing.T) {
	key := "sk1-00112233445566778899aabbccddeeff-7"
	got := fabric.AnswerSubject("h1", "demo.echo", key)
	// The same digest as the journal's key, so an operator can match an
	// answer subject with a journal record.
	if want := "splash.events.h1.pool_demo_echo." + idempotency.StorageKey(key); got != want {
		t.Fatalf("AnswerSubject = %q, want %q", got, want)
	}
	// A key with subject syntax in it stays one token.
	if s := fabric.AnswerSubject("h1", "demo.echo", "a.b *>"); strings.Count(s, ".") != 4 {
		t.Fatalf("AnswerSubject of a dotted key = %q", s)
	}
	if got := fabric.EventsSubject("h1", "demo.json.sum"); got != "splash.events.h1.pool_demo_json_sum" {
		t.Fatalf("EventsSubject = %q", got)
	}
	filters := fabric.HostEventsSubjects("h1")
	if len(filters) != 1 || filters[0] != "splash.events.h1.>" {
		t.Fatalf("HostEventsSubjects = %q", filters)
	}
}

// Every events and answer subject names its host and its tool's token,
// and nothing else parses as one.
func TestParseEventSubject(t *testing.T) {
	tests := []struct {
		subject, host, token string
		ok                   bool
	}{
		{fabric.EventsSubject("h1", "demo.echo"), "h1", "pool_demo_echo", true},
		{fabric.AnswerSubject("h1", "a_b", "k"), "h1", fabric.ToolToken("a_b"), true},
		{"splash.events.h1", "", "", false},
		{"splash.events.h1.", "", "", false},
		{"splash.events.h1.t.x.y", "", "", false},
		{"splash.events.h1.t.", "", "", false},
		{"splash.invoke.h1.t", "", "", false},
	}
	for _, tt := range tests {
		host, token, ok := fabric.ParseEventSubject(tt.subject)
		if host != tt.host || token != tt.token || ok != tt.ok {
			t.Errorf("ParseEventSubject(%q) = %q, %q, %v; want %q, %q, %v", tt.subject, host, token, ok, tt.host, tt.token, tt.ok)
		}
	}
}

// TestLookupAnswer stores messages on answer subjects and reads them back:
// a terminal answer is found; an empty subject is not; a forgery or a
// frame that is no stored answer wraps ErrForged.
func TestLookupAnswer(t *testing.T) {
	e := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	codec := fabrictest.NewCodec(t, fabrictest.Key)
	stream, err := e.JS.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	store := func(c *fabric.Codec, key string, msg protocol.WorkerMessage) {
		t.Helper()
		m, err := c.SealWorker("req-1", 1, 1, msg)
		if err != nil {
			t.Fatal(err)
		}
		m.Subject = fabric.AnswerSubject("h1", "demo.echo", key)
		if _, err := e.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	store(codec, "ok", protocol.ResultMessage(fabrictest.Result("req-1", 1)))
	store(codec, "cancelled", protocol.CancelReplyMessage(protocol.CancelReply{RequestID: "req-1", Attempt: 1, Disposition: protocol.CancelAcknowledged}))
	store(fabrictest.NewCodec(t, fabrictest.OtherKey), "forged", protocol.ResultMessage(fabrictest.Result("req-1", 1)))
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
			msg, found, err := fabric.LookupAnswer(ctx, stream, codec, "h1", "demo.echo", tt.key)
			fabrictest.WantErrIs(t, err, tt.wantErr)
			if found != tt.wantFound || (found && msg.Kind != tt.wantKind) {
				t.Fatalf("LookupAnswer = %+v, %v; want found %v kind %q", msg, found, tt.wantFound, tt.wantKind)
			}
		})
	}
	_, _, err = fabric.LookupAnswer(ctx, stream, codec, "bad host", "demo.echo", "ok")
	fabrictest.WantErrIs(t, err, fabric.ErrInvalidHostID)
	_, _, err = fabric.LookupAnswer(ctx, stream, codec, "h1", "bad tool", "ok")
	fabrictest.WantErrIs(t, err, protocol.ErrInvalidToolName)
	// Another tool's answer subject holds nothing for this key.
	if _, found, err := fabric.LookupAnswer(ctx, stream, codec, "h1", "demo.upper", "ok"); found || err != nil {
		t.Fatalf("another tool's subject: %v, %v", found, err)
	}
}

// TestLookupAnswerNeedsDirectGet: on a stream without direct gets the
// lookup fails rather than fall back to a get by sequence, which a worker
// is not allowed.
func TestLookupAnswerNeedsDirectGet(t *testing.T) {
	e := fabrictest.NewEnv(t)
	ctx := fabrictest.Ctx(t)
	s, err := e.JS.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := e.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	s, err = e.JS.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = fabric.LookupAnswer(ctx, s, fabrictest.NewCodec(t, fabrictest.Key), "h1", "demo.echo", "ok")
	fabrictest.WantErrIs(t, err, fabric.ErrNoDirectGet)
	// Provisioning again turns direct gets back on, in place.
	if err := fabric.Provision(ctx, e.JS, e.Cfg); err != nil {
		t.Fatal(err)
	}
	s, err = e.JS.Stream(ctx, fabric.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if !s.CachedInfo().Config.AllowDirect {
		t.Fatal("Provision left SPLASH_EVENTS without direct get")
	}
}
