package pooltest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/splashfabric/splashfabric/apiclient"
)

// APIHost is a Host reached through its HTTP API and its /metrics, as
// `splash dev` and the compose cluster serve them.
type APIHost struct {
	Client *apiclient.Client
	// MetricsURL serves the host's metrics; with splash dev it also
	// serves its NATS node's (splash_nats_violations_total).
	MetricsURL string
}

var _ Host = (*APIHost)(nil)

// Submit implements Host.
func (h *APIHost) Submit(ctx context.Context, source string) (string, error) {
	s, err := h.Client.Submit(ctx, apiclient.SubmitRequest{Source: source})
	return s.ID, err
}

// Operations implements Host.
func (h *APIHost) Operations(ctx context.Context, session string) ([]Operation, error) {
	s, err := h.Client.Session(ctx, session)
	if err != nil {
		return nil, err
	}
	out := make([]Operation, 0, len(s.Operations))
	for _, op := range s.Operations {
		out = append(out, Operation{RequestID: op.RequestID, Tool: op.Tool, Attempt: op.Attempt})
	}
	return out, nil
}

// Final implements Host.
func (h *APIHost) Final(ctx context.Context, session string) (string, error) {
	for {
		s, err := h.Client.Session(ctx, session)
		if err != nil {
			return "", err
		}
		if s.Terminal() {
			if s.State != apiclient.StateCompleted || s.Value == nil {
				return "", fmt.Errorf("session %s ended %s: %s", session, s.State, s.Error)
			}
			return *s.Value, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// AuthFailures implements Host.
func (h *APIHost) AuthFailures(ctx context.Context) (map[string]float64, error) {
	return h.sumBy(ctx, "splash_auth_failures_total", "reason")
}

// NodeViolations reads splash_nats_violations_total of identity, for
// Fabric.NodeViolations.
func (h *APIHost) NodeViolations(ctx context.Context, identity string) (float64, error) {
	by, err := h.sumBy(ctx, "splash_nats_violations_total", "identity")
	return by[identity], err
}

// sumBy scrapes MetricsURL and sums the samples of family by the value of
// label.
func (h *APIHost) sumBy(ctx context.Context, family, label string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.MetricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", h.MetricsURL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	f := families[family]
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}
