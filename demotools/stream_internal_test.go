package demotools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/workeragent"
)

// limitedSink refuses chunks past max the way workeragent.ChunkWriter does,
// and remembers what it accepted.
type limitedSink struct {
	max  int
	sent []string
	err  error // returned instead of accepting, when set
}

func (s *limitedSink) Write(text string) error {
	switch {
	case s.err != nil:
		return s.err
	case len(s.sent) >= s.max:
		return fmt.Errorf("%w: chunk %d", workeragent.ErrStreamLimitExceeded, len(s.sent)+1)
	}
	s.sent = append(s.sent, text)
	return nil
}

func TestStreamChunks(t *testing.T) {
	tests := []struct {
		name     string
		n, limit int
		wantSent []string
	}{
		{"one", 1, 32, []string{"chunk 1/1 token=internal-token"}},
		{"three", 3, 32, []string{"chunk 1/3", "chunk 2/3 token=internal-token", "chunk 3/3"}},
		{"four", 4, 32, []string{"chunk 1/4", "chunk 2/4 token=internal-token", "chunk 3/4", "chunk 4/4"}},
		{"stops at limit", 5, 2, []string{"chunk 1/5", "chunk 2/5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &limitedSink{max: tt.limit}
			got, err := streamChunks(t.Context(), s, tt.n)
			if err != nil {
				t.Fatalf("streamChunks: %v", err)
			}
			if got != len(tt.wantSent) || !slices.Equal(s.sent, tt.wantSent) {
				t.Fatalf("sent %d %q, want %q", got, s.sent, tt.wantSent)
			}
		})
	}
}

func TestStreamChunksStops(t *testing.T) {
	publish := errors.New("publish failed")
	tests := []struct {
		name    string
		sink    *limitedSink
		cancel  bool
		wantErr error
		perm    bool
	}{
		{"publish error retries", &limitedSink{max: 9, err: publish}, false, publish, false},
		{"not allowed is permanent", &limitedSink{max: 9, err: workeragent.ErrStreamNotAllowed}, false, workeragent.ErrStreamNotAllowed, true},
		{"cancelled context", &limitedSink{max: 9}, true, workeragent.ErrDraining, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if tt.cancel {
				cancel(workeragent.ErrDraining)
			}
			_, err := streamChunks(ctx, tt.sink, 3)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			var perm *workeragent.PermanentError
			if errors.As(err, &perm) != tt.perm {
				t.Fatalf("permanent = %v, want %v", !tt.perm, tt.perm)
			}
		})
	}
}

// TestStreamFitsPolicy keeps the longest stream the tool sends in full
// within its own host policy, secret included, so only the chunk count
// ever stops it.
func TestStreamFitsPolicy(t *testing.T) {
	s := &limitedSink{max: StreamMaxChunks}
	if _, err := streamChunks(t.Context(), s, StreamMaxChunks); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range s.sent {
		if len(c) > StreamMaxChunkBytes {
			t.Fatalf("chunk of %d bytes", len(c))
		}
		total += len(c)
	}
	if total > StreamMaxSourceBytes || total > StreamMaxReleasedBytes {
		t.Fatalf("%d bytes streamed", total)
	}
	if n := slices.IndexFunc(s.sent, func(c string) bool { return strings.Contains(c, Secret) }); n < 0 {
		t.Fatalf("no chunk carries the secret: %q", s.sent)
	}
}

// TestBuiltinsMatchTheCatalog pins the Go halves against catalog.yaml:
// every built-in has a definition, only demo.ledger (built by
// RegisterLedger) lacks a handler and is not idempotent, only demo.sleep
// is cancellable.
func TestBuiltinsMatchTheCatalog(t *testing.T) {
	for _, b := range builtins {
		def, ok := Definitions().Lookup(b.name)
		if !ok {
			t.Errorf("%s: not in catalog.yaml", b.name)
			continue
		}
		s := def.Spec()
		switch {
		case b.name == Ledger && (s.Idempotent || b.handler != nil):
			t.Errorf("%s: must be non-idempotent and built by RegisterLedger", b.name)
		case b.name != Ledger && (!s.Idempotent || b.handler == nil):
			t.Errorf("%s: pure tool must be idempotent with a handler", b.name)
		case s.Cancellable != (b.name == Sleep):
			t.Errorf("%s: cancellable = %v", b.name, s.Cancellable)
		case b.concurrency < 1:
			t.Errorf("%s: concurrency %d", b.name, b.concurrency)
		case s.Description == "":
			t.Errorf("%s: no description", b.name)
		}
	}
	if got, want := Definitions().Len(), len(builtins); got != want {
		t.Errorf("catalog.yaml has %d tools, want the %d built-ins", got, want)
	}
}
