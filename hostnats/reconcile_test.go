package hostnats_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

const reconcileTool = "text.remote"

// respond plays one worker of tool's pool: every request it hears is
// authenticated, checked to name the session's accepting host
// (acceptingHost), and handed to answer, which returns the frames to reply
// with, in order (none: it stays silent); raw is the request's frame as
// the host sent it. Requests that fail to open are reported on the test.
func respond(t *testing.T, env *fabrictest.Env, tool string, answer func(req protocol.OperationReconcileRequest, raw *nats.Msg) []*nats.Msg) {
	t.Helper()
	codec := fabrictest.NewCodec(t, fabrictest.Key)
	sub, err := env.NC.QueueSubscribe(fabric.ReconcileSubject(tool), "workers", func(m *nats.Msg) {
		req, err := codec.OpenReconcile(m.Header, m.Data)
		if err != nil {
			t.Errorf("reconcile request: %v", err)
			return
		}
		if got, want := m.Header.Get(fabric.HeaderHost), acceptingHost(req.SessionID); got != want {
			t.Errorf("Splash-Host = %q, want %q", got, want)
		}
		for _, data := range answer(req, &nats.Msg{Header: m.Header, Data: m.Data}) {
			if err := m.RespondMsg(data); err != nil {
				t.Errorf("respond: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func TestReconcileAnswersEachStatus(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	cases := []struct {
		key    string
		status protocol.OperationStatus
	}{
		{"op-running", protocol.StatusRunning()},
		{"op-succeeded", protocol.StatusSucceeded(protocol.TextPayload("done"))},
		{"op-failed", protocol.StatusFailed("disk full")},
		{"op-cancelled", protocol.StatusCancelled()},
		{"op-unknown", protocol.StatusUnknown()},
	}
	byKey := map[string]protocol.OperationStatus{}
	for _, tc := range cases {
		byKey[tc.key] = tc.status
	}
	respond(t, env, reconcileTool, func(req protocol.OperationReconcileRequest, _ *nats.Msg) []*nats.Msg {
		return []*nats.Msg{fabrictest.SealReconciled(t, fabrictest.Key, req, byKey[req.OperationKey])}
	})
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(string(tc.status.State), func(t *testing.T) {
			res, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if res.SessionID != "session-1" || res.Tool != reconcileTool || res.OperationKey != tc.key {
				t.Fatalf("answer bound to %+v", res)
			}
			if !strings.HasPrefix(res.RequestID, "rc-") || seen[res.RequestID] {
				t.Fatalf("request id %q is not a fresh reconciliation id", res.RequestID)
			}
			seen[res.RequestID] = true
			if res.Status.State != tc.status.State || res.Status.Error != tc.status.Error {
				t.Fatalf("status = %+v, want %+v", res.Status, tc.status)
			}
			if tc.status.Payload != nil && (res.Status.Payload == nil || res.Status.Payload.Text != tc.status.Payload.Text) {
				t.Fatalf("payload = %+v, want %+v", res.Status.Payload, tc.status.Payload)
			}
		})
	}
	if r := tr.Rejected(); len(r) != 0 {
		t.Fatalf("rejected = %v", r)
	}
}

func TestReconcileRefusesForgedReplayedAndMismatchedAnswers(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1", hostnats.WithReconcileTimeout(300*time.Millisecond))
	succeeded := protocol.StatusSucceeded(protocol.TextPayload("done"))

	// An honest exchange, captured: its answer is what a replay sends.
	var captured atomic.Pointer[nats.Msg]
	type answerFunc = func(req protocol.OperationReconcileRequest, raw *nats.Msg) *nats.Msg
	var mode atomic.Pointer[answerFunc]
	honest := answerFunc(func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
		return fabrictest.SealReconciled(t, fabrictest.Key, req, succeeded)
	})
	mode.Store(&honest)
	respond(t, env, reconcileTool, func(req protocol.OperationReconcileRequest, raw *nats.Msg) []*nats.Msg {
		data := (*mode.Load())(req, raw)
		if captured.Load() == nil {
			captured.Store(&nats.Msg{Header: data.Header, Data: data.Data})
		}
		return []*nats.Msg{data}
	})
	if _, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-a"); err != nil {
		t.Fatal(err)
	}
	replayed := captured.Load()

	sealRaw := func(key protocol.SessionKey, session string, seq uint64, msg protocol.WorkerMessage) *nats.Msg {
		f, err := protocol.SealFrame(key, session, protocol.RoleWorker, seq, msg)
		if err != nil {
			t.Fatal(err)
		}
		return fabric.FrameMsg(f)
	}
	altered := func(change func(*protocol.OperationReconcileResult)) answerFunc {
		return func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			res, err := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, succeeded)
			if err != nil {
				t.Fatal(err)
			}
			change(&res)
			// Sealed under the request's own session, so only the
			// message's binding is wrong.
			return sealRaw(fabrictest.Key, req.RequestID, fabric.ReconcileSeq, protocol.ReconciledMessage(res))
		}
	}
	cases := []struct {
		name   string
		answer answerFunc
		want   []error
		reason string
	}{
		{"forged: another key", func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			return fabrictest.SealReconciled(t, fabrictest.OtherKey, req, succeeded)
		}, []error{fabric.ErrForged, fabric.ErrUnknownKey, protocol.ErrBadTag}, hostnats.RejectUnknownKey},
		{"forged: another key under this ring's key id", func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			m := fabrictest.SealReconciled(t, fabrictest.OtherKey, req, succeeded)
			m.Header.Set(fabric.HeaderKey, protocol.KeyIDOf(fabrictest.Key))
			return m
		}, []error{fabric.ErrForged, protocol.ErrBadTag}, hostnats.RejectBadTag},
		{"forged: garbage", func(protocol.OperationReconcileRequest, *nats.Msg) *nats.Msg {
			return &nats.Msg{Data: []byte(`{"kind":"reconciled_operation"}`)}
		}, []error{fabric.ErrForged}, hostnats.RejectMalformed},
		{"forged: the host's own request reflected", func(_ protocol.OperationReconcileRequest, raw *nats.Msg) *nats.Msg {
			return raw
		}, []error{fabric.ErrForged, protocol.ErrWrongRole}, hostnats.RejectWrongRole},
		{"forged: an operation's result frame", func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			data, err := fabrictest.NewCodec(t, fabrictest.Key).SealWorker(req.RequestID, 1, 1, protocol.ResultMessage(fabrictest.Result(req.RequestID, 1)))
			if err != nil {
				t.Fatal(err)
			}
			return data
		}, []error{fabric.ErrForged, protocol.ErrInvalidMessage}, hostnats.RejectInvalid},
		{"forged: an operation's sequence", func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			res, _ := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, succeeded)
			return sealRaw(fabrictest.Key, req.RequestID, fabric.WorkerSeq(1, 1), protocol.ReconciledMessage(res))
		}, []error{fabric.ErrForged, protocol.ErrSequence}, hostnats.RejectSequence},
		{"forged: sealed for another session", func(req protocol.OperationReconcileRequest, _ *nats.Msg) *nats.Msg {
			res, _ := protocol.NewOperationReconcileResult(req.SessionID, req.RequestID, req.Tool, req.OperationKey, succeeded)
			return sealRaw(fabrictest.Key, "rc-other", fabric.ReconcileSeq, protocol.ReconciledMessage(res))
		}, []error{fabric.ErrForged, protocol.ErrInvalidSession}, hostnats.RejectSession},
		{"replayed: the answer to an earlier request", func(protocol.OperationReconcileRequest, *nats.Msg) *nats.Msg {
			return &nats.Msg{Header: replayed.Header, Data: replayed.Data}
		}, []error{hostnats.ErrReconcileReplayed}, hostnats.RejectReplayed},
		{"mismatched: another operation key", altered(func(r *protocol.OperationReconcileResult) { r.OperationKey = "op-other" }),
			[]error{hostnats.ErrReconcileMismatch, protocol.ErrInvalidMessage}, hostnats.RejectInvalid},
		{"mismatched: another tool", altered(func(r *protocol.OperationReconcileResult) { r.Tool = "text.other" }),
			[]error{hostnats.ErrReconcileMismatch}, hostnats.RejectInvalid},
		{"mismatched: another session", altered(func(r *protocol.OperationReconcileResult) { r.SessionID = "session-2" }),
			[]error{hostnats.ErrReconcileMismatch}, hostnats.RejectInvalid},
		{"mismatched: another request id", altered(func(r *protocol.OperationReconcileResult) { r.RequestID = "rc-other" }),
			[]error{fabric.ErrForged, protocol.ErrInvalidSession}, hostnats.RejectSession},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tr.Rejected()[tc.reason]
			mode.Store(&tc.answer)
			res, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-b")
			if err == nil {
				t.Fatalf("accepted %+v", res)
			}
			fabrictest.WantErrIs(t, err, append([]error{hostnats.ErrNoReconcileAnswer}, tc.want...)...)
			if got := tr.Rejected()[tc.reason]; got != before+1 {
				t.Fatalf("rejected[%s] = %d, want %d (all: %v)", tc.reason, got, before+1, tr.Rejected())
			}
		})
	}
}

// TestReconcileForgeryDoesNotHideTheAnswer: a refused answer that arrives
// first leaves the request open, and the real one is taken.
func TestReconcileForgeryDoesNotHideTheAnswer(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	respond(t, env, reconcileTool, func(req protocol.OperationReconcileRequest, _ *nats.Msg) []*nats.Msg {
		return []*nats.Msg{
			fabrictest.SealReconciled(t, fabrictest.OtherKey, req, protocol.StatusUnknown()),
			fabrictest.SealReconciled(t, fabrictest.Key, req, protocol.StatusCancelled()),
		}
	})
	res, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-a")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.State != protocol.OperationCancelled {
		t.Fatalf("status = %+v", res.Status)
	}
	if got := tr.Rejected()[hostnats.RejectUnknownKey]; got != 1 {
		t.Fatalf("rejected answers under an unknown key = %d, want 1", got)
	}
}

func TestReconcileWithoutAnAnswer(t *testing.T) {
	env := fabrictest.NewEnv(t)
	const timeout = 200 * time.Millisecond
	tr := newTransport(t, env, "h1", hostnats.WithReconcileTimeout(timeout))
	t.Run("no worker listens", func(t *testing.T) {
		_, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", "text.nobody", "op-a")
		fabrictest.WantErrIs(t, err, hostnats.ErrNoReconcileAnswer)
	})
	t.Run("the worker stays silent", func(t *testing.T) {
		heard := make(chan struct{}, 1)
		respond(t, env, reconcileTool, func(protocol.OperationReconcileRequest, *nats.Msg) []*nats.Msg {
			heard <- struct{}{}
			return nil
		})
		start := time.Now()
		_, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-a")
		fabrictest.WantErrIs(t, err, hostnats.ErrNoReconcileAnswer)
		if waited := time.Since(start); waited < timeout {
			t.Fatalf("gave up after %v, before the timeout %v", waited, timeout)
		}
		testwait.Receive(t, 0, "the request", heard)
	})
}

// TestReconcileEndsWithItsCallerOrTransport: a wait ends when the
// caller's context does (the error says so) or when the transport closes,
// not at the timeout.
func TestReconcileEndsWithItsCallerOrTransport(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1", hostnats.WithReconcileTimeout(time.Minute))
	heard := make(chan struct{}, 4)
	respond(t, env, reconcileTool, func(protocol.OperationReconcileRequest, *nats.Msg) []*nats.Msg {
		heard <- struct{}{}
		return nil
	})
	ended := make(chan error, 1)
	ctx, cancel := context.WithCancel(fabrictest.Ctx(t))
	go func() {
		_, err := tr.Reconcile(ctx, "session-1", reconcileTool, "op-a")
		ended <- err
	}()
	testwait.Receive(t, 0, "the request", heard)
	cancel()
	fabrictest.WantErrIs(t, testwait.Receive(t, 0, "Reconcile to return", ended), hostnats.ErrNoReconcileAnswer, context.Canceled)

	go func() {
		_, err := tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-a")
		ended <- err
	}()
	testwait.Receive(t, 0, "the request", heard)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	fabrictest.WantErrIs(t, testwait.Receive(t, 0, "Reconcile to return", ended), hostnats.ErrClosed)
}

func TestReconcileRefusesBadInputAndSendsNothing(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	sent := make(chan *nats.Msg, 8)
	sub, err := env.NC.ChanSubscribe("splash.reconcile.>", sent)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	cases := []struct {
		name                     string
		session, tool, operation string
		want                     error
	}{
		{"empty session", "", reconcileTool, "op-a", protocol.ErrInvalidMessage},
		{"empty operation key", "session-1", reconcileTool, "", protocol.ErrInvalidMessage},
		{"wildcard tool", "session-1", "text.*", "op-a", protocol.ErrInvalidToolName},
		{"empty tool", "session-1", "", "op-a", protocol.ErrInvalidToolName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tr.Reconcile(fabrictest.Ctx(t), tc.session, tc.tool, tc.operation)
			fabrictest.WantErrIs(t, err, tc.want)
		})
	}
	if err := env.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 0 {
		t.Fatalf("%d requests sent for bad input", len(sent))
	}
	_ = tr.Close()
	_, err = tr.Reconcile(fabrictest.Ctx(t), "session-1", reconcileTool, "op-a")
	fabrictest.WantErrIs(t, err, hostnats.ErrClosed)
	if !errors.Is(hostnats.WithReconcileTimeout(0)(nil), fabric.ErrInvalidConfig) {
		t.Fatal("a zero reconcile timeout was accepted")
	}
}

// acceptingHost is the host the transports of these tests ("h1") name in
// a reconciliation request for session: the one a session id of another
// host names, else h1.
func acceptingHost(session string) string {
	if _, host, ok := hostloop.ParseSessionID(hostloop.SessionID(session)); ok {
		return host
	}
	return "h1"
}

// A host that drives a session another host accepted (it adopted it)
// names the accepting host in its reconciliation requests: that host's
// answer subjects are where a worker finds the call's stored answer.
func TestReconcileNamesTheSessionsAcceptingHost(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	hosts := make(chan string, 2)
	respond(t, env, reconcileTool, func(req protocol.OperationReconcileRequest, raw *nats.Msg) []*nats.Msg {
		hosts <- raw.Header.Get(fabric.HeaderHost)
		return []*nats.Msg{fabrictest.SealReconciled(t, fabrictest.Key, req, protocol.StatusUnknown())}
	})
	for _, tc := range []struct{ session, want string }{
		{"s-h0-0123456789ab-7", "h0"},
		{"session-1", "h1"},
	} {
		if _, err := tr.Reconcile(fabrictest.Ctx(t), tc.session, reconcileTool, "op-1"); err != nil {
			t.Fatalf("%s: %v", tc.session, err)
		}
		if got := testwait.Receive(t, 0, "the request's host", hosts); got != tc.want {
			t.Fatalf("%s: Splash-Host = %q, want %q", tc.session, got, tc.want)
		}
	}
}
