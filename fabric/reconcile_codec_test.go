package fabric_test

import (
	"errors"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/protocol"
)

// TestReconcileCodecBinding: a request opens only as what it is, and each
// end refuses the other's frames and an operation's.
func TestReconcileCodecBinding(t *testing.T) {
	c := fabrictest.NewCodec(t, fabrictest.Key)
	req, err := fabric.NewReconcileRequest("session-1", "text.remote", "op-a")
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.SealReconcile(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.OpenReconcile(data.Header, data.Data)
	if err != nil || got != req {
		t.Fatalf("OpenReconcile = %+v, %v", got, err)
	}
	inv, err := c.SealInvoke(fabrictest.Invoke("req-1", 1))
	if err != nil {
		t.Fatal(err)
	}
	answer := fabrictest.SealReconciled(t, fabrictest.Key, req, protocol.StatusUnknown())
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"an invocation as a request", func() error { _, err := c.OpenReconcile(inv.Header, inv.Data); return err }(), protocol.ErrInvalidMessage},
		{"an answer as a request", func() error { _, err := c.OpenReconcile(answer.Header, answer.Data); return err }(), protocol.ErrWrongRole},
		{"a request as an answer", func() error { _, err := c.OpenReconciled(data.Header, data.Data); return err }(), protocol.ErrWrongRole},
		{"a request as an invocation", func() error { _, err := c.OpenInvoke(data.Header, data.Data); return err }(), protocol.ErrInvalidMessage},
		{"a request as a control frame", func() error { _, err := c.OpenControl(data.Header, data.Data); return err }(), protocol.ErrInvalidMessage},
		{"an answer as a worker event", func() error { _, _, err := c.OpenWorker(answer.Header, answer.Data); return err }(), protocol.ErrInvalidMessage},
	} {
		t.Run(tc.name, func(t *testing.T) { fabrictest.WantErrIs(t, tc.err, fabric.ErrForged, tc.want) })
	}
	if _, err := c.SealReconcile(protocol.OperationReconcileRequest{}); !errors.Is(err, protocol.ErrInvalidMessage) {
		t.Fatalf("SealReconcile(zero) = %v", err)
	}
}
