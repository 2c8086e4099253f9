package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/splashfabric/splashfabric/apiclient"
	"github.com/splashfabric/splashfabric/internal/pooltest"
)

// TestScenarioPoolIsolation (scenario 10): the attack table of
// internal/pooltest against the compose cluster, with the real nkey and key
// ring gen-secrets.sh gave the pool "text" (the worker-text service, which
// serves demo.upper). Every move against the pool "demo" (the worker
// service) is refused by the NATS nodes, which count it per identity
// (Prometheus scrapes splash_nats_violations_total from each node), or by
// the host, which counts it in splash_auth_failures_total; the genuine
// demo.sleep answer wins over every forgery, and demo.upper keeps working.
func TestScenarioPoolIsolation(t *testing.T) {
	s, _ := cluster(t, 1)
	client, err := apiclient.New(s.apiURL(), s.apiToken())
	if err != nil {
		t.Fatal(err)
	}
	prom := s.prometheus()
	pooltest.Run(t, pooltest.Fabric{
		URL:      s.natsURLs(),
		Options:  []nats.Option{s.tls()},
		HostID:   hostID,
		Host:     &pooltest.APIHost{Client: client, MetricsURL: s.apiURL() + "/metrics"},
		Attacker: s.pools["text"],
		Own:      pooltest.Call{Tool: "demo.upper", Input: "mine", Want: "MINE"},
		Victim:   s.pools["demo"],
		Target:   pooltest.Call{Tool: "demo.sleep", Input: "8s", Want: "slept 8s"},
		NodeViolations: func(ctx context.Context, identity string) (float64, error) {
			v, err := prom.query(ctx, fmt.Sprintf(`sum(splash_nats_violations_total{identity=%q})`, identity))
			if err != nil || len(v) == 0 {
				return 0, err
			}
			return float64(v[0].Value), nil
		},
	})
}
