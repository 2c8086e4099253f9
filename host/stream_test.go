package host

import (
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

func streamRuntime(t *testing.T, sp ToolStreamPolicy, attempts int) (*Runtime, *ManualClock, ExternalInvocation) {
	t.Helper()
	r, clock := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", Stream: streamDef(sp), MaxAttempts: attempts, Deadline: toolspec.Duration(time.Minute)})
	start(t, r, "text.remote", "x")
	return r, clock, claim(t, r)
}

func TestStreamBoundsDenyExceedingChunk(t *testing.T) {
	tests := []struct {
		name     string
		policy   ToolStreamPolicy
		redactor func(string) string
		accepted []string
		denied   string
		bound    string
	}{
		{"max chunks", NewToolStreamPolicy(2, 10, 100, 100), nil, []string{"a", "b"}, "c", "max_chunks"},
		{"max chunk bytes", NewToolStreamPolicy(5, 3, 100, 100), nil, []string{"abc"}, "abcd", "max_chunk_bytes"},
		{"max source bytes", NewToolStreamPolicy(5, 10, 5, 100), nil, []string{"abc"}, "abc", "max_source_bytes"},
		{"max released bytes", NewToolStreamPolicy(5, 10, 100, 6), func(s string) string { return s + s }, []string{"abc"}, "a", "max_released_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRuntime(t, Config{})
			register(t, r, toolspec.Spec{Name: "text.remote", Stream: streamDef(tt.policy)})
			if tt.redactor != nil {
				must(t, r.SetExternalStreamRedactor("text.remote", tt.redactor))
			}
			start(t, r, "text.remote", "x")
			inv := claim(t, r)
			for _, c := range tt.accepted {
				_, err := r.PushExternalToolChunk(inv.ID, c)
				must(t, err)
			}
			before, _ := r.Operation(inv.ID)
			_, err := r.PushExternalToolChunk(inv.ID, tt.denied)
			wantErr(t, err, ErrStreamLimitExceeded)
			if !strings.Contains(err.Error(), tt.bound) {
				t.Fatalf("err %v does not name %s", err, tt.bound)
			}
			after, _ := r.Operation(inv.ID)
			if before != after {
				t.Fatalf("denied chunk changed counters: %+v -> %+v", before, after)
			}
			ev := r.Audit()
			if last := ev[len(ev)-1]; last.Outcome != AuditStreamDenied || last.Bytes != len(tt.denied) {
				t.Fatalf("audit %+v", last)
			}
		})
	}
}

func TestStreamRedactorOutputIsReleased(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", Stream: &toolspec.StreamPolicy{MaxChunks: 32, MaxChunkBytes: 4096, MaxSourceBytes: 65536, MaxReleasedBytes: 65536}})
	must(t, r.SetExternalStreamRedactor("text.remote", func(s string) string {
		return strings.ReplaceAll(s, "internal-token", "[redacted]")
	}))
	start(t, r, "text.remote", "x")
	inv := claim(t, r)
	c, err := r.PushExternalToolChunk(inv.ID, "key=internal-token")
	must(t, err)
	want := ExternalToolStreamChunk{ID: inv.ID, Tool: "text.remote", Index: 1, Text: "key=[redacted]", SourceBytes: 18, ReleasedBytes: 14}
	if c != want {
		t.Fatalf("chunk %+v, want %+v", c, want)
	}
}

func TestRedactorAfterFirstStartRefused(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote", Stream: &toolspec.StreamPolicy{MaxChunks: 1, MaxChunkBytes: 1, MaxSourceBytes: 1, MaxReleasedBytes: 1}})
	register(t, r, toolspec.Spec{Name: "text.plain"})
	wantErr(t, r.SetExternalStreamRedactor("text.plain", strings.ToUpper), ErrStreamNotEnabled)
	wantErr(t, r.SetExternalStreamRedactor("text.none", strings.ToUpper), ErrUnknownTool)
	start(t, r, "text.remote", "x")
	wantErr(t, r.SetExternalStreamRedactor("text.remote", strings.ToUpper), ErrRedactorTooLate)
}

func TestChunkOutsideClaimRefused(t *testing.T) {
	sp := NewToolStreamPolicy(8, 8, 64, 64)
	tests := []struct {
		name    string
		prepare func(t *testing.T, r *Runtime, c *ManualClock, id ExternalToolID)
		claim   bool
		wantErr error
	}{
		{"before claim", func(*testing.T, *Runtime, *ManualClock, ExternalToolID) {}, false, ErrNotClaimed},
		{"after completion", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			_, err := r.CompleteExternalTool(id, Ok("done"))
			must(t, err)
		}, true, ErrWrongState},
		{"after cancel", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			_, err := r.CancelExternalTool(id)
			must(t, err)
		}, true, ErrWrongState},
		{"after expiry", func(t *testing.T, r *Runtime, c *ManualClock, _ ExternalToolID) {
			c.Advance(time.Minute)
			r.ExpireTimedOutTools()
		}, true, ErrWrongState},
		{"after deadline, before expiry", func(_ *testing.T, _ *Runtime, c *ManualClock, _ ExternalToolID) {
			c.Advance(time.Minute)
		}, true, ErrDeadlineElapsed},
		{"while cancellation requested", func(t *testing.T, r *Runtime, _ *ManualClock, id ExternalToolID) {
			_, err := r.RequestExternalToolCancellation(id)
			must(t, err)
		}, true, ErrCancellationRequested},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clock := newTestRuntime(t, Config{})
			register(t, r, toolspec.Spec{Name: "text.remote", Stream: streamDef(sp), Deadline: toolspec.Duration(time.Minute)})
			p := start(t, r, "text.remote", "x")
			if tt.claim {
				claim(t, r)
			}
			tt.prepare(t, r, clock, p.ID())
			before := snapshot(r)
			_, err := r.PushExternalToolChunk(p.ID(), "late")
			wantErr(t, err, tt.wantErr)
			if snapshot(r) != before {
				t.Fatal("refused chunk changed state")
			}
		})
	}
}

func TestStreamNotEnabledRefusesChunks(t *testing.T) {
	r, _ := newTestRuntime(t, Config{})
	register(t, r, toolspec.Spec{Name: "text.remote"})
	start(t, r, "text.remote", "x")
	_, err := r.PushExternalToolChunk(claim(t, r).ID, "x")
	wantErr(t, err, ErrStreamNotEnabled)
}

func TestStreamCountersSpanRetries(t *testing.T) {
	r, _, inv := streamRuntime(t, NewToolStreamPolicy(2, 10, 100, 100), 3)
	_, err := r.PushExternalToolChunk(inv.ID, "a")
	must(t, err)
	_, err = r.RetryExternalTool(inv.ID, RetryTransient)
	must(t, err)
	c, err := r.PushExternalToolChunk(inv.ID, "b")
	must(t, err)
	if c.Index != 2 {
		t.Fatalf("index %d after retry", c.Index)
	}
	_, err = r.PushExternalToolChunk(inv.ID, "c")
	wantErr(t, err, ErrStreamLimitExceeded)
}

func TestAuditHoldsByteCountsNotChunkText(t *testing.T) {
	r, _, inv := streamRuntime(t, NewToolStreamPolicy(2, 64, 100, 100), 1)
	const secret = "secret-progress-text"
	_, err := r.PushExternalToolChunk(inv.ID, secret)
	must(t, err)
	_, err = r.PushExternalToolChunk(inv.ID, strings.Repeat(secret, 4))
	wantErr(t, err, ErrStreamLimitExceeded)
	for _, e := range r.Audit() {
		if strings.Contains(e.Detail, "secret") {
			t.Fatalf("audit holds chunk text: %+v", e)
		}
		if e.Outcome == AuditStreamed && e.Bytes != len(secret) {
			t.Fatalf("streamed bytes %d", e.Bytes)
		}
	}
	wantOutcomes(t, r, inv.ID, "started", "claimed", "streamed", "stream_denied")
}
