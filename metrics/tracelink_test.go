package metrics_test

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The latency panels show their exemplars and link to the calls' traces,
// and the provisioned Prometheus data source sends an exemplar's trace_id
// to the provisioned Jaeger one: from a slow call on the dashboard to its
// trace.
func TestLatencyPanelsLinkToTraces(t *testing.T) {
	raw, err := os.ReadFile("../deploy/grafana/splash-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr     string `json:"expr"`
				Exemplar bool   `json:"exemplar"`
			} `json:"targets"`
			Links []struct {
				URL string `json:"url"`
			} `json:"links"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile("../deploy/grafana/provisioning/datasources/splash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Datasources []struct {
			UID      string `json:"uid"`
			Type     string `json:"type"`
			JSONData struct {
				Exemplars []struct {
					Name          string `json:"name"`
					DatasourceUID string `json:"datasourceUid"`
				} `json:"exemplarTraceIdDestinations"`
			} `json:"jsonData"`
		} `json:"datasources"`
	}
	if err := yaml.Unmarshal(raw, &prov); err != nil {
		t.Fatal(err)
	}
	jaeger := ""
	for _, ds := range prov.Datasources {
		if ds.Type == "jaeger" {
			jaeger = ds.UID
		}
	}
	mapped := false
	for _, ds := range prov.Datasources {
		for _, e := range ds.JSONData.Exemplars {
			mapped = mapped || (ds.Type == "prometheus" && e.Name == "trace_id" && e.DatasourceUID == jaeger && jaeger != "")
		}
	}
	if !mapped {
		t.Fatalf("no Prometheus data source sends the exemplar label trace_id to the Jaeger data source %q", jaeger)
	}
	linked := 0
	for _, p := range dash.Panels {
		latency := false
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "_seconds_bucket") {
				latency = true
				if !tg.Exemplar {
					t.Errorf("panel %q: query %q shows no exemplars", p.Title, tg.Expr)
				}
			}
		}
		if !latency {
			continue
		}
		ok := false
		for _, l := range p.Links {
			u, err := url.QueryUnescape(l.URL)
			ok = ok || (err == nil && strings.HasPrefix(u, "/explore") && strings.Contains(u, `"uid":"`+jaeger+`"`))
		}
		if !ok {
			t.Errorf("panel %q links to no trace search in %q", p.Title, jaeger)
		}
		linked++
	}
	if linked < 3 {
		t.Errorf("%d latency panels, want the host's two and the worker's", linked)
	}
}
