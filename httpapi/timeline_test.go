package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/httpapi"
	"github.com/splashfabric/splashfabric/httpapi/apiwire"
	"github.com/splashfabric/splashfabric/internal/testwait"
	"github.com/splashfabric/splashfabric/internal/tooltest"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/toolspec"
)

// A call retried once, streaming, then cancelled, drawn as a timeline:
// its claim, both attempts (published, first heard of, ended), the
// chunks, the retry and the cancellation request as marks, and its end.
func TestTimelineOfRetriedStreamedCancelledCall(t *testing.T) {
	tr := hostloop.NewMemTransport(64)
	timelines := httpapi.NewTimelines(httpapi.TimelineConfig{})
	loop, err := hostloop.StartLoop(hostloop.LoopConfig{
		Transport: tr, HostID: "h1", RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond,
		Catalog:  tooltest.Catalog[*host.Runtime](t, toolspec.Spec{Name: "t", MaxAttempts: 2, Stream: &toolspec.StreamPolicy{MaxChunks: 8, MaxChunkBytes: 1024, MaxSourceBytes: 8192, MaxReleasedBytes: 8192}}),
		Observer: timelines,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Stop()
	srv := httptest.NewServer(httpapi.New(loop, httpapi.Config{DisableAuth: true, Timelines: timelines}))
	defer srv.Close()
	ctx := context.Background()
	st, err := loop.Submit(ctx, hostloop.Submission{Source: `try { await tool.start("t", "in") } catch (e) { return "ended" }`})
	if err != nil {
		t.Fatal(err)
	}
	first := testwait.Receive(t, 0, "attempt 1", tr.Invocations())
	tr.Reply(protocol.Result{RequestID: first.RequestID, Attempt: 1, Status: protocol.ResultRetryTransient, Error: "busy"})
	second := testwait.Receive(t, 0, "attempt 2", tr.Invocations())
	for i := 1; i <= 2; i++ {
		tr.Message(protocol.ChunkMessage(protocol.Chunk{RequestID: second.RequestID, Sequence: uint64(i), Text: "chunk text"}))
	}
	get := func() apiwire.Timeline {
		resp, err := http.Get(srv.URL + "/v1/sessions/" + string(st.ID) + "/timeline")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var tl apiwire.Timeline
		if err := json.NewDecoder(resp.Body).Decode(&tl); err != nil {
			t.Fatal(err)
		}
		return tl
	}
	testwait.Until(t, 0, "two chunks on the timeline", func() bool {
		tl := get()
		return len(tl.Operations) == 1 && len(tl.Operations[0].Marks) == 3
	})
	if err := loop.Cancel(ctx, st.ID, 1); err != nil {
		t.Fatal(err)
	}
	tr.Message(protocol.CancelReplyMessage(protocol.CancelReply{RequestID: second.RequestID, Attempt: 2, Disposition: protocol.CancelAcknowledged}))
	var tl apiwire.Timeline
	testwait.Until(t, 0, "the session's end", func() bool { tl = get(); return tl.Ended != nil })

	if !tl.Recorded || tl.State != "completed" || len(tl.Operations) != 1 {
		t.Fatalf("timeline %+v", tl)
	}
	op := tl.Operations[0]
	if op.ID != "op-1" || op.Tool != "t" || op.Outcome != "cancelled" || op.Ended == nil || op.Ended.Before(op.Claimed) {
		t.Errorf("operation %+v", op)
	}
	if len(op.Attempts) != 2 {
		t.Fatalf("attempts %+v", op.Attempts)
	}
	for i, a := range op.Attempts {
		if a.Attempt != uint32(i+1) || a.Published == nil || a.FirstFrame == nil || a.Ended == nil || a.FirstFrame.Before(*a.Published) || a.Ended.Before(*a.FirstFrame) {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
	if op.Attempts[0].Outcome != "retry" || op.Attempts[1].Outcome != "cancelled" || op.Attempts[1].Worker != "w1" {
		t.Errorf("attempt outcomes %q, %q (worker %q)", op.Attempts[0].Outcome, op.Attempts[1].Outcome, op.Attempts[1].Worker)
	}
	var kinds []string
	for _, m := range op.Marks {
		kinds = append(kinds, m.Kind)
		if m.Kind == "chunk" && (m.Bytes != len("chunk text") || m.Attempt != 2) {
			t.Errorf("chunk mark %+v", m)
		}
	}
	if want := []string{"retry_scheduled", "chunk", "chunk", "cancellation_requested"}; len(kinds) != len(want) || kinds[0] != want[0] || kinds[3] != want[3] {
		t.Errorf("marks %v, want %v", kinds, want)
	}
}
