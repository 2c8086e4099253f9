package workflow

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/splashfabric/splashfabric/host"
)

// Entry is one record of a ledger: exactly one of Submitted, Prepared and
// Applied is set. At is the time the runtime saw when it took the entry.
type Entry struct {
	At        time.Time  `json:"at"`
	Submitted *Submitted `json:"submitted,omitempty"`
	Prepared  *Prepared  `json:"prepared,omitempty"`
	Applied   *Applied   `json:"applied,omitempty"`
}

// Submitted opens a ledger: everything a fresh runtime needs to start the
// script exactly as the first run did.
type Submitted struct {
	Source string `json:"source"`
	// Grants and ToolGrants are the session's capabilities and tool
	// patterns. Nil and empty differ (the host's defaults, or every
	// tool; nothing), so an empty list is kept as [] and replays as
	// nothing.
	Grants          []string      `json:"grants,omitzero"`
	ToolGrants      []string      `json:"tool_grants,omitzero"`
	ToolCallBudget  int           `json:"tool_call_budget,omitempty"`
	MaxPending      int           `json:"max_pending,omitempty"`
	ExecutionBudget time.Duration `json:"execution_budget,omitempty"`
	MemoryBudget    int64         `json:"memory_budget,omitempty"`
	// Tools pins the definitions the session started with, by name and
	// digest: a replay under other definitions could answer differently.
	Tools   map[string]string `json:"tools,omitempty"`
	Nonce   Nonce             `json:"nonce"`
	Seed    host.RandomSeed   `json:"seed"`
	Restart RestartPolicy     `json:"restart,omitempty"`
	// MaxLifetime, when set, ends the session (ErrMaxLifetime) once it
	// has lived that long since At, however long its calls wait.
	MaxLifetime time.Duration `json:"max_lifetime,omitempty"`
	// Owner names who submitted the session (an API token's owner).
	Owner string `json:"owner,omitempty"`
	// Trace is the W3C traceparent of the submission, so a resumed
	// session's spans continue its trace. Only tracing reads it.
	Trace string `json:"trace,omitempty"`
}

// Nonce is a session's capability nonce, kept as 32 hex digits.
type Nonce [16]byte

// MarshalText writes the nonce as hex.
func (n Nonce) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(n)))
	hex.Encode(out, n[:])
	return out, nil
}

// UnmarshalText reads 32 hex digits.
func (n *Nonce) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(n) {
		return fmt.Errorf("%w: nonce of %d hex digits, want 32", ErrInvalidEntry, len(b))
	}
	if _, err := hex.Decode(n[:], b); err != nil {
		return fmt.Errorf("%w: nonce: %v", ErrInvalidEntry, err)
	}
	return nil
}

// Prepared records an external operation before it may be dispatched:
// the durable identity (idempotency key, request id) an answer must be
// bound to after any restart.
type Prepared struct {
	Op        host.ExternalToolID `json:"op"`
	CallIndex uint64              `json:"call"`
	Tool      string              `json:"tool"`
	Input     string              `json:"input"`
	Key       string              `json:"key"`
	Request   string              `json:"request"`
}

// InputKind names what the runtime applied.
type InputKind string

// Input kinds, one per runtime decision that changes a session.
const (
	InputSucceeded        InputKind = "succeeded"
	InputFailed           InputKind = "failed"
	InputRetryTransient   InputKind = "retry_transient"
	InputRetryRateLimited InputKind = "retry_rate_limited"
	InputExpire           InputKind = "expire"
	InputCancelRequested  InputKind = "cancel_requested"
	InputCancelConfirmed  InputKind = "cancel_confirmed"
	// InputCancelForced is the host's terminal assertion that an
	// operation is cancelled, made without waiting for its worker (an
	// operator's forced end of a session).
	InputCancelForced InputKind = "cancel_forced"
	// InputStreamed carries how much an operation has streamed so far
	// (Stream), so stream bounds span a restart as they span retries.
	InputStreamed InputKind = "streamed"
	// InputSessionCancel ends the session: its live operations are
	// cancelled, nothing it starts from then on is dispatched, and it
	// ends with Reason as its outcome once no operation is live. Op is
	// unset.
	InputSessionCancel InputKind = "session_cancel"
)

// Applied records an answer or host decision in the order the runtime
// applied it. Op is unset for InputExpire, which acts on every operation
// whose deadline passed by At.
type Applied struct {
	Kind   InputKind           `json:"kind"`
	Op     host.ExternalToolID `json:"op,omitempty"`
	Output string              `json:"output,omitempty"`
	Error  string              `json:"error,omitempty"`
	// Stream is set for InputStreamed.
	Stream *StreamCount `json:"stream,omitempty"`
	// Reason is set for InputSessionCancel: why the session ends.
	Reason EndReason `json:"reason,omitempty"`
}

// StreamCount is what an operation streamed over all its attempts: the
// counters its stream bounds are checked against.
type StreamCount struct {
	Chunks        int `json:"chunks"`
	SourceBytes   int `json:"source_bytes"`
	ReleasedBytes int `json:"released_bytes"`
}

// EndReason says why a session was ended before its script did.
type EndReason string

// End reasons.
const (
	// EndOperator: an operator cancelled the session.
	EndOperator EndReason = "operator"
	// EndLifetime: the session outlived its MaxLifetime.
	EndLifetime EndReason = "max_lifetime"
)

func (r EndReason) valid() bool { return r == EndOperator || r == EndLifetime }

// RestartPolicy decides what a new host does with a session whose host
// went away.
type RestartPolicy string

// Restart policies.
const (
	// RestartResume rebuilds the session from its ledger and finishes it.
	RestartResume RestartPolicy = "resume"
	// RestartFail ends it failed, as if it could not outlive its host;
	// such a session keeps no ledger.
	RestartFail RestartPolicy = "fail"
)

// ParseRestartPolicy reads a policy; "" is RestartResume.
func ParseRestartPolicy(s string) (RestartPolicy, error) {
	switch RestartPolicy(s) {
	case "", RestartResume:
		return RestartResume, nil
	case RestartFail:
		return RestartFail, nil
	}
	return "", fmt.Errorf("%w: restart policy %q: want resume or fail", ErrInvalidEntry, s)
}

// kind says which record e holds, or "" for none or several.
func (e Entry) kind() string {
	n, k := 0, ""
	if e.Submitted != nil {
		n, k = n+1, "submitted"
	}
	if e.Prepared != nil {
		n, k = n+1, "prepared"
	}
	if e.Applied != nil {
		n, k = n+1, "applied"
	}
	if n != 1 {
		return ""
	}
	return k
}

func (k InputKind) valid() bool {
	switch k {
	case InputSucceeded, InputFailed, InputRetryTransient, InputRetryRateLimited,
		InputExpire, InputCancelRequested, InputCancelConfirmed, InputCancelForced,
		InputStreamed, InputSessionCancel:
		return true
	}
	return false
}
