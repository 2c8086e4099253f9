package protocol

import "encoding/json"

// MessageKind names the one payload a WorkerMessage carries.
type MessageKind string

// The kinds of frame that travel between a host and its workers.
const (
	KindInvoke              MessageKind = "invoke"
	KindCancel              MessageKind = "cancel"
	KindChunk               MessageKind = "chunk"
	KindResult              MessageKind = "result"
	KindCancelDisposition   MessageKind = "cancel_disposition"
	KindReconcileOperation  MessageKind = "reconcile_operation"
	KindReconciledOperation MessageKind = "reconciled_operation"
	KindStreamDenied        MessageKind = "stream_denied"
)

// PayloadFormat says whether a payload is plain text or a JSON value.
type PayloadFormat string

// Payload formats.
const (
	FormatText PayloadFormat = "text"
	FormatJSON PayloadFormat = "json"
)

// WorkerPayload is a tool's input or terminal output.
type WorkerPayload struct {
	Format PayloadFormat   `json:"format"`
	Text   string          `json:"text,omitempty"`
	JSON   json.RawMessage `json:"json,omitempty"`
}

// TextPayload returns a text payload.
func TextPayload(s string) WorkerPayload { return WorkerPayload{Format: FormatText, Text: s} }

// JSONPayload returns a JSON payload; Validate rejects raw that is not JSON.
func JSONPayload(raw json.RawMessage) WorkerPayload {
	return WorkerPayload{Format: FormatJSON, JSON: raw}
}

// StreamLimits are the four bounds of a tool's stream policy, as a worker
// needs to know them, and what earlier attempts of the operation used of
// them: the bounds span every attempt, so an attempt starts where the
// last one left off.
type StreamLimits struct {
	MaxChunks         int `json:"max_chunks"`
	MaxChunkBytes     int `json:"max_chunk_bytes"`
	MaxSourceBytes    int `json:"max_source_bytes"`
	MaxReleasedBytes  int `json:"max_released_bytes"`
	UsedChunks        int `json:"used_chunks,omitempty"`
	UsedSourceBytes   int `json:"used_source_bytes,omitempty"`
	UsedReleasedBytes int `json:"used_released_bytes,omitempty"`
}

// StreamDenied tells the worker running an attempt that the host refused
// one of its chunks (the stream's bounds are spent): backpressure it can
// act on, by streaming no more.
type StreamDenied struct {
	RequestID string `json:"request_id"`
	Tool      string `json:"tool"`
	Attempt   uint32 `json:"attempt"`
	Reason    string `json:"reason"`
}

// Invoke asks a worker to run one attempt of an operation.
type Invoke struct {
	RequestID      string        `json:"request_id"`
	Tool           string        `json:"tool"`
	Input          WorkerPayload `json:"input"`
	CallIndex      uint64        `json:"call_index"`
	Attempt        uint32        `json:"attempt"`
	AttemptLimit   uint32        `json:"attempt_limit"`
	IdempotencyKey string        `json:"idempotency_key"`
	OutputLimit    int           `json:"output_limit"`
	Stream         *StreamLimits `json:"stream,omitempty"`
	// DeadlineMillis is the remaining deadline when the host claimed the
	// call; zero means none.
	DeadlineMillis int64 `json:"deadline_millis,omitempty"`
	// Contract is the host's definition of the tool, when it registered
	// the tool from one; a worker whose definition differs refuses the
	// call instead of running it under another contract.
	Contract *Contract `json:"contract,omitempty"`
	// TraceParent and TraceState are the W3C trace context of the span
	// that hands a process tool its call, set only on the way into the
	// process (over NATS the trace travels in headers): a tool reads
	// them to put its own spans in its caller's trace, and for nothing
	// else.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// Contract is what an invocation says of the definition the host called
// the tool under: its digest and the two declarations that change how a
// worker runs it.
type Contract struct {
	// Digest identifies the whole definition ("sha256:<64 hex>").
	Digest      string `json:"digest"`
	Idempotent  bool   `json:"idempotent"`
	Cancellable bool   `json:"cancellable"`
}

// Cancel asks the worker running RequestID to stop cooperatively.
type Cancel struct {
	RequestID      string `json:"request_id"`
	Tool           string `json:"tool"`
	Attempt        uint32 `json:"attempt"`
	IdempotencyKey string `json:"idempotency_key"`
}

// Chunk is one piece of progress output, numbered from 1 per request.
type Chunk struct {
	RequestID string `json:"request_id"`
	Sequence  uint64 `json:"sequence"`
	Text      string `json:"text"`
}

// ResultStatus is how an attempt ended.
type ResultStatus string

// Result statuses. The retry statuses ask the host to retry with the same
// idempotency key; the host decides whether it may.
const (
	ResultSucceeded        ResultStatus = "succeeded"
	ResultFailed           ResultStatus = "failed"
	ResultRetryTransient   ResultStatus = "retry_transient"
	ResultRetryRateLimited ResultStatus = "retry_rate_limited"
	// ResultIndeterminate reports that an earlier holder of the call may
	// or may not have produced its effect (a lease taken over from a
	// crashed worker of a non-idempotent tool).
	ResultIndeterminate ResultStatus = "indeterminate"
)

// Result is the terminal answer of one attempt.
type Result struct {
	RequestID string         `json:"request_id"`
	Attempt   uint32         `json:"attempt"`
	Status    ResultStatus   `json:"status"`
	Payload   *WorkerPayload `json:"payload,omitempty"`
	Error     string         `json:"error,omitempty"`
	// RetryAfterMillis is the earliest a rate-limited retry may start.
	RetryAfterMillis int64 `json:"retry_after_millis,omitempty"`
}

// CancelDisposition is a worker's answer to a Cancel.
type CancelDisposition string

// Cancel dispositions.
const (
	// CancelAcknowledged: the effect has stopped and no result will follow.
	CancelAcknowledged CancelDisposition = "acknowledged"
	// CancelTooLate: a result was already sent (or is being sent).
	CancelTooLate CancelDisposition = "too_late"
	// CancelUnsupported: the tool cannot be cancelled; the call stays
	// pending until its result or deadline.
	CancelUnsupported CancelDisposition = "unsupported"
)

// CancelReply carries a worker's disposition for one Cancel.
type CancelReply struct {
	RequestID   string            `json:"request_id"`
	Attempt     uint32            `json:"attempt"`
	Disposition CancelDisposition `json:"disposition"`
}

// WorkerMessage is the sum type of every frame body. Exactly the field
// that matches Kind is set; Validate enforces it.
type WorkerMessage struct {
	Kind       MessageKind                `json:"kind"`
	Invoke     *Invoke                    `json:"invoke,omitempty"`
	Cancel     *Cancel                    `json:"cancel,omitempty"`
	Chunk      *Chunk                     `json:"chunk,omitempty"`
	Result     *Result                    `json:"result,omitempty"`
	CancelDisp *CancelReply               `json:"cancel_disposition,omitempty"`
	Reconcile  *OperationReconcileRequest `json:"reconcile_operation,omitempty"`
	Reconciled *OperationReconcileResult  `json:"reconciled_operation,omitempty"`
	Denied     *StreamDenied              `json:"stream_denied,omitempty"`
}

// InvokeMessage wraps v as a KindInvoke message.
func InvokeMessage(v Invoke) WorkerMessage { return WorkerMessage{Kind: KindInvoke, Invoke: &v} }

// CancelMessage wraps v as a KindCancel message.
func CancelMessage(v Cancel) WorkerMessage { return WorkerMessage{Kind: KindCancel, Cancel: &v} }

// ChunkMessage wraps v as a KindChunk message.
func ChunkMessage(v Chunk) WorkerMessage { return WorkerMessage{Kind: KindChunk, Chunk: &v} }

// ResultMessage wraps v as a KindResult message.
func ResultMessage(v Result) WorkerMessage { return WorkerMessage{Kind: KindResult, Result: &v} }

// CancelReplyMessage wraps v as a KindCancelDisposition message.
func CancelReplyMessage(v CancelReply) WorkerMessage {
	return WorkerMessage{Kind: KindCancelDisposition, CancelDisp: &v}
}

// StreamDeniedMessage wraps v as a KindStreamDenied message.
func StreamDeniedMessage(v StreamDenied) WorkerMessage {
	return WorkerMessage{Kind: KindStreamDenied, Denied: &v}
}

// ReconcileMessage wraps v as a KindReconcileOperation message.
func ReconcileMessage(v OperationReconcileRequest) WorkerMessage {
	return WorkerMessage{Kind: KindReconcileOperation, Reconcile: &v}
}

// ReconciledMessage wraps v as a KindReconciledOperation message.
func ReconciledMessage(v OperationReconcileResult) WorkerMessage {
	return WorkerMessage{Kind: KindReconciledOperation, Reconciled: &v}
}
