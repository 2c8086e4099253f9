package workeragent_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/idempotency"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// hostTransport is a host's transport on the test's server, under the
// test's key.
func (e *env) hostTransport(t *testing.T, opts ...hostnats.Option) *hostnats.HostTransport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	tr, err := hostnats.NewHostTransport(ctx, e.srv.Connect(), e.fcfg, e.hostID, e.key, opts...)
	must(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// journal is the pool's journal, opened as a second client would, to
// write the records a test reconciles.
func (e *env) journal(t *testing.T) idempotency.Journal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(10*time.Second))
	defer cancel()
	j, err := idempotency.NewKV(ctx, e.js, idempotency.KVConfig{})
	must(t, err)
	return j
}

func reconcileCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Scale(20*time.Second))
	t.Cleanup(cancel)
	return ctx
}

func blockUntilDone(ctx context.Context, _ *workeragent.Call) (workeragent.Output, error) {
	<-ctx.Done()
	return workeragent.Output{}, ctx.Err()
}

// TestReconcileAnswersFromTheJournal: the agent answers each state from
// the journal record of the key, whoever wrote it.
func TestReconcileAnswersFromTheJournal(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "text.remote"), workeragent.HandlerFunc(blockUntilDone)))
	})
	tr := e.hostTransport(t)
	j := e.journal(t)
	ctx := reconcileCtx(t)
	done := protocol.TextPayload("done")
	store := func(key string, r idempotency.Result) {
		_, stored, err := j.Store(ctx, key, "other-worker", r)
		must(t, err)
		if !stored {
			t.Fatalf("%s already stored", key)
		}
	}
	store("op-succeeded", idempotency.Result{Status: idempotency.StatusSucceeded, Payload: &done})
	store("op-succeeded-empty", idempotency.Result{Status: idempotency.StatusSucceeded})
	store("op-failed", idempotency.Result{Status: idempotency.StatusFailed, Error: "disk full"})
	store("op-cancelled", idempotency.Result{Status: idempotency.StatusCancelled})
	store("op-indeterminate", idempotency.Result{Status: idempotency.StatusIndeterminate, Error: "lost"})
	_, err := j.Begin(ctx, "op-running", "other-worker", time.Hour)
	must(t, err)
	released, err := j.Begin(ctx, "op-released", "other-worker", time.Hour)
	must(t, err)
	must(t, j.Release(ctx, released))
	lapsed, err := j.Begin(ctx, "op-lapsed", "other-worker", time.Millisecond)
	must(t, err)
	testwait.Until(t, 0, "the lease to lapse", func() bool { return time.Now().After(lapsed.Record.LeaseExpiresAt) })

	cases := []struct {
		key     string
		state   protocol.OperationState
		payload string
		err     string
	}{
		{"op-succeeded", protocol.OperationSucceeded, "done", ""},
		{"op-succeeded-empty", protocol.OperationSucceeded, "", ""},
		{"op-failed", protocol.OperationFailed, "", "disk full"},
		{"op-cancelled", protocol.OperationCancelled, "", ""},
		{"op-indeterminate", protocol.OperationFailed, "", "indeterminate: lost"},
		{"op-running", protocol.OperationRunning, "", ""},
		{"op-released", protocol.OperationUnknown, "", ""},
		{"op-lapsed", protocol.OperationUnknown, "", ""},
		{"op-never-seen", protocol.OperationUnknown, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			res, err := tr.Reconcile(ctx, "session-1", "text.remote", tc.key)
			must(t, err)
			if res.Status.State != tc.state || res.Status.Error != tc.err {
				t.Fatalf("status = %+v, want %s %q", res.Status, tc.state, tc.err)
			}
			if tc.state == protocol.OperationSucceeded && (res.Status.Payload == nil || res.Status.Payload.Text != tc.payload) {
				t.Fatalf("payload = %+v, want %q", res.Status.Payload, tc.payload)
			}
		})
	}
	if got := a.Stats().Reconciled; got != uint64(len(cases)) {
		t.Fatalf("Stats.Reconciled = %d, want %d", got, len(cases))
	}
}

// TestReconcileFollowsARealCall: a call of a claimed tool is running
// while its handler runs and succeeded once it answered; a call of an
// Idempotent tool, which writes no record until it ends, is running on
// the agent that runs it.
func TestReconcileFollowsARealCall(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		name := map[bool]string{false: "claimed", true: "idempotent"}[idempotent]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			release := make(chan struct{})
			started := make(chan struct{}, 1)
			e.startAgent("w1", func(a *workeragent.Agent) {
				remote := tooltest.Tool(t, toolspec.Spec{Name: "text.remote", Idempotent: idempotent})
				must(t, a.HandleTool(remote, workeragent.HandlerFunc(func(ctx context.Context, c *workeragent.Call) (workeragent.Output, error) {
					started <- struct{}{}
					select {
					case <-release:
						return workeragent.Result("released"), nil
					case <-ctx.Done():
						return workeragent.Output{}, ctx.Err()
					}
				})))
			})
			tr := e.hostTransport(t)
			ctx := reconcileCtx(t)
			inv := e.newInvoke("text.remote", "x")
			res, err := tr.Reconcile(ctx, "session-1", inv.Tool, inv.IdempotencyKey)
			must(t, err)
			if res.Status.State != protocol.OperationUnknown {
				t.Fatalf("before the call: %+v", res.Status)
			}
			e.publish(inv)
			testwait.Receive(t, 0, "the handler", started)
			res, err = tr.Reconcile(ctx, "session-1", inv.Tool, inv.IdempotencyKey)
			must(t, err)
			if res.Status.State != protocol.OperationRunning {
				t.Fatalf("while it runs: %+v", res.Status)
			}
			close(release)
			if r := e.result(t); r.Status != protocol.ResultSucceeded {
				t.Fatalf("result = %+v", r)
			}
			testwait.Until(t, 0, "the stored result", func() bool {
				res, err = tr.Reconcile(ctx, "session-1", inv.Tool, inv.IdempotencyKey)
				must(t, err)
				return res.Status.State == protocol.OperationSucceeded
			})
			if res.Status.Payload == nil || res.Status.Payload.Text != "released" {
				t.Fatalf("after the call: %+v", res.Status)
			}
		})
	}
}

// TestReconcilePoolAnswersOnce: of a pool of two, exactly one agent
// answers each request.
func TestReconcilePoolAnswersOnce(t *testing.T) {
	e := newEnv(t)
	register := func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "text.remote"), workeragent.HandlerFunc(blockUntilDone)))
	}
	w1 := e.startAgent("w1", register)
	w2 := e.startAgent("w2", register)
	ctx := reconcileCtx(t)

	// Every answer that reaches the inbox is counted, not only the first.
	codec := e.codec
	const n = 40
	replies := make(chan *nats.Msg, 2*n)
	inbox := e.nc.NewInbox()
	sub, err := e.nc.ChanSubscribe(inbox, replies)
	must(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	asked := map[string]bool{}
	for range n {
		req, err := fabric.NewReconcileRequest("session-1", "text.remote", "op-a")
		must(t, err)
		data, err := codec.SealReconcile(req)
		must(t, err)
		asked[req.RequestID] = true
		data.Subject, data.Reply = fabric.ReconcileSubject("text.remote"), inbox
		must(t, e.nc.PublishMsg(data))
	}
	answered := map[string]int{}
	for range n {
		m := testwait.Receive(t, 0, "an answer", replies)
		res, err := codec.OpenReconciled(m.Header, m.Data)
		must(t, err)
		if !asked[res.RequestID] {
			t.Fatalf("answer to %q, never asked", res.RequestID)
		}
		answered[res.RequestID]++
	}
	if len(answered) != n {
		t.Fatalf("%d distinct requests answered, want %d", len(answered), n)
	}
	// A last round trip through the same tool lets any answer still on
	// its way arrive; none may.
	tr := e.hostTransport(t)
	_, err = tr.Reconcile(ctx, "session-1", "text.remote", "op-b")
	must(t, err)
	must(t, e.nc.Flush())
	total := func() uint64 { return w1.Stats().Reconciled + w2.Stats().Reconciled }
	testwait.Until(t, 0, "both agents' counts", func() bool { return total() >= n+1 })
	if got := total(); got != n+1 {
		t.Fatalf("the pool answered %d times for %d requests", got, n+1)
	}
	if extra := len(replies); extra != 0 {
		t.Fatalf("%d answers more than requests", extra)
	}
	t.Logf("answers: w1 %d, w2 %d", w1.Stats().Reconciled, w2.Stats().Reconciled)
}

// TestReconcileDropsBadRequests: a request that fails authentication,
// names another tool, or has nowhere to be answered is counted and never
// answered.
func TestReconcileDropsBadRequests(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "text.remote"), workeragent.HandlerFunc(blockUntilDone)))
		must(t, a.HandleTool(tooltest.Text(t, "text.other"), workeragent.HandlerFunc(blockUntilDone)))
	})
	other, err := protocol.GenerateSessionKey(rand.Reader)
	must(t, err)
	forger, err := fabric.NewCodec(other)
	must(t, err)
	seal := func(c *fabric.Codec, tool string) *nats.Msg {
		req, err := fabric.NewReconcileRequest("session-1", tool, "op-a")
		must(t, err)
		data, err := c.SealReconcile(req)
		must(t, err)
		return data
	}
	inv, err := e.codec.SealInvoke(e.newInvoke("text.remote", "x"))
	must(t, err)
	subject := fabric.ReconcileSubject("text.remote")
	cases := []struct {
		name  string
		data  *nats.Msg
		reply bool
	}{
		{"another key", seal(forger, "text.remote"), true},
		{"garbage", &nats.Msg{Data: []byte("not a frame")}, true},
		{"an invocation frame", inv, true},
		{"another tool's request", seal(e.codec, "text.other"), true},
		{"no reply subject", seal(e.codec, "text.remote"), false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.reply {
				tc.data.Subject = subject
				_, err := e.nc.RequestMsg(tc.data, 300*time.Millisecond)
				if !errors.Is(err, nats.ErrTimeout) {
					t.Fatalf("request = %v, want no answer", err)
				}
			} else {
				tc.data.Subject = subject
				must(t, e.nc.PublishMsg(tc.data))
			}
			testwait.Until(t, 0, "the refusal counted", func() bool { return a.Stats().Forged == uint64(i+1) })
		})
	}
	if got := a.Stats().Reconciled; got != 0 {
		t.Fatalf("Stats.Reconciled = %d, want 0", got)
	}
}
