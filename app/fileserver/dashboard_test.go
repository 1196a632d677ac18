package fileserver

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/turboretry/turboretry/offload/host"
)

const dashboardFile = "../../docs/grafana-dashboard.json"

// metricNameRE finds the metric names in a PromQL expression: the ones
// this project exports and client_golang's go_* and process_*.
var metricNameRE = regexp.MustCompile(`\b(?:turboretry|go|process)_[a-zA-Z0-9_]+`)

// dashboardMetrics returns every metric name the dashboard's queries use
// (histogram series by their family name), failing on a query that names
// none.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	seen := map[string]bool{}
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			names := metricNameRE.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base, ok := strings.CutSuffix(n, suffix); ok && strings.HasSuffix(base, "_seconds") {
						n = base
					}
				}
				seen[n] = true
			}
		}
	}
	if queries < 20 {
		t.Fatalf("%s has only %d queries", dashboardFile, queries)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// offloadModeOf says which offload mode exports a metric: the integrated
// datapath's and the split-mode host's only run with their offload.
func offloadModeOf(name string) host.Mode {
	switch {
	case strings.HasPrefix(name, "turboretry_agent_"), strings.HasPrefix(name, "turboretry_xdp_"), strings.HasPrefix(name, "turboretry_afxdp_"):
		return host.ModeXDP
	case strings.HasPrefix(name, "turboretry_split_"):
		return host.ModeSplit
	}
	return host.ModeNone
}

// checkDashboardQueries fails for every metric the dashboard queries that
// fams, scraped from a server running with offload mode, lacks: all of
// those that need no offload, and the mode's own.
func checkDashboardQueries(t *testing.T, fams metricFamilies, mode host.Mode) {
	t.Helper()
	checked := 0
	for _, n := range dashboardMetrics(t) {
		if m := offloadModeOf(n); m != host.ModeNone && m != mode {
			continue
		}
		checked++
		if _, ok := fams.value(n); !ok {
			t.Errorf("the dashboard queries %s, which /metrics does not export (offload %v); it has: %s", n, mode, fams.names())
		}
	}
	if checked == 0 {
		t.Fatal("no dashboard metric checked")
	}
}

// TestDashboardQueriesExported: every metric docs/grafana-dashboard.json
// queries, but the offloads' (checked by TestOffloadBenignClients and
// TestSplitOffloadAnnouncesConnectionIDs, where they run), is on the
// /metrics page of a running server once it has served HTTP/1.1, HTTP/2
// and HTTP/3 (Retry-validated, so the Retry round trip is observed).
func TestDashboardQueriesExported(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.MetricsAddr = "127.0.0.1:0"
		c.Retry = RetryAlways
	})
	h2, h1 := ts.clients(t)
	get(t, h1, "GET", ts.URL())
	get(t, h2, "GET", ts.URL()+"missing")
	tr := ts.h3Transport()
	defer tr.Close()
	ts.h3Fetch(t, tr, "")
	_, body := get(t, h1, "GET", "http://"+ts.MetricsAddr().String()+"/metrics")
	checkDashboardQueries(t, parseMetrics(t, body), host.ModeNone)
}

// TestDashboardMetricNames: the extraction finds names in PromQL the way
// the dashboard writes it, so the check above cannot pass vacuously.
func TestDashboardMetricNames(t *testing.T) {
	got := metricNameRE.FindAllString(`histogram_quantile(0.99, sum by (le) (rate(turboretry_quic_handshake_duration_seconds_bucket[$__rate_interval]))) / go_goroutines`, -1)
	if len(got) != 2 || got[0] != "turboretry_quic_handshake_duration_seconds_bucket" || got[1] != "go_goroutines" {
		t.Fatalf("names %v", got)
	}
}
