package itest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 9: forged frames (no tag, wrong key, reflected, replayed) on
// the invocation and the event subjects are rejected and counted, and
// change nothing: the tool does not run for them and the script they name
// completes only with its genuine result.
func TestForgedFramesRejected(t *testing.T) {
	c := newCluster(t, options{tools: []toolspec.Spec{tool("it.guard")}})
	invokeSubject, err := fabric.InvokeSubject("it.guard")
	must(t, err)
	eventsSubject := fabric.EventsSubject(hostID, "it.guard")
	invokes, events := c.capture(invokeSubject), c.capture(eventsSubject)
	fx := newEffects()
	gate := make(chan struct{})
	w := c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.guard"), counting(fx, func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return workeragent.Output{}, context.Cause(ctx)
			}
			return echo(ctx, call)
		})))
	})
	id := c.submit(sprintf(catchScript, "it.guard"))
	orig := invokes.wait(t, 1)[0]
	op := c.liveOp(id)
	testwait.Until(t, 0, "the genuine run", func() bool { return fx.count() == 1 })
	inv, err := c.codec.OpenInvoke(orig.Header, orig.Data)
	must(t, err)
	n := 0
	header := func(h nats.Header) nats.Header {
		n++
		out := nats.Header{}
		for k, v := range h {
			out[k] = append([]string(nil), v...)
		}
		out.Set(fabric.HeaderMsgID, "forged-"+sprintf("%d", n))
		out.Set(fabric.HeaderTool, "it.guard")
		return out
	}

	// Invocation subject.
	wrongKey, err := otherCodec(t).SealInvoke(inv)
	must(t, err)
	// A forger names the genuine key's id (it is no secret), so the tag is
	// what fails, not the lookup of the key.
	wrongKey.Header.Set(fabric.HeaderKey, c.codec.KeyID())
	reflected, err := c.codec.SealWorker(inv.RequestID, 1, 1, protocol.ChunkMessage(protocol.Chunk{RequestID: inv.RequestID, Sequence: 1, Text: "x"}))
	must(t, err)
	for _, f := range []*nats.Msg{stripTag(t, orig), wrongKey, reflected} {
		c.republish(invokeSubject, f.Data, header(frameHeader(orig.Header, f)))
	}
	testwait.Until(t, 0, "the worker to reject three forged invocations", func() bool { return w.Stats().Forged == 3 })
	// A verbatim replay under a new message id authenticates; the journal
	// answers it (the key is running), so it never runs either.
	c.republish(invokeSubject, orig.Data, header(orig.Header))
	testwait.Until(t, 0, "the replayed invocation to be deferred", func() bool { return w.Stats().Deferred >= 1 })

	// Event subjects: results for the live operation that must not land.
	forgedPayload := protocol.TextPayload("forged")
	result := protocol.ResultMessage(protocol.Result{RequestID: op.RequestID, Attempt: 1, Status: protocol.ResultSucceeded, Payload: &forgedPayload})
	genuine, err := c.codec.SealWorker(op.RequestID, 1, 1, result)
	must(t, err)
	wrongKeyResult, err := otherCodec(t).SealWorker(op.RequestID, 1, 1, result)
	must(t, err)
	wrongKeyResult.Header.Set(fabric.HeaderKey, c.codec.KeyID())
	for _, f := range []*nats.Msg{stripTag(t, genuine), wrongKeyResult} {
		c.republish(eventsSubject, f.Data, header(f.Header))
	}
	wrongKeyChunk, err := otherCodec(t).SealWorker(op.RequestID, 1, 1, protocol.ChunkMessage(protocol.Chunk{RequestID: op.RequestID, Sequence: 1, Text: "forged"}))
	must(t, err)
	wrongKeyChunk.Header.Set(fabric.HeaderKey, c.codec.KeyID())
	c.republish(eventsSubject, wrongKeyChunk.Data, header(wrongKeyChunk.Header))
	rejected := func() uint64 {
		r := c.tr.Rejected()
		return r[hostnats.RejectBadTag] + r[hostnats.RejectMalformed]
	}
	testwait.Until(t, 0, "the host to reject three forged frames", func() bool { return rejected() == 3 })
	if s, _ := c.status(id); s.State != hostloop.SessionSuspended || len(s.Operations) != 1 {
		t.Fatalf("forged frames changed the session: %+v", s)
	}

	close(gate)
	s := c.wait(id, 0)
	wantCompleted(t, s, "ok: x")
	// Replay the genuine terminal event under a new message id.
	// The capture holds the forgeries too; the genuine event is the one a
	// worker sent.
	var genuineEvent *nats.Msg
	for _, m := range events.wait(t, 4) {
		if m.Header.Get(fabric.HeaderWorker) != "" {
			genuineEvent = m
		}
	}
	if genuineEvent == nil {
		t.Fatal("no genuine event captured")
	}
	c.republish(eventsSubject, genuineEvent.Data, header(genuineEvent.Header))
	testwait.Until(t, 0, "the host to reject the replayed event", func() bool { return c.tr.Rejected()[hostnats.RejectReplayed] == 1 })

	if after, _ := c.status(id); after.State != s.State || after.Value != s.Value {
		t.Fatalf("session changed: %+v, was %+v", after, s)
	}
	if fx.count() != 1 || w.Stats().Executed != 1 {
		t.Fatalf("runs = %d, stats = %+v, want one run", fx.count(), w.Stats())
	}
	t.Logf("host rejections: %v; worker: %+v", c.tr.Rejected(), w.Stats())
}
