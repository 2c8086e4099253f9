package apiwire

import (
	"encoding/json"
	"time"
)

// Tool is one entry of GET /v1/tools: the definition as scripts see it
// (what runs it and how its output is redacted stay on the host and the
// workers), its pool's consumer and the workers seen serving it.
type Tool struct {
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	Format         string          `json:"format"`
	InputSchema    json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema   json.RawMessage `json:"output_schema,omitempty"`
	Idempotent     bool            `json:"idempotent"`
	Cancellable    bool            `json:"cancellable"`
	MaxAttempts    int             `json:"max_attempts"`
	Deadline       string          `json:"deadline,omitempty"`
	MaxOutputBytes int             `json:"max_output_bytes"`
	Stream         *ToolStream     `json:"stream,omitempty"`
	Digest         string          `json:"digest"`
	// Uncontained says the catalog runs the tool's process or MCP server
	// without a sandbox (contain: false): it has its worker's user,
	// files, network and view of /proc.
	Uncontained bool `json:"uncontained,omitempty"`
	// Pool is the tool's JetStream consumer; absent when no worker pool
	// has bound the tool yet, or the host could not read it (then
	// PoolError says why).
	Pool      *Pool    `json:"pool,omitempty"`
	PoolError string   `json:"pool_error,omitempty"`
	Workers   []Worker `json:"workers"`
}

// ToolStream is a streaming tool's bounds.
type ToolStream struct {
	MaxChunks        int `json:"max_chunks"`
	MaxChunkBytes    int `json:"max_chunk_bytes"`
	MaxSourceBytes   int `json:"max_source_bytes"`
	MaxReleasedBytes int `json:"max_released_bytes"`
}

// Pool is a tool's JetStream pull consumer, as the server counts it.
type Pool struct {
	// Pending is how many invocations wait in the stream, never
	// delivered.
	Pending uint64 `json:"pending"`
	// AckPending is how many were delivered to a worker and not yet
	// answered.
	AckPending int `json:"ack_pending"`
	// Redelivered counts those of AckPending delivered more than once.
	Redelivered int `json:"redelivered"`
	// Waiting is how many pull requests of idle workers wait for work.
	Waiting int `json:"waiting"`
}

// ToolList is the body of GET /v1/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
}

// Worker is a worker seen by this host: it sent a frame (a chunk, a
// result, a cancel answer) within the host's window.
type Worker struct {
	ID       string    `json:"id"`
	LastSeen time.Time `json:"last_seen"`
	// Answered counts the operations it ended (succeeded, failed,
	// cancelled) while listed.
	Answered uint64 `json:"answered"`
	// Tools lists the tools it served; set in GET /v1/workers only.
	Tools []string `json:"tools,omitempty"`
}

// WorkerList is the body of GET /v1/workers.
type WorkerList struct {
	Workers []Worker `json:"workers"`
}
