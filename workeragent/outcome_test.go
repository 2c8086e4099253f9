package workeragent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/protocol"
)

func TestClassify(t *testing.T) {
	boom := errors.New("boom")
	invalidJSON := "invalid handler output: " + protocol.JSONPayload([]byte(`{`)).Validate().Error()
	tests := []struct {
		name        string
		out         Output
		err         error
		cancelAsked bool
		draining    bool
		want        verdict
	}{
		{name: "text result", out: Result("hi"), want: verdict{kind: verdictSucceeded, payload: protocol.TextPayload("hi")}},
		{name: "zero output is empty text", want: verdict{kind: verdictSucceeded, payload: protocol.TextPayload("")}},
		{name: "json result", out: JSONResult([]byte(`{"a":1}`)), want: verdict{kind: verdictSucceeded, payload: protocol.JSONPayload([]byte(`{"a":1}`))}},
		{name: "invalid json fails", out: JSONResult([]byte(`{`)), want: verdict{kind: verdictFailed, err: invalidJSON}},
		{name: "retryable", err: Retryable(boom), want: verdict{kind: verdictRetryTransient, err: "boom"}},
		{name: "wrapped retryable", err: fmt.Errorf("ctx: %w", Retryable(boom)), want: verdict{kind: verdictRetryTransient, err: "boom"}},
		{name: "rate limited", err: RateLimited(300*time.Millisecond, boom), want: verdict{kind: verdictRetryRateLimited, err: "boom", retryAfter: 300 * time.Millisecond}},
		{name: "negative retry-after clamps", err: RateLimited(-time.Second, boom), want: verdict{kind: verdictRetryRateLimited, err: "boom"}},
		{name: "permanent", err: Permanent(boom), want: verdict{kind: verdictFailed, err: "boom"}},
		{name: "plain error is transient", err: boom, want: verdict{kind: verdictRetryTransient, err: "boom"}},
		{name: "cancel acknowledged", err: CancelAcknowledged(), cancelAsked: true, want: verdict{kind: verdictCancelled}},
		{name: "cancel acknowledged unasked", err: CancelAcknowledged(), want: verdict{kind: verdictFailed, err: "cancellation acknowledged without a request"}},
		{name: "draining error gives back", err: context.Canceled, draining: true, want: verdict{kind: verdictGiveBack}},
		{name: "draining retryable gives back", err: Retryable(boom), draining: true, want: verdict{kind: verdictGiveBack}},
		{name: "draining permanent is answered", err: Permanent(boom), draining: true, want: verdict{kind: verdictFailed, err: "boom"}},
		{name: "draining success is answered", out: Result("ok"), draining: true, want: verdict{kind: verdictSucceeded, payload: protocol.TextPayload("ok")}},
		{name: "indeterminate", err: Indeterminate(boom), want: verdict{kind: verdictIndeterminate, err: "boom"}},
		{name: "draining indeterminate is answered, never handed back", err: Indeterminate(boom), draining: true, want: verdict{kind: verdictIndeterminate, err: "boom"}},
		{name: "hand back", err: HandBack(boom), want: verdict{kind: verdictGiveBack, err: "boom"}},
		{name: "context error after a cancel request acknowledges", err: context.Canceled, cancelAsked: true, want: verdict{kind: verdictCancelled}},
		{name: "wrapped cause after a cancel request acknowledges", err: fmt.Errorf("stopped: %w", ErrCancelRequested), cancelAsked: true, want: verdict{kind: verdictCancelled}},
		{name: "context error without a request is transient", err: context.Canceled, want: verdict{kind: verdictRetryTransient, err: "context canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.out, tt.err, tt.cancelAsked, tt.draining)
			if got.kind != tt.want.kind || got.err != tt.want.err || got.retryAfter != tt.want.retryAfter ||
				got.payload.Format != tt.want.payload.Format || got.payload.Text != tt.want.payload.Text ||
				string(got.payload.JSON) != string(tt.want.payload.JSON) {
				t.Fatalf("classify = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChunkWriterLimits(t *testing.T) {
	tests := []struct {
		name    string
		limits  *protocol.StreamLimits
		writes  []string
		wantErr []error // per write
	}{
		{name: "no policy", writes: []string{"a"}, wantErr: []error{ErrStreamNotAllowed}},
		{
			name:    "chunk count",
			limits:  &protocol.StreamLimits{MaxChunks: 2, MaxChunkBytes: 10, MaxSourceBytes: 100, MaxReleasedBytes: 100},
			writes:  []string{"a", "b", "c"},
			wantErr: []error{nil, nil, ErrStreamLimitExceeded},
		},
		{
			name:    "chunk bytes, then stopped for good",
			limits:  &protocol.StreamLimits{MaxChunks: 5, MaxChunkBytes: 3, MaxSourceBytes: 100, MaxReleasedBytes: 100},
			writes:  []string{"abc", "abcd", "a"},
			wantErr: []error{nil, ErrStreamLimitExceeded, ErrStreamLimitExceeded},
		},
		{
			name:    "total bytes",
			limits:  &protocol.StreamLimits{MaxChunks: 5, MaxChunkBytes: 4, MaxSourceBytes: 6, MaxReleasedBytes: 100},
			writes:  []string{"abcd", "ab", "a"},
			wantErr: []error{nil, nil, ErrStreamLimitExceeded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sent []protocol.Chunk
			var frames []uint32
			w := newChunkWriter(tt.limits, func(c protocol.Chunk, k uint32) error {
				sent = append(sent, c)
				frames = append(frames, k)
				return nil
			})
			ok := 0
			for i, s := range tt.writes {
				err := w.Write(s)
				if !errors.Is(err, tt.wantErr[i]) || (tt.wantErr[i] == nil && err != nil) {
					t.Fatalf("write %d: err = %v, want %v", i, err, tt.wantErr[i])
				}
				if err == nil {
					ok++
				}
			}
			if len(sent) != ok || w.Chunks() != ok {
				t.Fatalf("sent %d chunks, want %d", len(sent), ok)
			}
			for i, c := range sent {
				if c.Sequence != uint64(i+1) || frames[i] != uint32(i+1) {
					t.Fatalf("chunk %d: sequence %d frame %d", i, c.Sequence, frames[i])
				}
			}
			if k := w.close(); k != uint32(ok) {
				t.Fatalf("close = %d, want %d", k, ok)
			}
			if err := w.Write("late"); !errors.Is(err, ErrCallFinished) {
				t.Fatalf("write after close: %v", err)
			}
		})
	}
}

// A later attempt's writer starts from what earlier attempts used: the
// bounds span the operation, as the host's do. Its chunks go on numbering
// after theirs.
func TestChunkWriterBoundsSpanAttempts(t *testing.T) {
	limits := &protocol.StreamLimits{MaxChunks: 4, MaxChunkBytes: 10, MaxSourceBytes: 8, MaxReleasedBytes: 9,
		UsedChunks: 2, UsedSourceBytes: 5, UsedReleasedBytes: 7}
	var sent []protocol.Chunk
	w := newChunkWriter(limits, func(c protocol.Chunk, _ uint32) error { sent = append(sent, c); return nil })
	if err := w.Write("ab"); err != nil {
		t.Fatalf("first chunk of the attempt: %v", err)
	}
	// 7 released by earlier attempts + 2 + 1 > 9.
	if err := w.Write("c"); !errors.Is(err, ErrStreamLimitExceeded) {
		t.Fatalf("past the released bound left by earlier attempts: %v", err)
	}
	if len(sent) != 1 || sent[0].Sequence != 3 || w.Chunks() != 3 {
		t.Fatalf("sent %+v, chunks %d; want chunk 3 of the operation", sent, w.Chunks())
	}
}

// A denial from the host stops the writer, saying why.
func TestChunkWriterDenied(t *testing.T) {
	w := newChunkWriter(&protocol.StreamLimits{MaxChunks: 100, MaxChunkBytes: 100, MaxSourceBytes: 1000, MaxReleasedBytes: 1000},
		func(protocol.Chunk, uint32) error { return nil })
	if err := w.Write("a"); err != nil {
		t.Fatal(err)
	}
	w.deny("released bytes 1001 of at most 1000")
	err := w.Write("b")
	if !errors.Is(err, ErrStreamLimitExceeded) || !strings.Contains(err.Error(), "the host refused a chunk") {
		t.Fatalf("write after the host's denial: %v", err)
	}
}
