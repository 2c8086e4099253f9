package hostnats_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostnats"
	"github.com/splashfabric/splashfabric/internal/fabrictest"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/protocol"
)

// workerFrame is one frame a test worker sends: chunk k of a request, or
// (chunk false) its result.
type workerFrame struct {
	req   string
	k     uint32
	chunk bool
}

// publishCalls plays a worker that answers each request with chunks 1..n
// and then its result, all published asynchronously on one connection as
// fast as the client allows, the way workeragent does. It returns the
// frames in publish order.
func publishCalls(t *testing.T, env *fabrictest.Env, hostID string, requests, n int) []workerFrame {
	t.Helper()
	wnc := env.Srv.Connect()
	js, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	c := fabrictest.NewCodec(t, fabrictest.Key)
	var sent []workerFrame
	for r := range requests {
		req := fmt.Sprintf("req-%d", r+1)
		for k := uint32(1); k <= uint32(n)+1; k++ {
			chunk := k <= uint32(n)
			msg := protocol.ResultMessage(fabrictest.Result(req, 1))
			id := c.EventMsgID(req, 1, protocol.KindResult)
			if chunk {
				msg = protocol.ChunkMessage(protocol.Chunk{RequestID: req, Sequence: uint64(k), Text: fmt.Sprint("c", k)})
				id = c.ChunkMsgID(req, 1, k)
			}
			m, err := c.SealWorker(req, 1, k, msg)
			if err != nil {
				t.Fatal(err)
			}
			m.Subject = fabric.EventsSubject(hostID, fabrictest.Tool)
			m.Header.Set(fabric.HeaderTool, fabrictest.Tool)
			m.Header.Set(fabric.HeaderMsgID, id)
			if _, err := js.PublishMsgAsync(m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, workerFrame{req: req, k: k, chunk: chunk})
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-fabrictest.Ctx(t).Done():
		t.Fatal("publishes not acknowledged")
	}
	return sent
}

// expectFrames reads len(want) events and checks they are exactly want, in
// order.
func expectFrames(t *testing.T, tr *hostnats.HostTransport, want []workerFrame) {
	t.Helper()
	for i, w := range want {
		ev := testwait.Receive(t, 0, "worker frame", tr.Events())
		if ev.Kind != hostloop.EventMessage {
			t.Fatalf("event %d = %+v", i, ev)
		}
		m := ev.Message
		var got workerFrame
		switch {
		case m.Chunk != nil:
			got = workerFrame{req: m.Chunk.RequestID, k: uint32(m.Chunk.Sequence), chunk: true}
		case m.Result != nil:
			got = workerFrame{req: m.Result.RequestID, k: w.k}
		}
		if got != w {
			t.Fatalf("event %d = %+v, want %+v (rejected %v)", i, got, w, tr.Rejected())
		}
	}
	if n := total(tr.Rejected()); n != 0 {
		t.Fatalf("Rejected() = %v", tr.Rejected())
	}
}

func TestChunksArriveBeforeTheirResult(t *testing.T) {
	env := fabrictest.NewEnv(t)
	tr := newTransport(t, env, "h1")
	sent := publishCalls(t, env, "h1", 50, 8)
	expectFrames(t, tr, sent)
}

func TestChunksWaitForAnAbsentHost(t *testing.T) {
	env := fabrictest.NewEnv(t)
	first := newTransport(t, env, "h1")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	sent := publishCalls(t, env, "h1", 3, 4)
	expectFrames(t, newTransport(t, env, "h1"), sent)
}
