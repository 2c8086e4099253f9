package host

import (
	"testing"

	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

type reconcileEnv struct {
	r      *Runtime
	p      *Promise
	inv    ExternalInvocation
	host   *protocol.SessionAuthenticator
	worker *protocol.SessionAuthenticator
	out    OutboundReconciliation
}

func newReconcileEnv(t *testing.T, json bool) *reconcileEnv {
	t.Helper()
	r, _ := newTestRuntime(t, Config{})
	var key [protocol.AuthTagBytes]byte
	for i := range key {
		key[i] = 7
	}
	k := protocol.SessionKeyFromArray(key)
	host, err := protocol.NewSessionAuthenticator("worker-1", k, protocol.RoleHost)
	must(t, err)
	worker, err := protocol.NewSessionAuthenticator("worker-1", k, protocol.RoleWorker)
	must(t, err)
	e := &reconcileEnv{r: r, host: host, worker: worker}
	if json {
		register(t, r, toolspec.Spec{Name: "text.remote", Format: toolspec.FormatJSON, OutputSchema: []byte(sumSchema)})
		e.p, err = r.StartJSON("text.remote", []byte(`{}`))
		must(t, err)
	} else {
		register(t, r, toolspec.Spec{Name: "text.remote"})
		e.p = start(t, r, "text.remote", "release")
	}
	e.inv = claim(t, r)
	e.out, err = r.PrepareAuthenticatedExternalReconciliation(e.inv.ID, "reconcile-1", host)
	must(t, err)
	return e
}

// answer plays the worker: open the request, answer with status.
func (e *reconcileEnv) answer(t *testing.T, status protocol.OperationStatus) protocol.Frame {
	t.Helper()
	msg, err := e.worker.Open(e.out.Frame)
	must(t, err)
	if msg.Kind != protocol.KindReconcileOperation {
		t.Fatalf("kind %s", msg.Kind)
	}
	q := *msg.Reconcile
	res, err := protocol.NewOperationReconcileResult(q.SessionID, q.RequestID, q.Tool, q.OperationKey, status)
	must(t, err)
	f, err := e.worker.Seal(protocol.ReconciledMessage(res))
	must(t, err)
	return f
}

func TestReconcileRequestNamesOperationByKey(t *testing.T) {
	e := newReconcileEnv(t, false)
	want := protocol.OperationReconcileRequest{SessionID: "worker-1", RequestID: "reconcile-1", Tool: "text.remote", OperationKey: e.inv.IdempotencyKey}
	if e.out.Request != want {
		t.Fatalf("request %+v", e.out.Request)
	}
	worker, _ := protocol.NewSessionAuthenticator("worker-1", protocol.SessionKeyFromArray([32]byte{}), protocol.RoleWorker)
	_, err := e.r.PrepareAuthenticatedExternalReconciliation(e.inv.ID, "r2", worker)
	wantErr(t, err, protocol.ErrWrongRole)
}

func TestReconcileRunningLeavesPromisePending(t *testing.T) {
	e := newReconcileEnv(t, false)
	got, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, e.out.Request, e.host, e.answer(t, protocol.StatusRunning()))
	must(t, err)
	if !got.Running || got.Resumed != nil {
		t.Fatalf("reconciliation %+v", got)
	}
	pendingPromise(t, e.p)
	wantState(t, e.r, e.inv.ID, Claimed)
	wantOutcomes(t, e.r, e.inv.ID, "started", "claimed", "reconciled")
}

func TestReconcileSucceededResolves(t *testing.T) {
	e := newReconcileEnv(t, false)
	got, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, e.out.Request, e.host, e.answer(t, protocol.StatusSucceeded(protocol.TextPayload("done"))))
	must(t, err)
	if got.Running || got.State != protocol.OperationSucceeded {
		t.Fatalf("reconciliation %+v", got)
	}
	if s := settled(t, e.p); s.Output != "done" {
		t.Fatalf("settlement %+v", s)
	}
	wantOutcomes(t, e.r, e.inv.ID, "started", "claimed", "succeeded")
}

func TestReconcileSucceededPassesOutputChecks(t *testing.T) {
	for name, payload := range map[string]protocol.WorkerPayload{
		"contract": protocol.JSONPayload([]byte(`{"sum":"no"}`)),
		"format":   protocol.TextPayload("done"),
	} {
		t.Run(name, func(t *testing.T) {
			e := newReconcileEnv(t, true)
			_, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, e.out.Request, e.host, e.answer(t, protocol.StatusSucceeded(payload)))
			must(t, err)
			wantErr(t, settled(t, e.p).Err, ToolInvalidOutput)
		})
	}
}

func TestReconcileTerminalStatuses(t *testing.T) {
	tests := []struct {
		status protocol.OperationStatus
		want   OperationState
	}{
		{protocol.StatusFailed("worker lost it"), Failed},
		{protocol.StatusCancelled(), Cancelled},
		{protocol.StatusUnknown(), Claimed},
	}
	for _, tt := range tests {
		t.Run(string(tt.status.State), func(t *testing.T) {
			e := newReconcileEnv(t, false)
			got, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, e.out.Request, e.host, e.answer(t, tt.status))
			must(t, err)
			if got.State != tt.status.State || got.Running {
				t.Fatalf("reconciliation %+v", got)
			}
			wantState(t, e.r, e.inv.ID, tt.want)
		})
	}
}

func TestReconcileMismatchChangesNothing(t *testing.T) {
	tests := []struct {
		name string
		// mutate returns the request and frame to present.
		mutate func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame)
		// consumed: the frame authenticated, so the host's sequence moved.
		consumed bool
	}{
		{"request session", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			q := e.out.Request
			q.SessionID = "worker-2"
			return q, e.answer(t, protocol.StatusRunning())
		}, false},
		{"request tool", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			q := e.out.Request
			q.Tool = "text.other"
			return q, e.answer(t, protocol.StatusRunning())
		}, false},
		{"request key", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			q := e.out.Request
			q.OperationKey = "sk1-other-1"
			return q, e.answer(t, protocol.StatusRunning())
		}, false},
		{"result request id", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			_, err := e.worker.Open(e.out.Frame)
			must(t, err)
			q := e.out.Request
			res, err := protocol.NewOperationReconcileResult(q.SessionID, "reconcile-9", q.Tool, q.OperationKey, protocol.StatusSucceeded(protocol.TextPayload("done")))
			must(t, err)
			f, err := e.worker.Seal(protocol.ReconciledMessage(res))
			must(t, err)
			return q, f
		}, true},
		{"result operation key", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			_, err := e.worker.Open(e.out.Frame)
			must(t, err)
			q := e.out.Request
			res, err := protocol.NewOperationReconcileResult(q.SessionID, q.RequestID, q.Tool, "sk1-else-1", protocol.StatusSucceeded(protocol.TextPayload("done")))
			must(t, err)
			f, err := e.worker.Seal(protocol.ReconciledMessage(res))
			must(t, err)
			return q, f
		}, true},
		{"wrong kind", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			f, err := e.worker.Seal(protocol.ResultMessage(protocol.Result{RequestID: "x", Attempt: 1, Status: protocol.ResultSucceeded, Payload: &protocol.WorkerPayload{Format: protocol.FormatText, Text: "done"}}))
			must(t, err)
			return e.out.Request, f
		}, true},
		{"wrong role", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			return e.out.Request, e.out.Frame // the host's own frame reflected back
		}, false},
		{"bad tag", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			f := e.answer(t, protocol.StatusSucceeded(protocol.TextPayload("done")))
			f.Tag = f.Tag[:len(f.Tag)-1] + map[bool]string{true: "1", false: "0"}[f.Tag[len(f.Tag)-1] == '0']
			return e.out.Request, f
		}, false},
		{"replayed frame", func(t *testing.T, e *reconcileEnv) (protocol.OperationReconcileRequest, protocol.Frame) {
			f := e.answer(t, protocol.StatusRunning())
			_, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, e.out.Request, e.host, f)
			must(t, err)
			return e.out.Request, f
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newReconcileEnv(t, false)
			q, f := tt.mutate(t, e)
			before := snapshot(e.r)
			_, opened := e.host.Sequences()
			_, err := e.r.ReconcileAuthenticatedExternalTool(e.inv.ID, q, e.host, f)
			wantErr(t, err, ErrReconcileMismatch)
			if snapshot(e.r) != before {
				t.Fatal("mismatch changed the runtime")
			}
			_, after := e.host.Sequences()
			if consumed := after != opened; consumed != tt.consumed {
				t.Fatalf("sequence consumed = %v, want %v", consumed, tt.consumed)
			}
			pendingPromise(t, e.p)
		})
	}
}
