package toolspec_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/splashfabric/splashfabric/toolspec"
)

// digestBase is the spec every digest case starts from.
func digestBase() toolspec.Spec {
	return toolspec.Spec{
		Name:         "demo.sum",
		Format:       toolspec.FormatJSON,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		OutputSchema: json.RawMessage(`{"type":"integer"}`),
		MaxAttempts:  2,
		Deadline:     toolspec.Duration(30 * time.Second),
		Stream:       &toolspec.StreamPolicy{MaxChunks: 10, MaxChunkBytes: 100, MaxSourceBytes: 1000, MaxReleasedBytes: 1000},
	}
}

func mustDigest(t *testing.T, s toolspec.Spec) string {
	t.Helper()
	tool, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return tool.Digest()
}

func TestDigest(t *testing.T) {
	base := mustDigest(t, digestBase())
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(base) {
		t.Fatalf("digest %q is not sha256:<64 hex>", base)
	}
	tests := []struct {
		name   string
		change func(*toolspec.Spec)
		same   bool
	}{
		{"schema keys reordered and spaced", func(s *toolspec.Spec) {
			s.InputSchema = json.RawMessage("{ \"required\": [\"a\",\"b\"],\n \"properties\": {\"b\":{\"type\":\"integer\"}, \"a\":{\"type\":\"integer\"}}, \"type\": \"object\" }")
		}, true},
		{"description", func(s *toolspec.Spec) { s.Description = "adds" }, true},
		{"redact", func(s *toolspec.Spec) { s.Redact = []toolspec.RedactRule{{Literal: "k", Replace: "x"}} }, true},
		{"process", func(s *toolspec.Spec) { s.Process = &toolspec.Process{Command: []string{"sum"}, Concurrency: 3} }, true},
		{"name", func(s *toolspec.Spec) { s.Name = "demo.add" }, false},
		{"idempotent", func(s *toolspec.Spec) { s.Idempotent = true }, false},
		{"cancellable", func(s *toolspec.Spec) { s.Cancellable = true }, false},
		{"attempts", func(s *toolspec.Spec) { s.MaxAttempts = 3 }, false},
		{"deadline", func(s *toolspec.Spec) { s.Deadline = toolspec.Duration(time.Minute) }, false},
		{"no deadline", func(s *toolspec.Spec) { s.Deadline = 0 }, false},
		{"output limit", func(s *toolspec.Spec) { s.MaxOutputBytes = 512 }, false},
		{"stream bound", func(s *toolspec.Spec) { s.Stream.MaxReleasedBytes = 999 }, false},
		{"no stream", func(s *toolspec.Spec) { s.Stream = nil }, false},
		{"input schema", func(s *toolspec.Spec) { s.InputSchema = json.RawMessage(`{"type":"object"}`) }, false},
		{"output schema", func(s *toolspec.Spec) { s.OutputSchema = json.RawMessage(`{"type":"number"}`) }, false},
		{"no output schema", func(s *toolspec.Spec) { s.OutputSchema = nil }, false},
		{"schema number spelling", func(s *toolspec.Spec) { s.OutputSchema = json.RawMessage(`{"type":"integer","maximum":1.0}`) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := digestBase()
			tt.change(&s)
			if got := mustDigest(t, s); (got == base) != tt.same {
				t.Fatalf("digest same=%v; want same=%v", got == base, tt.same)
			}
		})
	}
}

func TestDigestCoversDefaults(t *testing.T) {
	bare := toolspec.Spec{Name: "text.upper"}
	explicit := toolspec.Spec{Name: "text.upper", Format: toolspec.FormatText, MaxAttempts: 1, MaxOutputBytes: toolspec.DefaultMaxOutputBytes}
	if mustDigest(t, bare) != mustDigest(t, explicit) {
		t.Fatal("a default written out changes the digest")
	}
}

// TestDigestGolden pins the digest of one definition: hosts and workers of
// different builds compare digests, so the canonical form must not drift.
func TestDigestGolden(t *testing.T) {
	const want = "sha256:a908e79a5e807701fc8577145378e65f58f53934b0e8f45f1aa799ffb716b115"
	if got := mustDigest(t, digestBase()); got != want {
		t.Fatalf("digest %s; want %s (changing the canonical form breaks mixed-version fabrics)", got, want)
	}
}
