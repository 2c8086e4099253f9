package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/splashfabric/splashfabric/internal/testwait"
)

// The jobs of deploy/prometheus/prometheus.yml and the ports they scrape.
const (
	jobHost        = "splash-host"
	jobWorker      = "splash-worker"
	hostTarget     = "host:8080"
	workerPort     = 9464
	prometheusPort = 9090
)

// promPoll spaces the queries of a wait: testwait.Until asks every few
// milliseconds, and Prometheus shares two cores with the cluster under
// load. Its answers only change once a scrape (every 15s) or a discovery
// refresh (every 5s) has happened anyway.
const promPoll = 250 * time.Millisecond

// promClient queries the compose cluster's Prometheus through its HTTP API
// (/api/v1), as a person at its UI would.
type promClient struct {
	base string
	hc   *http.Client
}

// prometheus returns a client of the project's Prometheus on its loopback
// port.
func (s *stack) prometheus() *promClient {
	s.t.Helper()
	return &promClient{base: "http://" + s.port("prometheus", prometheusPort), hc: &http.Client{Timeout: 10 * time.Second}}
}

// query runs an instant query and returns its vector.
func (p *promClient) query(ctx context.Context, q string) (model.Vector, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %v: %.200s", q, resp.StatusCode, err, b)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: HTTP %d: %s", q, resp.StatusCode, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %q, want vector", q, r.Data.ResultType)
	}
	var v model.Vector
	if err := json.Unmarshal(r.Data.Result, &v); err != nil {
		return nil, fmt.Errorf("query %q: %v", q, err)
	}
	return v, nil
}

// throttled calls cond at most once per every, answering false in between.
func throttled(every time.Duration, cond func() bool) func() bool {
	var last time.Time
	return func() bool {
		if time.Since(last) < every {
			return false
		}
		last = time.Now()
		return cond()
	}
}

// workerAddrs returns the address Prometheus should scrape each of the
// project's worker containers at, of every pool: its IP on the compose
// network.
func (s *stack) workerAddrs() []string {
	s.t.Helper()
	network := s.project + "_fabric"
	var addrs []string
	for _, c := range s.inspect(append(s.containers("worker"), s.containers("worker-text")...)...) {
		n, ok := c.NetworkSettings.Networks[network]
		if !ok || n.IPAddress == "" {
			s.fatalf("worker %s has no address on %s", c.Name, network)
		}
		addrs = append(addrs, fmt.Sprintf("%s:%d", n.IPAddress, workerPort))
	}
	return addrs
}

// waitScrapeTargets waits until Prometheus's `up` lists, for the two
// Splash jobs, exactly the host and every worker container running now,
// each up: the worker targets come from DNS service discovery of the
// service name, so this holds only once Prometheus followed the last
// scaling both ways (new replicas discovered and scraped, removed ones
// dropped).
func (s *stack) waitScrapeTargets(p *promClient) {
	s.t.Helper()
	workers := s.workerAddrs()
	want := []string{jobHost + " " + hostTarget}
	for _, a := range workers {
		want = append(want, jobWorker+" "+a)
	}
	sort.Strings(want)
	var last []string
	var lastErr error
	done := false
	defer func() {
		if !done {
			s.t.Logf("prometheus up, last seen: %v (error %v); want %v", last, lastErr, want)
		}
	}()
	ctx := s.t.Context()
	testwait.Until(s.t, 90*time.Second, fmt.Sprintf("prometheus: %d targets up", len(want)), throttled(promPoll, func() bool {
		v, err := p.query(ctx, fmt.Sprintf(`up{job=~%q}`, jobHost+"|"+jobWorker))
		lastErr = err
		if err != nil {
			return false
		}
		last = last[:0]
		for _, smp := range v {
			t := string(smp.Metric[model.JobLabel]) + " " + string(smp.Metric[model.InstanceLabel])
			if smp.Value != 1 {
				t += " down"
			}
			last = append(last, t)
		}
		sort.Strings(last)
		return slices.Equal(last, want)
	}))
	done = true
	s.logf("prometheus: %s and %d workers up %v", hostTarget, len(workers), workers)
}

// waitPromAgrees waits until the sum of family's series with labels, as
// Prometheus last scraped it from the host, equals what the host's
// /metrics says now, and returns that value. The caller has stopped the
// load, so the counter stands still and the next scrape catches up.
func (s *stack) waitPromAgrees(p *promClient, api *apiClient, family string, labels map[string]string) float64 {
	s.t.Helper()
	matchers := []string{fmt.Sprintf("job=%q", jobHost)}
	for k, v := range labels {
		matchers = append(matchers, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(matchers)
	q := fmt.Sprintf("sum(%s{%s})", family, strings.Join(matchers, ","))
	var prom, direct float64
	var lastErr error
	done := false
	defer func() {
		if !done {
			s.t.Logf("%s: prometheus last said %v, /metrics %v (error %v)", q, prom, direct, lastErr)
		}
	}()
	ctx := s.t.Context()
	testwait.Until(s.t, time.Minute, "prometheus agrees with /metrics on "+q, throttled(promPoll, func() bool {
		fams, err := api.metrics(ctx)
		if lastErr = err; err != nil {
			return false
		}
		direct = metricSum(fams, family, labels)
		v, err := p.query(ctx, q)
		if lastErr = err; err != nil || len(v) != 1 {
			return false
		}
		prom = float64(v[0].Value)
		return prom == direct
	}))
	done = true
	s.logf("prometheus agrees with /metrics: %s = %v", q, prom)
	return prom
}
