package fabric_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/natstest"
)

func TestAsPermissionError(t *testing.T) {
	tests := []struct {
		err         error
		ok          bool
		op, subject string
	}{
		{fmt.Errorf("%w: Permissions Violation for Publish to \"a.b\"", nats.ErrPermissionViolation), true, "publish", "a.b"},
		{fmt.Errorf("%w: Permissions Violation for Subscription to \"_INBOX.>\"", nats.ErrPermissionViolation), true, "subscribe", "_INBOX.>"},
		{fmt.Errorf("%w: Permissions Violation for Subscription to \"x\" using queue \"q\"", nats.ErrPermissionViolation), true, "subscribe", "x"},
		{fmt.Errorf("%w: Permissions Violation for Publish with Reply of \"_INBOX.x\"", nats.ErrPermissionViolation), true, "reply", "_INBOX.x"},
		{nats.ErrSlowConsumer, false, "", ""},
		{nil, false, "", ""},
	}
	for _, tt := range tests {
		pe, ok := fabric.AsPermissionError(tt.err, "pool_demo")
		if ok != tt.ok || ok && (pe.Op != tt.op || pe.Subject != tt.subject || pe.User != "pool_demo") {
			t.Errorf("AsPermissionError(%v) = %+v, %v", tt.err, pe, ok)
		}
		if ok && !errors.Is(pe, fabric.ErrPermissionDenied) {
			t.Errorf("%v does not match ErrPermissionDenied", pe)
		}
	}
}

// A request the server refuses fails at once with the refusal, through a
// guarded context, rather than at its deadline; a refusal outside the
// guard's life is still reported, and ends nothing.
func TestPermissionWatchEndsGuardedRequests(t *testing.T) {
	opts := natstest.Options(t.TempDir())
	opts.Users = []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"ok.>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_u.>"}},
	}}}
	srv := natstest.StartWith(t, opts)
	reported := make(chan *fabric.PermissionError, 8)
	w := fabric.NewPermissionWatch("u", func(pe *fabric.PermissionError) { reported <- pe }, nil)
	nc := srv.Connect(nats.UserInfo("u", "p"), nats.CustomInboxPrefix("_INBOX_u"), w.Option())

	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	gctx, release := w.Guard(ctx)
	_, err := nc.RequestWithContext(gctx, "denied.x", []byte("?"))
	err = fabric.Denied(gctx, err)
	release()
	var pe *fabric.PermissionError
	if !errors.As(err, &pe) || pe.Subject != "denied.x" || pe.Op != "publish" || pe.User != "u" {
		t.Fatalf("request = %v, want the refusal of denied.x", err)
	}
	if got := <-reported; got.Subject != "denied.x" {
		t.Fatalf("reported %+v", got)
	}
	// Unguarded now: reported, and a new guard is not ended by it.
	if err := nc.Publish("denied.y", nil); err != nil {
		t.Fatal(err)
	}
	if got := <-reported; got.Subject != "denied.y" {
		t.Fatalf("reported %+v", got)
	}
	g2, release2 := w.Guard(ctx)
	defer release2()
	if g2.Err() != nil {
		t.Fatal("a fresh guard starts ended")
	}
	if err := fabric.Denied(g2, errors.New("other")); err.Error() != "other" {
		t.Fatalf("Denied of an open guard changed the error: %v", err)
	}
}
