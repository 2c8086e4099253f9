package metrics

// Histogram buckets, in seconds. Operations run from milliseconds (echo) to
// minutes (a slow model call), so duration buckets span 5ms to 10 minutes.
// Dispatch latency is a queue hop through JetStream and should sit well under
// a second; its buckets are finer at the bottom so p50 stays readable.
var (
	durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	dispatchBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
)
