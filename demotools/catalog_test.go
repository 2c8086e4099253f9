package demotools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/demotools"
	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/protocol"
	"github.com/splashfabric/splashfabric/workeragent"
)

func newCatalogRuntime(t *testing.T) *host.Runtime {
	t.Helper()
	rt := host.NewRuntime(host.Config{Clock: host.NewManualClock(time.Unix(1_700_000_000, 0))})
	if err := demotools.Catalog(rt); err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	return rt
}

// claim starts tool with input and claims the invocation, as the host's
// loop and a worker would.
func claim(t *testing.T, rt *host.Runtime, tool, input string) (*host.Promise, host.ExternalInvocation) {
	t.Helper()
	p, err := rt.Start(tool, input)
	if err != nil {
		t.Fatalf("Start(%q): %v", tool, err)
	}
	inv, ok := rt.ClaimNextExternalTool()
	if !ok || inv.ID != p.ID() {
		t.Fatalf("claim %q: %+v %v", tool, inv, ok)
	}
	return p, inv
}

// callOf builds the worker's view of a host invocation.
func callOf(inv host.ExternalInvocation) *workeragent.Call {
	in := protocol.TextPayload(inv.Input)
	if inv.Format == host.FormatJSON {
		in = protocol.JSONPayload([]byte(inv.Input))
	}
	return &workeragent.Call{
		Tool: inv.Tool, RequestID: inv.ID.String(), IdempotencyKey: inv.IdempotencyKey,
		Input: in, CallIndex: inv.CallIndex, Attempt: inv.Attempt, AttemptLimit: inv.AttemptLimit,
		OutputLimit: inv.OutputLimit, Stream: &workeragent.ChunkWriter{},
	}
}

func TestCatalogPolicies(t *testing.T) {
	stream := host.NewToolStreamPolicy(demotools.StreamMaxChunks, demotools.StreamMaxChunkBytes,
		demotools.StreamMaxSourceBytes, demotools.StreamMaxReleasedBytes)
	tests := []struct {
		tool         string
		attemptLimit uint32
		deadline     time.Duration
		stream       *host.ToolStreamPolicy
	}{
		{demotools.Echo, 1, 0, nil},
		{demotools.Upper, 1, 0, nil},
		{demotools.Sleep, 1, demotools.SleepDeadline, nil},
		{demotools.Flaky, demotools.RetryAttempts, 0, nil},
		{demotools.RateLimited, demotools.RetryAttempts, 0, nil},
		{demotools.Stream, 1, 0, &stream},
		{demotools.Ledger, 1, 0, nil},
	}
	rt := newCatalogRuntime(t)
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			_, inv := claim(t, rt, tt.tool, "1")
			if inv.AttemptLimit != tt.attemptLimit {
				t.Errorf("attempt limit %d, want %d", inv.AttemptLimit, tt.attemptLimit)
			}
			if inv.HasDeadline != (tt.deadline > 0) || inv.RemainingDeadline != tt.deadline {
				t.Errorf("deadline %v (%v), want %v", inv.RemainingDeadline, inv.HasDeadline, tt.deadline)
			}
			if (inv.Stream == nil) != (tt.stream == nil) || (inv.Stream != nil && *inv.Stream != *tt.stream) {
				t.Errorf("stream %+v, want %+v", inv.Stream, tt.stream)
			}
			if _, err := rt.CompleteExternalTool(inv.ID, host.Ok("done")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCatalogTwice(t *testing.T) {
	rt := newCatalogRuntime(t)
	if err := demotools.Catalog(rt); !errors.Is(err, host.ErrDuplicateTool) {
		t.Fatalf("second Catalog: %v", err)
	}
}

// TestCatalogJSONSum runs demo.json.sum through the host's contract: the
// schemas accept what the handler reads and writes and refuse the rest.
func TestCatalogJSONSum(t *testing.T) {
	rt := newCatalogRuntime(t)
	p, err := rt.StartJSON(demotools.JSONSum, []byte(`{"numbers":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	inv, ok := rt.ClaimNextExternalTool()
	if !ok || inv.Format != host.FormatJSON {
		t.Fatalf("claim: %+v %v", inv, ok)
	}
	h, err := demotools.Handler(inv.Tool)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.HandleCall(t.Context(), callOf(inv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CompleteExternalTool(inv.ID, host.Ok(string(out.Payload().JSON))); err != nil {
		t.Fatal(err)
	}
	s, ok := p.Settled()
	if !ok || s.Err != nil || s.Output != `{"sum":6}` {
		t.Fatalf("settled %+v %v", s, ok)
	}

	for _, in := range []string{`{"numbers":"1,2"}`, `{}`, `{"numbers":[1],"extra":true}`, `[1,2]`} {
		if _, err := rt.StartJSON(demotools.JSONSum, []byte(in)); !errors.Is(err, host.ErrInvalidInput) {
			t.Errorf("input %s: %v, want ErrInvalidInput", in, err)
		}
	}

	p, err = rt.StartJSON(demotools.JSONSum, []byte(`{"numbers":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	inv, _ = rt.ClaimNextExternalTool()
	if _, err := rt.CompleteExternalTool(inv.ID, host.Ok(`{"total":0}`)); err != nil {
		t.Fatal(err)
	}
	if s, ok := p.Settled(); !ok || !errors.Is(s.Err, host.ErrInvalidOutput) {
		t.Fatalf("off-schema output settled %+v %v", s, ok)
	}
}

// TestCatalogRedacts checks the chunk that carries the secret is released
// redacted and the others unchanged.
func TestCatalogRedacts(t *testing.T) {
	rt := newCatalogRuntime(t)
	_, inv := claim(t, rt, demotools.Stream, "3")
	for i, text := range []string{"chunk 1/3", "chunk 2/3 token=" + demotools.Secret, "chunk 3/3"} {
		c, err := rt.PushExternalToolChunk(inv.ID, text)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(text, demotools.Secret, demotools.Redacted)
		if c.Index != i+1 || c.Text != want {
			t.Fatalf("chunk %d released %+v, want %q", i+1, c, want)
		}
	}
}
