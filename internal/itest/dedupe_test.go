package itest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 8: duplicate deliveries. A host republish of the same attempt
// carries the same message id and the stream stores it once; a copy the
// stream cannot recognise (another message id) reaches a worker, whose
// journal answers it, while the call runs and after it finished. The tool
// runs once.
func TestDuplicateDeliveriesRunOnce(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.dup")}})
	subject, err := fabric.InvokeSubject("it.dup")
	must(t, err)
	invokes := c.capture(subject)
	fx := newEffects()
	gate := make(chan struct{})
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.dup"), counting(fx, func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
			return echo(ctx, call)
		})))
	})
	id := c.submit(sprintf(catchScript, "it.dup"))
	orig := invokes.wait(t, 1)[0]
	testwait.Until(t, 0, "the first run", func() bool { return fx.count() == 1 })

	// The host's republish of the same attempt, byte for byte.
	if ack := c.republish(orig.Subject, orig.Data, orig.Header); !ack.Duplicate {
		t.Fatalf("republish of the same attempt stored again: %+v", ack)
	}
	// A copy under another message id, while the call runs.
	copyHeader := func(suffix string) nats.Header {
		h := nats.Header{}
		for k, v := range orig.Header {
			h[k] = append([]string(nil), v...)
		}
		h.Set(fabric.HeaderMsgID, orig.Header.Get(fabric.HeaderMsgID)+suffix)
		return h
	}
	c.republish(orig.Subject, orig.Data, copyHeader("-copy1"))
	testwait.Until(t, 0, "the running copy to be deferred", func() bool { return w.Stats().Deferred >= 1 })
	close(gate)
	wantCompleted(t, c.wait(id, 0), "ok: x")
	testwait.Until(t, 0, "the deferred copy to be answered from the journal", func() bool { return w.Stats().DedupeHits == 1 })
	// A copy after the call finished.
	c.republish(orig.Subject, orig.Data, copyHeader("-copy2"))
	testwait.Until(t, 0, "the late copy to be answered from the journal", func() bool { return w.Stats().DedupeHits == 2 })
	if fx.count() != 1 {
		t.Fatalf("runs = %d, want 1", fx.count())
	}
	// Every delivery was either the one run, a deferral or a replay.
	if st := w.Stats(); st.Executed != 1 || st.Received != st.Executed+st.Deferred+st.DedupeHits {
		t.Fatalf("stats = %+v, want 1 executed and every other delivery deferred or replayed", st)
	}
	wantCompleted(t, c.wait(id, 0), "ok: x")
}
