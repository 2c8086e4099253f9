package metrics

import "github.com/prometheus/client_golang/prometheus"

// Stores whose records are sealed (splash_records_rejected_total).
const (
	StoreSessionArchive = "session_archive"
	StoreJournal        = "journal"
)

// Reasons a stored record is refused (splash_records_rejected_total); they
// mirror package recordauth's.
const (
	// RecordUnsigned: no tag, written by a client without the key or
	// before records were sealed.
	RecordUnsigned = "unsigned"
	// RecordBadTag: a tag that does not verify: forged, altered, moved
	// from another key, or sealed under another frame key.
	RecordBadTag = "bad_tag"
)

var (
	recordStores  = []string{StoreSessionArchive, StoreJournal}
	recordReasons = []string{RecordUnsigned, RecordBadTag}
)

// Records counts stored records a process refused to trust. A host (the
// session archive) and a worker (the journal) each register it; in one
// process (splash dev) they share it. All methods are safe for concurrent
// use, and every method of a nil *Records does nothing.
type Records struct {
	set
	rejected *prometheus.CounterVec
}

// NewRecords builds the set and registers it with reg (nil registers
// nothing); a second registration into the same registry returns the
// first.
func NewRecords(reg prometheus.Registerer, opts ...Option) *Records {
	o := buildOptions(opts)
	b := builder{constLabels: o.constLabels}
	r := &Records{
		rejected: b.counter("splash_records_rejected_total",
			"Stored records refused on read because they fail authentication, by store and reason.", "store", "reason"),
	}
	r.set = set{r.rejected}
	for _, s := range recordStores {
		initAll(r.rejected, recordReasons, s)
	}
	return register(reg, r)
}

// Rejected counts one refused record of store (a Store constant) for
// reason (a Record constant).
func (r *Records) Rejected(store, reason string) {
	if r == nil {
		return
	}
	r.rejected.WithLabelValues(oneOf(store, recordStores), oneOf(reason, recordReasons)).Inc()
}
