package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/metrics"
)

func TestRecordsExposition(t *testing.T) {
	r := metrics.NewRecords(nil)
	r.Rejected(metrics.StoreSessionArchive, metrics.RecordUnsigned)
	r.Rejected(metrics.StoreJournal, metrics.RecordBadTag)
	r.Rejected(metrics.StoreJournal, metrics.RecordBadTag)
	// Values outside the closed sets cannot grow the series.
	r.Rejected("ledger", "x")
	want := exposition(
		`# HELP splash_records_rejected_total Stored records refused on read because they fail authentication, by store and reason.`,
		`# TYPE splash_records_rejected_total counter`,
		`splash_records_rejected_total{reason="bad_tag",store="journal"} 2`,
		`splash_records_rejected_total{reason="bad_tag",store="session_archive"} 0`,
		`splash_records_rejected_total{reason="other",store="other"} 1`,
		`splash_records_rejected_total{reason="unsigned",store="journal"} 0`,
		`splash_records_rejected_total{reason="unsigned",store="session_archive"} 1`,
	)
	if err := collectAndCompare(r, want, "splash_records_rejected_total"); err != nil {
		t.Error(err)
	}
	var none *metrics.Records
	none.Rejected(metrics.StoreJournal, metrics.RecordBadTag)
}

// A host and a worker in one process share the set.
func TestRecordsRegisteredTwiceIsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	if a, b := metrics.NewRecords(reg), metrics.NewRecords(reg); a != b {
		t.Fatal("second registration built a second set")
	}
}
