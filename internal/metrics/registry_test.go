package metrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestExpositionExact(t *testing.T) {
	r := NewRegistry()
	req, err := r.NewCounterVec("turboretry_http_requests_total", "HTTP requests served.", "protocol", "method", "code")
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.NewGauge("turboretry_tcp_connections_active", "Open TCP connections.")
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.NewCounter("a_total", "First by name.\nSecond line with \\ backslash.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewGaugeVec("empty_vec", "Never used, so not exported.", "x"); err != nil {
		t.Fatal(err)
	}
	inc := func(n int, vals ...string) {
		ctr, err := req.With(vals...)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			ctr.Inc()
		}
	}
	inc(3, "HTTP/2.0", "GET", "200")
	inc(1, "HTTP/1.1", "GET", "404")
	inc(2, "HTTP/1.1", "GET", "200")
	inc(1, "HTTP/2.0", "HEAD", "200")
	g.Set(5)
	g.Dec()
	c.Add(7)

	want := `# HELP a_total First by name.\nSecond line with \\ backslash.
# TYPE a_total counter
a_total 7
# HELP turboretry_http_requests_total HTTP requests served.
# TYPE turboretry_http_requests_total counter
turboretry_http_requests_total{protocol="HTTP/1.1",method="GET",code="200"} 2
turboretry_http_requests_total{protocol="HTTP/1.1",method="GET",code="404"} 1
turboretry_http_requests_total{protocol="HTTP/2.0",method="GET",code="200"} 3
turboretry_http_requests_total{protocol="HTTP/2.0",method="HEAD",code="200"} 1
# HELP turboretry_tcp_connections_active Open TCP connections.
# TYPE turboretry_tcp_connections_active gauge
turboretry_tcp_connections_active 4
`
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
	// Deterministic: a second scrape is identical.
	if again := string(r.AppendText(nil)); again != want {
		t.Errorf("second scrape differs:\n%s", again)
	}
}

func TestLabelValueEscaping(t *testing.T) {
	r := NewRegistry()
	v, err := r.NewGaugeVec("g", "h", "path")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`a"b`, `c\d`, "e\nf", "bad\xffutf8", "plain"} {
		g, err := v.With(s)
		if err != nil {
			t.Fatal(err)
		}
		g.Add(-2)
	}
	// The invalid spelling and its sanitized form are the same series.
	g, _ := v.With("bad\uFFFDutf8")
	g.Inc()
	want := "# HELP g h\n# TYPE g gauge\n" +
		`g{path="a\"b"} -2` + "\n" +
		`g{path="bad` + "\uFFFD" + `utf8"} -1` + "\n" +
		`g{path="c\\d"} -2` + "\n" +
		`g{path="e\nf"} -2` + "\n" +
		`g{path="plain"} -2` + "\n"
	if got := string(r.AppendText(nil)); got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestRegistrationErrors(t *testing.T) {
	r := NewRegistry()
	if _, err := r.NewCounter("ok_total", ""); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		fn   func() error
		msg  string
	}{
		{"duplicate", func() error { _, err := r.NewGauge("ok_total", ""); return err }, "registered twice"},
		{"bad name", func() error { _, err := r.NewCounter("1abc", ""); return err }, "invalid metric name"},
		{"empty name", func() error { _, err := r.NewCounter("", ""); return err }, "invalid metric name"},
		{"dash", func() error { _, err := r.NewCounter("a-b", ""); return err }, "invalid metric name"},
		{"bad label", func() error { _, err := r.NewCounterVec("x", "", "a b"); return err }, "invalid label name"},
		{"reserved label", func() error { _, err := r.NewCounterVec("x", "", "__name"); return err }, "invalid label name"},
		{"dup label", func() error { _, err := r.NewGaugeVec("x", "", "a", "a"); return err }, "duplicate label"},
		{"no labels", func() error { _, err := r.NewCounterVec("x", ""); return err }, "at least one label"},
	}
	for _, c := range cases {
		err := c.fn()
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.msg)
		}
	}
	v, err := r.NewCounterVec("v_total", "", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.With("only one"); err == nil {
		t.Error("With with too few values succeeded")
	}
	if _, err := v.With("1", "2", "3"); err == nil {
		t.Error("With with too many values succeeded")
	}
	if strings.Contains(string(r.AppendText(nil)), "v_total") {
		t.Error("failed With created a series")
	}
}

func TestConcurrentIncrements(t *testing.T) {
	r := NewRegistry()
	v, err := r.NewCounterVec("c_total", "", "k")
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				c, err := v.With([]string{"even", "odd"}[(w+i)%2])
				if err != nil {
					t.Error(err)
					return
				}
				c.Inc()
				if i%100 == 0 {
					r.AppendText(nil) // scrapes race with increments
				}
			}
		}()
	}
	wg.Wait()
	want := "# HELP c_total \n# TYPE c_total counter\nc_total{k=\"even\"} 4000\nc_total{k=\"odd\"} 4000\n"
	if got := string(r.AppendText(nil)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	c, _ := r.NewCounter("hits_total", "Hits.")
	c.Inc()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ContentType {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if want := "# HELP hits_total Hits.\n# TYPE hits_total counter\nhits_total 1\n"; string(body) != want {
		t.Errorf("body %q", body)
	}
	resp, err = http.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d", resp.StatusCode)
	}
}

func BenchmarkCounterInc(b *testing.B) {
	r := NewRegistry()
	c, _ := r.NewCounter("c_total", "")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Inc()
		}
	})
}

func BenchmarkCounterVecWith(b *testing.B) {
	r := NewRegistry()
	v, _ := r.NewCounterVec("c_total", "", "protocol", "method", "code")
	b.ReportAllocs()
	for b.Loop() {
		c, _ := v.With("HTTP/2.0", "GET", "200")
		c.Inc()
	}
}

func BenchmarkAppendText(b *testing.B) {
	r := NewRegistry()
	v, _ := r.NewCounterVec("c_total", "help", "protocol", "method", "code")
	for _, p := range []string{"HTTP/1.1", "HTTP/2.0", "HTTP/3.0"} {
		for _, code := range []string{"200", "206", "304", "404"} {
			c, _ := v.With(p, "GET", code)
			c.Inc()
		}
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendText(buf[:0])
	}
}

func TestWithExistingSeriesDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	v, _ := r.NewCounterVec("c_total", "", "protocol", "method", "code")
	if _, err := v.With("HTTP/2.0", "GET", "200"); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		c, _ := v.With("HTTP/2.0", "GET", "200")
		c.Inc()
	})
	if allocs != 0 {
		t.Errorf("With on an existing series: %v allocations", allocs)
	}
}
