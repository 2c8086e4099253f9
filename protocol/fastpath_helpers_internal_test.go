package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// sentinels lists every error class of errors.go, for comparing two errors
// by the classes they match rather than by their text.
var sentinels = []error{ErrInvalidKey, ErrInvalidSession, ErrWrongRole, ErrBadTag, ErrSequence,
	ErrMalformedFrame, ErrFrameTooLarge, ErrInvalidMessage, ErrInvalidToolName}

// errorClasses returns which sentinels err matches, as a bit set.
func errorClasses(err error) uint {
	var set uint
	for i, s := range sentinels {
		if errors.Is(err, s) {
			set |= 1 << i
		}
	}
	return set
}

// committedCorpus returns the inputs of testdata/fuzz/FuzzParseJSONLine,
// which are the cases the fast paths most need to agree on.
func committedCorpus(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParseJSONLine", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed corpus: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(lines) != 2 || string(lines[0]) != "go test fuzz v1" {
			t.Fatalf("%s: not a one-value corpus file", name)
		}
		lit, ok := bytes.CutPrefix(lines[1], []byte("[]byte("))
		if lit, ok = bytes.CutSuffix(lit, []byte(")")); !ok {
			t.Fatalf("%s: not a []byte value", name)
		}
		s, err := strconv.Unquote(string(lit))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, []byte(s))
	}
	return out
}

// fullMessages returns one message of every kind with every field set,
// including the optional ones, so that its encoding spells every key the
// fast path must know.
func fullMessages() []WorkerMessage {
	text := TextPayload("line one\nline \"two\" <&> ✓ \U0001F600")
	data := JSONPayload(json.RawMessage(`{"a":[1,-2.5e3,true,false,null,"s\u00e9"],"b":{}}`))
	// Every field is set, even where Validate would refuse the mix: the
	// fast path decodes before validation, and must know every key.
	text.JSON = json.RawMessage(`[]`)
	data.Text = "also text"
	return []WorkerMessage{
		InvokeMessage(Invoke{RequestID: "req-1", Tool: "text.remote", Input: text, CallIndex: 1<<64 - 1,
			Attempt: 2, AttemptLimit: 1<<32 - 1, IdempotencyKey: "idem-1", OutputLimit: 1 << 40,
			Stream: &StreamLimits{MaxChunks: 1, MaxChunkBytes: 2, MaxSourceBytes: 3, MaxReleasedBytes: -4,
				UsedChunks: 5, UsedSourceBytes: 6, UsedReleasedBytes: 7},
			DeadlineMillis: -1 << 63, Contract: &Contract{Digest: "sha256:00", Idempotent: true, Cancellable: true}}),
		CancelMessage(Cancel{RequestID: "req-1", Tool: "text.remote", Attempt: 1, IdempotencyKey: "idem-1"}),
		ChunkMessage(Chunk{RequestID: "req-1", Sequence: 7, Text: "\x00\x1f\u2028\u2029"}),
		ResultMessage(Result{RequestID: "req-1", Attempt: 3, Status: ResultRetryRateLimited, Payload: &data,
			Error: "slow down", RetryAfterMillis: 1500}),
		CancelReplyMessage(CancelReply{RequestID: "req-1", Attempt: 1, Disposition: CancelUnsupported}),
		ReconcileMessage(OperationReconcileRequest{SessionID: "s", RequestID: "r", Tool: "t", OperationKey: "k"}),
		StreamDeniedMessage(StreamDenied{RequestID: "req-1", Tool: "text.remote", Attempt: 2, Reason: "chunk 33 of at most 32"}),
		ReconciledMessage(OperationReconcileResult{SessionID: "s", RequestID: "r", Tool: "t", OperationKey: "k",
			Status: OperationStatus{State: OperationFailed, Payload: &text, Error: "gone"}}),
	}
}

// sealedLines returns a line for every message of fullMessages, correctly
// tagged and as ToJSONLine writes it. The tag is computed directly because
// those messages mix payloads that Seal's Validate would refuse.
func sealedLines(t testing.TB) [][]byte {
	t.Helper()
	s := NewSigner(SessionKeyFromArray([AuthTagBytes]byte{7}))
	var out [][]byte
	for i, m := range fullMessages() {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		f := Frame{SessionID: "worker-1", Role: RoleHost, Sequence: uint64(i + 1), Message: raw}
		f.Tag = hex.EncodeToString(s.tag(f.SessionID, f.Role, f.Sequence, f.Message))
		line, err := f.ToJSONLine()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	return out
}
