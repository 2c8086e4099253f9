package hostmetrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splashfabric/splashfabric/host"
	"github.com/splashfabric/splashfabric/hostloop"
	"github.com/splashfabric/splashfabric/hostmetrics"
	"github.com/splashfabric/splashfabric/metrics"
)

// exemplars returns the trace ids the buckets of a histogram carry.
func exemplars(t *testing.T, reg *prometheus.Registry, name string) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					if l.GetName() == metrics.ExemplarTraceID {
						out = append(out, l.GetValue())
					}
				}
			}
		}
	}
	return out
}

// An operation of a sampled session's trace carries that trace as the
// exemplar of its duration and dispatch latency; one of an unsampled or
// untraced session carries none.
func TestLatenciesCarryTheSessionsTrace(t *testing.T) {
	const sampled, unsampled = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
	for _, tc := range []struct {
		name, trace string
		want        []string
	}{
		{"sampled", "00-" + sampled + "-00f067aa0ba902b7-01", []string{sampled}},
		{"not sampled", "00-" + unsampled + "-00f067aa0ba902b7-00", nil},
		{"untraced", "", nil},
		{"not a traceparent", "00-zz", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			o := hostmetrics.New(metrics.NewHost(reg))
			t0 := time.Unix(1000, 0)
			o.SessionStarted(hostloop.SessionStatus{ID: "s1", State: hostloop.SessionSuspended, Trace: tc.trace})
			o.SessionChanged(hostloop.SessionStatus{ID: "s1", State: hostloop.SessionSuspended})
			o.Audit("s1", []host.AuditEvent{{ID: 1, Tool: "t", Attempt: 1, Outcome: host.AuditClaimed, At: t0}})
			o.Dispatched("s1", host.ExternalInvocation{ID: 1, Tool: "t", Attempt: 1})
			o.Audit("s1", []host.AuditEvent{{ID: 1, Tool: "t", Attempt: 1, Outcome: host.AuditSucceeded, At: t0.Add(time.Second)}})
			for _, name := range []string{"splash_operation_duration_seconds", "splash_dispatch_latency_seconds"} {
				got := exemplars(t, reg, name)
				if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
					t.Errorf("%s exemplars %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}
