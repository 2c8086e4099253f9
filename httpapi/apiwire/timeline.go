package apiwire

import "time"

// Timeline is the body of GET /v1/sessions/{id}/timeline.
type Timeline struct {
	Session string     `json:"session"`
	State   string     `json:"state"`
	Created time.Time  `json:"created"`
	Ended   *time.Time `json:"ended,omitempty"`
	// Recorded is false when this host kept no timeline of the session
	// (it ran in another process, or is older than the host keeps):
	// Operations is then empty.
	Recorded          bool                `json:"recorded"`
	TraceID           string              `json:"trace_id,omitempty"`
	TraceURL          string              `json:"trace_url,omitempty"`
	Operations        []TimelineOperation `json:"operations"`
	OperationsDropped int                 `json:"operations_dropped,omitempty"`
}

// TimelineOperation is one operation on a timeline: from the host's claim
// to its end, with its attempts and marks.
type TimelineOperation struct {
	ID           string            `json:"id"`
	Tool         string            `json:"tool"`
	Claimed      time.Time         `json:"claimed"`
	Ended        *time.Time        `json:"ended,omitempty"`
	Outcome      string            `json:"outcome,omitempty"`
	Attempts     []TimelineAttempt `json:"attempts"`
	Marks        []TimelineMark    `json:"marks"`
	MarksDropped int               `json:"marks_dropped,omitempty"`
}

// TimelineAttempt is one attempt: published to its tool's stream, first
// heard of from a worker (a chunk or its answer), ended (retry, or the
// operation's outcome).
type TimelineAttempt struct {
	Attempt    uint32     `json:"attempt"`
	Published  *time.Time `json:"published,omitempty"`
	FirstFrame *time.Time `json:"first_frame,omitempty"`
	Ended      *time.Time `json:"ended,omitempty"`
	Outcome    string     `json:"outcome,omitempty"`
	Worker     string     `json:"worker,omitempty"`
}

// TimelineMark is a point on an operation's line: a chunk (with its
// size, never its text), a refused chunk, a retry scheduled, a
// cancellation requested, a late result or a reconciliation.
type TimelineMark struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Attempt uint32    `json:"attempt,omitempty"`
	Bytes   int       `json:"bytes,omitempty"`
}
