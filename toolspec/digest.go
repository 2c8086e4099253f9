package toolspec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// digestVersion starts every digested document, so that a future change
// of what the digest covers can never collide with today's digests.
const digestVersion = "splash-toolspec-digest-v1\x00"

// Digest returns "sha256:" and 64 hex digits identifying the tool's
// contract: what a host and a worker must agree on for a call to mean the
// same thing on both sides. A host carries it on the wire and a worker
// compares it with its own, instead of the two keeping their definitions
// equal by hand.
//
// It covers, after defaults are filled, the name, the format, the input
// and output schemas (canonicalised, so key order and whitespace do not
// matter, though 1 and 1.0 still differ), idempotent, cancellable,
// max_attempts, deadline, max_output_bytes and stream.
//
// It deliberately leaves out the description (documentation changes
// nothing), redact (only the host applies it, to what it releases) and
// process (only the worker reads it: it says how the tool runs, not what
// it does). Either side may change those without the other noticing, and
// should be able to.
func (t *Tool) Digest() string { return t.digest }

// digestDoc is the canonical form the digest is computed over. Its field
// order is fixed by the struct; map keys inside schemas are sorted by
// encoding/json.
type digestDoc struct {
	Name           string        `json:"name"`
	Format         Format        `json:"format"`
	InputSchema    any           `json:"input_schema"`
	OutputSchema   any           `json:"output_schema"`
	Idempotent     bool          `json:"idempotent"`
	Cancellable    bool          `json:"cancellable"`
	MaxAttempts    int           `json:"max_attempts"`
	DeadlineNanos  int64         `json:"deadline_ns"`
	MaxOutputBytes int           `json:"max_output_bytes"`
	Stream         *StreamPolicy `json:"stream"`
}

// digest hashes a validated Spec with its defaults filled.
func digest(s Spec) string {
	doc := digestDoc{
		Name:           s.Name,
		Format:         s.Format,
		InputSchema:    canonicalJSON(s.InputSchema),
		OutputSchema:   canonicalJSON(s.OutputSchema),
		Idempotent:     s.Idempotent,
		Cancellable:    s.Cancellable,
		MaxAttempts:    s.MaxAttempts,
		DeadlineNanos:  int64(s.Deadline),
		MaxOutputBytes: s.MaxOutputBytes,
		Stream:         s.Stream,
	}
	var buf bytes.Buffer
	buf.WriteString(digestVersion)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		// Every field is a plain value or decoded JSON; encoding cannot
		// fail for a validated Spec.
		panic("toolspec: digest: " + err.Error())
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalJSON decodes raw keeping numbers as written, so that encoding
// it again sorts keys and drops whitespace without rounding any number.
func canonicalJSON(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic("toolspec: digest: schema was validated but does not decode: " + err.Error())
	}
	return v
}
