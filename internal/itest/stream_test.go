package itest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/toolspec"
	"github.com/splashfabric/splashfabric/workeragent"
)

// Scenario 4: a worker streams until the host's limit; the host releases
// the chunks redacted and in order, the worker's writer reports the limit
// instead of sending more, and the final result still arrives.
func TestStreamingStopsAtLimitAndResultArrives(t *testing.T) {
	const maxChunks = 3
	ht := tool("it.stream")
	ht.Stream = &toolspec.StreamPolicy{MaxChunks: maxChunks, MaxChunkBytes: 64, MaxSourceBytes: 1000, MaxReleasedBytes: 1000}
	ht.Redact = []toolspec.RedactRule{{Literal: "secret", Replace: "[redacted]"}}
	c := newCluster(t, options{tools: []toolspec.Spec{ht}})
	fx := newEffects()
	limitErr := make(chan error, 1)
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.stream"), counting(fx, func(_ context.Context, call *workeragent.Call) (workeragent.Output, error) {
			sent := 0
			for i := 1; ; i++ {
				if err := call.Stream.Write(fmt.Sprintf("part %d secret", i)); err != nil {
					limitErr <- err
					break
				}
				sent++
			}
			// The result follows the chunks at once: they share the
			// events stream, so the host still releases every chunk first.
			return workeragent.Result(fmt.Sprintf("final after %d", sent)), nil
		})))
	})
	id := c.submit(`await tool.start("it.stream", "go")`)
	wantCompleted(t, c.wait(id, 0), fmt.Sprintf("final after %d", maxChunks))
	if err := testwait.Receive(t, 0, "the writer's limit error", limitErr); !errors.Is(err, workeragent.ErrStreamLimitExceeded) {
		t.Fatalf("write past the limit = %v, want ErrStreamLimitExceeded", err)
	}
	chunks := c.obs.chunksOf(id)
	if len(chunks) != maxChunks {
		t.Fatalf("host released %d chunks, want %d", len(chunks), maxChunks)
	}
	for i, ch := range chunks {
		want := fmt.Sprintf("part %d [redacted]", i+1)
		if ch.Index != i+1 || ch.Text != want {
			t.Errorf("chunk %d = #%d %q, want #%d %q", i, ch.Index, ch.Text, i+1, want)
		}
	}
	_, audit := c.status(id)
	if hasOutcome(audit, host.AuditStreamDenied) {
		t.Errorf("the host denied a chunk; the worker should have stopped first: %+v", audit)
	}
	if fx.count() != 1 {
		t.Errorf("handler ran %d times, want 1", fx.count())
	}
}

// When redaction grows what a worker streams past the released bound,
// which the worker cannot count, the host refuses a chunk and tells the
// worker running the attempt: its next Write fails, saying so, instead of
// streaming on into refusals.
func TestStreamDenialReachesTheWorker(t *testing.T) {
	ht := tool("it.expand")
	ht.Stream = &toolspec.StreamPolicy{MaxChunks: 1000, MaxChunkBytes: 64, MaxSourceBytes: 100000, MaxReleasedBytes: 50}
	// Each one-byte chunk is released as 16 bytes.
	ht.Redact = []toolspec.RedactRule{{Literal: "s", Replace: "[secret-removed]"}}
	c := newCluster(t, options{tools: []toolspec.Spec{ht}})
	stopped := make(chan error, 1)
	c.startWorker("w1", func(a *workeragent.Agent) {
		must(t, a.HandleTool(c.tool("it.expand"), workeragent.HandlerFunc(func(ctx context.Context, call *workeragent.Call) (workeragent.Output, error) {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for range 1000 {
				if err := call.Stream.Write("s"); err != nil {
					stopped <- err
					return workeragent.Result("stopped"), nil
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					return workeragent.Output{}, ctx.Err()
				}
			}
			stopped <- nil
			return workeragent.Result("wrote everything"), nil
		})))
	})
	id := c.submit(`await tool.start("it.expand", "go")`)
	wantCompleted(t, c.wait(id, 0), "stopped")
	err := testwait.Receive(t, 0, "the handler to stop streaming", stopped)
	if !errors.Is(err, workeragent.ErrStreamLimitExceeded) || !strings.Contains(err.Error(), "the host refused a chunk") {
		t.Fatalf("the handler stopped with %v, want the host's refusal", err)
	}
}
