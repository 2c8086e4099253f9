package workeragent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/fabric"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

func streamHandler(texts ...string) workeragent.Handler {
	return workeragent.HandlerFunc(func(_ context.Context, c *workeragent.Call) (workeragent.Output, error) {
		for _, s := range texts {
			_ = c.Stream.Write(s)
		}
		return workeragent.Result("done"), nil
	})
}

// The stream, not the arrival of two subscriptions, orders a call's frames:
// its chunks are stored before its result, each with its own message id.
func TestChunksStoredOnEventsStreamBeforeResult(t *testing.T) {
	e := newEnv(t)
	const n = 5
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("part %d", i+1)
	}
	a := e.startAgent("w1", func(a *workeragent.Agent) { must(t, a.HandleTool(tooltest.Text(t, "stream"), streamHandler(texts...))) })
	inv := e.newInvoke("stream", "go")
	inv.Stream = &protocol.StreamLimits{MaxChunks: n, MaxChunkBytes: 64, MaxSourceBytes: 1024, MaxReleasedBytes: 1024}
	e.publish(inv)
	if res := e.result(t); res.Status != protocol.ResultSucceeded {
		t.Fatalf("result = %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	s, err := e.js.Stream(ctx, fabric.StreamEvents)
	must(t, err)
	for seq := uint64(1); seq <= n+1; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		must(t, err)
		msg, wseq, err := e.codec.OpenWorker(raw.Header, raw.Data)
		must(t, err)
		_, k := fabric.SplitWorkerSeq(wseq)
		wantID := e.codec.ChunkMsgID(inv.RequestID, 1, k)
		if seq == n+1 {
			wantID = e.codec.EventMsgID(inv.RequestID, 1, protocol.KindResult)
			if msg.Result == nil {
				t.Fatalf("stream message %d = %+v, want the result", seq, msg)
			}
		} else if msg.Chunk == nil || msg.Chunk.Sequence != seq || msg.Chunk.Text != texts[seq-1] {
			t.Fatalf("stream message %d = %+v, want chunk %d", seq, msg, seq)
		}
		if raw.Subject != fabric.EventsSubject(e.hostID, inv.Tool) || raw.Header.Get(fabric.HeaderMsgID) != wantID || raw.Header.Get(fabric.HeaderWorker) != "w1" || raw.Header.Get(fabric.HeaderTool) != inv.Tool {
			t.Fatalf("stream message %d: subject %q headers %v, want id %q", seq, raw.Subject, raw.Header, wantID)
		}
	}
	if got := a.Stats().ChunkPublishErrors; got != 0 {
		t.Fatalf("ChunkPublishErrors = %d", got)
	}
}

// A chunk the stream refuses is counted and skipped; the call still
// answers, and the host sees the gap in the chunk sequence.
func TestChunkPublishFailureIsCountedNotRetried(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", 4096)
	a := e.startAgent("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(tooltest.Text(t, "stream"), streamHandler("small", big, "after")))
	})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.DefaultTimeout)
	defer cancel()
	// Shrink the stream's message bound below the big chunk's frame but
	// above every other frame of the call.
	s, err := e.js.Stream(ctx, fabric.StreamEvents)
	must(t, err)
	scfg := s.CachedInfo().Config
	scfg.MaxMsgSize = 2048
	_, err = e.js.UpdateStream(ctx, scfg)
	must(t, err)

	inv := e.newInvoke("stream", "go")
	inv.Stream = &protocol.StreamLimits{MaxChunks: 3, MaxChunkBytes: 8192, MaxSourceBytes: 1 << 16, MaxReleasedBytes: 1 << 16}
	e.publish(inv)
	for _, want := range []protocol.Chunk{{Sequence: 1, Text: "small"}, {Sequence: 3, Text: "after"}} {
		c := testwait.Receive(t, 0, "chunk", e.chunks)
		if c.Sequence != want.Sequence || c.Text != want.Text {
			t.Fatalf("chunk = %+v, want sequence %d %q", c, want.Sequence, want.Text)
		}
	}
	if res := e.result(t); res.Status != protocol.ResultSucceeded {
		t.Fatalf("result = %+v", res)
	}
	testwait.Until(t, 0, "the refused chunk counted", func() bool { return a.Stats().ChunkPublishErrors == 1 })
}
