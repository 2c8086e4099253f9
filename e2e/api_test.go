package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// apiClient speaks the host HTTP API of docs/api.md with plain JSON.
type apiClient struct {
	token string
	hc    *http.Client

	mu   sync.Mutex
	base string
}

// setBase points the client at a new address: a restarted container gets
// a new free loopback port.
func (c *apiClient) setBase(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = base
}

func (c *apiClient) baseURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base
}

func newAPIClient(base, token string) *apiClient {
	return &apiClient{base: base, token: token, hc: &http.Client{Timeout: 10 * time.Second}}
}

// session is the API's Session object, as far as the tests read it.
type session struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	Value      string            `json:"value"`
	Error      string            `json:"error"`
	ErrorCode  string            `json:"error_code"`
	Operations []json.RawMessage `json:"operations"`
	TraceID    string            `json:"trace_id"`
}

func (s session) terminal() bool { return s.State == "completed" || s.State == "failed" }

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

func (c *apiClient) do(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{Status: resp.StatusCode, Body: string(b)}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = b
		return nil
	}
	return json.Unmarshal(b, out)
}

// submit posts a script and returns the session the host answers with.
func (c *apiClient) submit(ctx context.Context, source string) (session, error) {
	var s session
	err := c.do(ctx, http.MethodPost, "/v1/sessions", c.token, map[string]any{"source": source}, &s)
	return s, err
}

func (c *apiClient) session(ctx context.Context, id string) (session, error) {
	var s session
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+id, c.token, nil, &s)
	return s, err
}

// metrics scrapes the host's /metrics.
func (c *apiClient) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	var b []byte
	if err := c.do(ctx, http.MethodGet, "/metrics", c.token, nil, &b); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// metricSum adds the values of family's series whose labels include all of
// want (counters and gauges).
func metricSum(fams map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	f, ok := fams[family]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}
