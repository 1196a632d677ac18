package fileserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// requestRecords returns the access log records.
func requestRecords(t *testing.T, logs *syncBuffer) []map[string]any {
	var out []map[string]any
	for _, r := range logs.records(t) {
		if r["msg"] == "request" {
			out = append(out, r)
		}
	}
	return out
}

func TestAccessLogAndMetrics(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	h2, h1 := ts.clients(t)
	var bytes2, bytes1 int
	for range 3 {
		_, body := get(t, h2, "GET", ts.URL())
		bytes2 += len(body)
	}
	for range 2 {
		_, body := get(t, h1, "GET", ts.URL()+"style.css")
		bytes1 += len(body)
	}
	_, body := get(t, h1, "GET", ts.URL()+"missing")
	bytes1 += len(body)
	get(t, h2, "HEAD", ts.URL())
	_, brew := get(t, h2, "BREW", ts.URL()) // an unknown method is counted as OTHER

	metricsURL := "http://" + ts.MetricsAddr().String() + "/metrics"
	type series struct {
		name   string
		labels []string
		want   float64
	}
	want := []series{
		{"turboretry_http_requests_total", []string{"protocol", "HTTP/1.1", "method", "GET", "code", "200"}, 2},
		{"turboretry_http_requests_total", []string{"protocol", "HTTP/1.1", "method", "GET", "code", "404"}, 1},
		{"turboretry_http_requests_total", []string{"protocol", "HTTP/2.0", "method", "GET", "code", "200"}, 3},
		{"turboretry_http_requests_total", []string{"protocol", "HTTP/2.0", "method", "HEAD", "code", "200"}, 1},
		{"turboretry_http_requests_total", []string{"protocol", "HTTP/2.0", "method", "OTHER", "code", "405"}, 1},
		{"turboretry_http_response_bytes_total", []string{"protocol", "HTTP/1.1"}, float64(bytes1)},
		// BREW got a 405 with a short body.
		{"turboretry_http_response_bytes_total", []string{"protocol", "HTTP/2.0"}, float64(bytes2 + len(brew))},
		{"turboretry_http_request_duration_seconds", []string{"protocol", "HTTP/2.0"}, 5},
		// Both clients hold a keep-alive connection.
		{"turboretry_tcp_connections_active", nil, 2},
	}
	var fams metricFamilies
	eventually(t, func() error {
		resp, err := http.Get(metricsURL)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			return errorf("content type %q", ct)
		}
		fams = parseMetrics(t, string(b))
		for _, w := range want {
			if v, ok := fams.value(w.name, w.labels...); !ok || v != w.want {
				return errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.want)
			}
		}
		return nil
	})
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "turboretry_quic_retries_sent_total"} {
		if _, ok := fams.value(name); !ok {
			t.Errorf("/metrics lacks %s: %s", name, fams.names())
		}
	}

	// The log line follows the metrics update; wait for the last one.
	var recs []map[string]any
	eventually(t, func() error {
		if recs = requestRecords(t, ts.logs); len(recs) != 8 {
			return errorf("%d access log records, want 8", len(recs))
		}
		return nil
	})
	var sawMissing bool
	for _, r := range recs {
		for _, k := range []string{"method", "path", "status", "bytes", "protocol", "duration", "remote", "retry_validated", "token_validated", "zero_rtt"} {
			if _, ok := r[k]; !ok {
				t.Errorf("record lacks %s: %v", k, r)
			}
		}
		if r["retry_validated"] != false || r["token_validated"] != false || r["zero_rtt"] != false {
			t.Errorf("TCP request marked as validated: %v", r)
		}
		if r["level"] != "INFO" || !strings.HasPrefix(r["remote"].(string), "127.0.0.1:") {
			t.Errorf("record: %v", r)
		}
		if r["path"] == "/missing" {
			sawMissing = true
			if r["status"] != 404.0 || r["protocol"] != "HTTP/1.1" || r["method"] != "GET" || r["bytes"] != float64(len(body)) {
				t.Errorf("404 record: %v", r)
			}
		}
	}
	if !sawMissing {
		t.Error("no record for /missing")
	}

	// Closing the clients' connections brings the gauge back to zero.
	h1.CloseIdleConnections()
	h2.CloseIdleConnections()
	eventually(t, func() error {
		if v, _ := gatherMetrics(t, ts.Metrics()).value("turboretry_tcp_connections_active"); v != 0 {
			return errorf("%v TCP connections still counted", v)
		}
		return nil
	})
}

// TestConnInfoFromTransport shows what the QUIC side will do: put ConnInfo
// in the request context; the log, and whoami, report it.
func TestConnInfoFromTransport(t *testing.T) {
	logs := &syncBuffer{}
	s, _ := newServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	defer s.Close()
	req := httptest.NewRequest("GET", WhoamiPath, nil)
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/3.0", 3, 0
	req = req.WithContext(WithConnInfo(req.Context(), ConnInfo{RetryValidated: true, ZeroRTT: true}))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var me whoami
	if err := json.Unmarshal(rec.Body.Bytes(), &me); err != nil {
		t.Fatal(err)
	}
	if me.Protocol != "HTTP/3.0" || !me.RetryValidated || me.TokenValidated || !me.ZeroRTT {
		t.Errorf("whoami: %+v", me)
	}
	if rec.Header().Get("Alt-Svc") == "" {
		t.Error("no Alt-Svc")
	}
	recs := requestRecords(t, logs)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r["retry_validated"] != true || r["token_validated"] != false || r["zero_rtt"] != true || r["protocol"] != "HTTP/3.0" || r["status"] != 200.0 {
		t.Errorf("record: %v", r)
	}
	if v, _ := gatherMetrics(t, s.Metrics()).value("turboretry_http_requests_total", "protocol", "HTTP/3.0", "method", "GET", "code", "200"); v != 1 {
		t.Errorf("HTTP/3 GET 200 counted %v times, want 1", v)
	}
	if ci := ConnInfoFromContext(t.Context()); ci != (ConnInfo{}) {
		t.Errorf("empty context: %+v", ci)
	}
}

func TestAnnounce(t *testing.T) {
	ts := startServer(t, nil)
	h2, _ := ts.clients(t)
	get(t, h2, "GET", ts.URL()) // Serve has announced by the time it answers
	text := ts.logs.String()
	for _, w := range []string{
		`"url":"` + ts.URL() + `"`,
		"--origin-to-force-quic-on=" + strings.TrimSuffix(strings.TrimPrefix(ts.URL(), "https://"), "/"),
		"--ignore-certificate-errors-spki-list=" + ts.SPKIHash(),
	} {
		if !strings.Contains(text, w) {
			t.Errorf("log lacks %q:\n%s", w, text)
		}
	}
}
