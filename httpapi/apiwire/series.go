package apiwire

// ToolSeriesList is the body of GET /v1/metrics/tools: each tool's last
// minutes, sampled every interval_ms from the host's own collectors.
type ToolSeriesList struct {
	IntervalMS int64        `json:"interval_ms"`
	Tools      []ToolSeries `json:"tools"`
}

// ToolSeries is one tool's points, oldest first.
type ToolSeries struct {
	Tool   string        `json:"tool"`
	Points []SeriesPoint `json:"points"`
}

// SeriesPoint is one sample: rates per second over the interval before
// it, p50 and p99 operation latency in seconds over the last few
// intervals (null when none finished), operations queued (published, no
// worker heard from yet, or waiting out a retry) and in flight.
type SeriesPoint struct {
	T        int64    `json:"t"` // Unix milliseconds
	Calls    float64  `json:"calls"`
	Retries  float64  `json:"retries"`
	Failures float64  `json:"failures"`
	P50      *float64 `json:"p50"`
	P99      *float64 `json:"p99"`
	Queued   float64  `json:"queued"`
	InFlight float64  `json:"in_flight"`
}
