package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/splashfabric/splashfabric/metrics"
)

// The dashboard, the alert rules and the metrics note are written by hand;
// these tests keep them in step with the names this package registers.

var splashName = regexp.MustCompile(`\bsplash_[a-z0-9_]+`)

func registeredNames() []string {
	return describedNames(metrics.NewHost(nil), metrics.NewWorker(nil), metrics.NewRecords(nil), metrics.NewAPI(nil, []string{"internal"}), metrics.NewNATS(nil))
}

// known reports whether name is a registered metric or one of the series a
// registered histogram exposes.
func known(registered []string, name string) bool {
	if slices.Contains(registered, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") && slices.Contains(registered, base) {
			return true
		}
	}
	return false
}

func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	raw, err := os.ReadFile("../deploy/grafana/splash-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard lacks title, uid or panels")
	}
	registered := registeredNames()
	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeats", p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := splashName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q query %s names no splash metric: %s", p.Title, tg.RefID, tg.Expr)
			}
			for _, n := range names {
				if !known(registered, n) {
					t.Errorf("panel %q queries %s, which the metrics package does not register", p.Title, n)
				}
				used[strings.TrimSuffix(n, "_bucket")] = true
			}
		}
	}
	for _, n := range registered {
		if !used[n] {
			t.Errorf("no dashboard panel shows %s", n)
		}
	}
}

func TestFilesNameOnlyRegisteredMetrics(t *testing.T) {
	registered := registeredNames()
	for _, path := range []string{
		"../deploy/prometheus/alerts.yml",
		"../deploy/prometheus/alerts_test.yml",
		"../docs/metrics.md",
	} {
		t.Run(path, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range splashName.FindAllString(string(raw), -1) {
				if !known(registered, n) {
					t.Errorf("%s names %s, which the metrics package does not register", path, n)
				}
			}
		})
	}
}

func TestMetricsNoteListsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range registeredNames() {
		if !strings.Contains(string(raw), "`"+n+"`") {
			t.Errorf("docs/metrics.md does not list `%s`", n)
		}
	}
	for _, alert := range []string{"SplashPoolWithoutWorkers", "SplashRetryStorm", "SplashTimeoutRatio", "SplashBacklogGrowing", "SplashAuthFailure", "SplashToolProcessCrashLoop"} {
		if !strings.Contains(string(raw), alert) {
			t.Errorf("docs/metrics.md does not explain %s", alert)
		}
	}
}
