package metrics_test

import (
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/metrics"
)

// A code outside the set given at construction is counted as other, so a
// client cannot grow the series.
func TestAPIRefusedFoldsUnknownCodes(t *testing.T) {
	a := metrics.NewAPI(nil, []string{"connection_limit", "slow_reader"})
	a.Refused("connection_limit")
	a.Refused("connection_limit")
	a.Refused("made-up")
	var nilAPI *metrics.API
	nilAPI.Refused("connection_limit")
	want := `
# HELP splash_api_refused_total HTTP API requests, connections and event streams refused or cut, by error code.
# TYPE splash_api_refused_total counter
splash_api_refused_total{code="connection_limit"} 2
splash_api_refused_total{code="other"} 1
splash_api_refused_total{code="slow_reader"} 0
`
	if err := collectAndCompare(a, strings.NewReader(want), "splash_api_refused_total"); err != nil {
		t.Fatal(err)
	}
}
