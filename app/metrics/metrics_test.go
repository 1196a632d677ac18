package metrics

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/datapath"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/offload/split"
	"github.com/turboretry/turboretry/offload/xdp"
	"github.com/turboretry/turboretry/quic"
)

// gather registers cs in a fresh registry and gathers it.
func gather(t *testing.T, cs ...prometheus.Collector) (map[string]*dto.MetricFamily, error) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry() // also checks Describe against Collect
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out, err
}

// sample returns the value of the series of name with exactly labels
// (name, value pairs), and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, lp := range m.GetLabel() { // sorted by name, as given
			if lp.GetName() != labels[2*i] || lp.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if match {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestAddressValidationCollector(t *testing.T) {
	st := quic.AddressValidationStats{
		RetriesSent: 7, InvalidTokenCloses: 2, InitialsDropped: 1, HandshakesInFlight: 3,
		PathMigrations: 4, PathValidationFailures: 1,
		TokensAccepted: map[string]uint64{"agent/retry": 5, "host/new_token": 6},
		TokensRejected: map[string]uint64{"host/bad_tid_mac": 8, "agent/some_future_reason": 1},
	}
	fams, err := gather(t, NewAddressValidationCollector(func() quic.AddressValidationStats { return st }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_quic_retries_sent_total", nil, 7},
		{"turboretry_quic_invalid_token_closes_total", nil, 2},
		{"turboretry_quic_initials_dropped_total", nil, 1},
		{"turboretry_quic_handshakes_in_flight", nil, 3},
		{"turboretry_quic_path_migrations_total", nil, 4},
		{"turboretry_quic_path_validation_failures_total", nil, 1},
		{"turboretry_quic_tokens_accepted_total", []string{"source", "agent", "type", "retry"}, 5},
		{"turboretry_quic_tokens_accepted_total", []string{"source", "host", "type", "new_token"}, 6},
		{"turboretry_quic_tokens_accepted_total", []string{"source", "host", "type", "retry"}, 0},
		{"turboretry_quic_tokens_rejected_total", []string{"reason", "bad_tid_mac", "source", "host"}, 8},
		{"turboretry_quic_tokens_rejected_total", []string{"reason", "rscid_mismatch", "source", "unknown"}, 0},
		// A key outside the known vocabulary is still exported.
		{"turboretry_quic_tokens_rejected_total", []string{"reason", "some_future_reason", "source", "agent"}, 1},
	} {
		if v, ok := sample(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	// Every source and reason from the start: 3 sources x (the reasons + 1 extra).
	if n := len(fams["turboretry_quic_tokens_rejected_total"].GetMetric()); n != 3*len(quic.TokenRejectReasons())+1 {
		t.Errorf("%d rejection series, want %d", n, 3*len(quic.TokenRejectReasons())+1)
	}
}

func TestOffloadCollectorXDP(t *testing.T) {
	hb := time.Unix(1700000000, 500_000_000)
	var dp datapath.Stats
	dp.Agent.Packets[agent.ReasonRetry] = 4
	dp.Agent.EgressLearned = 2
	dp.Agent.CacheErrors = 1
	dp.Heartbeat, dp.Paused = hb, true
	dp.XDP[xdp.PassHit] = 9
	dp.FramesTX, dp.Forwarded = 3, 5
	fams, err := gather(t, NewOffloadCollector(func() (host.Stats, bool, error) {
		return host.Stats{Mode: host.ModeXDP, Datapath: dp}, true, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_agent_packets_total", []string{"reason", "retry", "verdict", "send_reply"}, 4},
		{"turboretry_agent_packets_total", []string{"reason", "retry_token", "verdict", "forward"}, 0},
		{"turboretry_agent_egress_packets_total", []string{"result", "learned"}, 2},
		{"turboretry_agent_cache_insert_errors_total", nil, 1},
		{"turboretry_agent_heartbeat_timestamp_seconds", nil, 1700000000.5},
		{"turboretry_agent_paused", nil, 1},
		{"turboretry_xdp_packets_total", []string{"reason", "pass_hit"}, 9},
		{"turboretry_afxdp_frames_total", []string{"direction", "tx", "result", "sent"}, 3},
		{"turboretry_afxdp_frames_total", []string{"direction", "rx", "result", "forwarded"}, 5},
	} {
		if v, ok := sample(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if n := len(fams["turboretry_agent_packets_total"].GetMetric()); n != agent.NumReasons-1 {
		t.Errorf("%d agent series, want every reason: %d", n, agent.NumReasons-1)
	}
	if n := len(fams["turboretry_xdp_packets_total"].GetMetric()); n != xdp.NumReasons {
		t.Errorf("%d XDP series, want %d", n, xdp.NumReasons)
	}
	if _, ok := fams["turboretry_split_announced_cids_total"]; ok {
		t.Error("split-mode metrics exported in xdp mode")
	}
}

func TestOffloadCollectorSplitAndNone(t *testing.T) {
	fams, err := gather(t, NewOffloadCollector(func() (host.Stats, bool, error) {
		return host.Stats{Mode: host.ModeSplit, Announcer: announce.AnnouncerStats{CIDs: 6, Messages: 2, Dropped: 1, SendErrors: 3}}, true, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"turboretry_split_announced_cids_total":       6,
		"turboretry_split_announce_messages_total":    2,
		"turboretry_split_announce_dropped_total":     1,
		"turboretry_split_announce_send_errors_total": 3,
	} {
		if v, ok := sample(fams, name); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if _, ok := fams["turboretry_agent_packets_total"]; ok {
		t.Error("datapath metrics exported in split mode")
	}
	fams, err = gather(t, NewOffloadCollector(func() (host.Stats, bool, error) { return host.Stats{}, false, nil }))
	if err != nil || len(fams) != 0 {
		t.Fatalf("without an offload: %d families, %v; want none", len(fams), err)
	}
}

// TestCollectorErrorKeepsTheRest: when the XDP counters cannot be read the
// scrape reports it, and the agent's and the split agent's own counters
// are still there.
func TestCollectorErrorKeepsTheRest(t *testing.T) {
	var st split.Stats
	st.HostSent = 3
	st.Datapath.Agent.Packets[agent.ReasonRetry] = 1
	st.Control.Rejected[announce.ReasonMAC] = 2
	fail := errors.New("xdp: program closed")
	c := NewSplitAgentCollector(func() (split.Stats, error) { return st, fail })
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	Handler(reg, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	for _, want := range []string{
		`turboretry_split_host_frames_total{result="sent"} 3`,
		`turboretry_agent_packets_total{reason="retry",verdict="send_reply"} 1`,
		`turboretry_announce_rejected_total{reason="bad_mac"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "turboretry_xdp_packets_total{") {
		t.Errorf("XDP counters exported although they could not be read:\n%s", body)
	}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), fail.Error()) {
		t.Errorf("Gather: %v, want the XDP error", err)
	}
}

// TestHandler: GET and HEAD only, never cached, go_* and process_* on a
// NewRegistry, OpenMetrics when asked for.
func TestHandler(t *testing.T) {
	h := Handler(NewRegistry(), slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET: %d, headers %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{"\ngo_goroutines ", "\nprocess_cpu_seconds_total ", "\ngo_gc_duration_seconds_count "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("OpenMetrics requested, got %q", ct)
	}
	if resp, err = http.Post(srv.URL, "text/plain", nil); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestRetryRoundTripPolicy: the wrapped policy decides as the inner one
// and records valid retry tokens only, by source.
func TestRetryRoundTripPolicy(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := NewQUICHistograms(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := h.Policy(quic.AlwaysRetry())
	for _, in := range []quic.InitialInfo{
		{Token: quic.TokenInfo{Kind: quic.TokenRetry, Valid: true, Source: "agent", IssuedAt: time.Now().Add(-20 * time.Millisecond)}},
		{Token: quic.TokenInfo{Kind: quic.TokenRetry, Valid: true, Source: "host", IssuedAt: time.Now().Add(time.Hour)}}, // clock ahead: 0
		{Token: quic.TokenInfo{Kind: quic.TokenRetry, Source: "host"}},                                                   // invalid
		{Token: quic.TokenInfo{Kind: quic.TokenNewToken, Valid: true, Source: "host", IssuedAt: time.Now()}},
		{},
	} {
		want := quic.AlwaysRetry()(&in)
		if got := p(&in); got != want {
			t.Errorf("%+v: decision %v, want %v", in.Token, got, want)
		}
	}
	got, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	sums := map[string]float64{}
	for _, f := range got {
		for _, m := range f.GetMetric() {
			if f.GetName() == "turboretry_quic_retry_round_trip_seconds" {
				counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
				sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	if counts["agent"] != 1 || counts["host"] != 1 || sums["agent"] < 0.02 || sums["host"] != 0 {
		t.Fatalf("round trips %v, sums %v; want one each, agent >= 20 ms, host 0", counts, sums)
	}
}

func TestTransportCollector(t *testing.T) {
	st := quic.TransportStats{
		Connections: 5, Handshaking: 2, UnvalidatedBytes: 4096, AcceptQueue: 1,
		SendBuffered: 100, SendBufferedPeak: 300, ReceiveBuffered: 50, ReceiveOutOfOrder: 20, SendBudgetWaits: 7,
		Refused:          map[string]uint64{quic.RefusedHandshakeSlots.String(): 3},
		ClosedByLimit:    map[string]uint64{quic.ClosedTooManyGaps.String(): 4},
		DatagramsDropped: map[string]uint64{quic.DropMalformed.String(): 9, "a_future_reason": 1},
		PanicsRecovered:  1,
		Prefixes:         12, PrefixTableBytes: 1680,
	}
	fams, err := gather(t, NewTransportCollector(func() quic.TransportStats { return st }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_quic_transport_connections", nil, 5},
		{"turboretry_quic_transport_handshaking", nil, 2},
		{"turboretry_quic_unvalidated_bytes", nil, 4096},
		{"turboretry_quic_accept_queue", nil, 1},
		{"turboretry_quic_send_buffered_bytes", nil, 100},
		{"turboretry_quic_send_buffered_peak_bytes", nil, 300},
		{"turboretry_quic_receive_buffered_bytes", nil, 50},
		{"turboretry_quic_receive_out_of_order_bytes", nil, 20},
		{"turboretry_quic_closed_by_limit_total", []string{"limit", "too_many_gaps"}, 4},
		{"turboretry_quic_closed_by_limit_total", []string{"limit", "receive_memory"}, 0},
		{"turboretry_quic_send_budget_waits_total", nil, 7},
		{"turboretry_quic_refused_total", []string{"reason", "handshake_slots_full"}, 3},
		{"turboretry_quic_refused_total", []string{"reason", "connection_cap"}, 0},
		{"turboretry_quic_datagrams_dropped_total", []string{"reason", "malformed"}, 9},
		{"turboretry_quic_datagrams_dropped_total", []string{"reason", "initial_too_small"}, 0},
		{"turboretry_quic_datagrams_dropped_total", []string{"reason", "a_future_reason"}, 1},
		{"turboretry_quic_panics_recovered_total", nil, 1},
		{"turboretry_quic_admission_prefixes", nil, 12},
		{"turboretry_quic_admission_prefix_table_bytes", nil, 1680},
		{"turboretry_quic_refused_total", []string{"reason", "prefix_rate"}, 0},
	} {
		if v, ok := sample(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	// Every reason quic names, from the start.
	if len(refusalLabels) < 8 || len(dropLabels) < 5 {
		t.Fatalf("reason labels %v %v: the list ended early", refusalLabels, dropLabels)
	}
	if n := len(fams["turboretry_quic_refused_total"].GetMetric()); n != len(refusalLabels) {
		t.Errorf("%d refusal series, want %d", n, len(refusalLabels))
	}
}

func TestHTTP3Collector(t *testing.T) {
	st := http3.ServerStats{ConnsAccepted: 4, ConnsActive: 2, Requests: 9, RequestsActive: 1, HeaderBytesReserved: 512, HandlerPanics: 1}
	st.Refused[http3.RefusedHeaderTimeout] = 3
	fams, err := gather(t, NewHTTP3Collector(func() http3.ServerStats { return st }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_http3_connections_accepted_total", nil, 4},
		{"turboretry_http3_connections_active", nil, 2},
		{"turboretry_http3_requests_total", nil, 9},
		{"turboretry_http3_requests_active", nil, 1},
		{"turboretry_http3_header_bytes_reserved", nil, 512},
		{"turboretry_http3_handler_panics_total", nil, 1},
		{"turboretry_http3_refused_total", []string{"reason", "header_timeout"}, 3},
		{"turboretry_http3_refused_total", []string{"reason", "write_stall"}, 0},
	} {
		if v, ok := sample(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if n := len(fams["turboretry_http3_refused_total"].GetMetric()); n != int(http3.NumRefusals) {
		t.Errorf("%d refusal series, want %d", n, http3.NumRefusals)
	}
}

func TestReuseportCollector(t *testing.T) {
	st := ReuseportSnapshot{Workers: 4, Mode: reuseport.ModeSteered,
		Stats: reuseport.Stats{Steered: 10, Hashed: 3, Undecodable: 2, Truncated: 1}}
	fams, err := gather(t, NewReuseportCollector(func() (ReuseportSnapshot, bool, error) { return st, true, nil }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"turboretry_reuseport_workers", []string{"mode", "steered"}, 4},
		{"turboretry_reuseport_packets_total", []string{"decision", "steered"}, 10},
		{"turboretry_reuseport_packets_total", []string{"decision", "hashed"}, 3},
		{"turboretry_reuseport_packets_total", []string{"decision", "undecodable"}, 2},
		{"turboretry_reuseport_packets_total", []string{"decision", "truncated"}, 1},
		{"turboretry_reuseport_packets_total", []string{"decision", "no_socket"}, 0},
	} {
		if v, ok := sample(fams, c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	fams, err = gather(t, NewReuseportCollector(func() (ReuseportSnapshot, bool, error) { return st, false, nil }))
	if err != nil || len(fams) != 0 {
		t.Errorf("not bound: %d families, %v", len(fams), err)
	}
	_, err = gather(t, NewReuseportCollector(func() (ReuseportSnapshot, bool, error) { return st, true, errors.New("map gone") }))
	if err == nil {
		t.Error("a counter read error did not fail the scrape")
	}
}
