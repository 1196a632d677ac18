package main

import (
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
)

// limitNames are serve's limit flags; help must list each with its default.
var limitNames = []string{"max-conns", "max-handshakes", "accept-backlog", "max-streams", "max-uni-streams",
	"handshake-timeout", "conn-send-buffer", "send-buffer", "recv-buffer", "retry-threshold", "retry-budget",
	"prefix-admission", "prefix-len4", "prefix-len6", "prefix-rate", "prefix-burst", "returning-reserve", "max-prefixes",
	"max-header-bytes", "conn-header-bytes", "header-timeout", "uni-stream-timeout", "write-stall-timeout"}

func parseLimits(t *testing.T, args ...string) (fileserver.Limits, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	get := limitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return fileserver.Limits{}, err
	}
	return get()
}

func TestServeLimitFlags(t *testing.T) {
	l, err := parseLimits(t)
	if err != nil || l != fileserver.DefaultLimits() {
		t.Fatalf("no flags: %+v, %v; want the defaults", l, err)
	}
	l, err = parseLimits(t, "--max-conns", "0", "--max-handshakes", "9", "--accept-backlog", "8", "--max-streams", "7",
		"--max-uni-streams", "6", "--handshake-timeout", "3s", "--idle-timeout", "90s", "--conn-send-buffer", "2MiB", "--send-buffer", "1GiB",
		"--recv-buffer", "65536", "--retry-threshold", "0", "--retry-budget", "1MiB", "--max-header-bytes", "16KiB",
		"--conn-header-bytes", "32KiB", "--header-timeout", "0", "--uni-stream-timeout", "2s", "--write-stall-timeout", "30s",
		"--prefix-admission=false", "--prefix-len4", "20", "--prefix-len6", "48", "--prefix-rate", "2.5", "--prefix-burst", "0",
		"--returning-reserve", "0.25", "--max-prefixes", "100")
	want := fileserver.Limits{MaxConnections: 0, MaxHandshakes: 9, AcceptBacklog: 8, MaxStreams: 7, MaxUniStreams: 6,
		HandshakeTimeout: 3 * time.Second, IdleTimeout: 90 * time.Second, ConnSendBuffer: 2 << 20, SendBuffer: 1 << 30, ReceiveBuffer: 65536,
		RetryThreshold: 0, UnvalidatedBudget: 1 << 20, MaxHeaderBytes: 16 << 10, ConnHeaderBytes: 32 << 10,
		HeaderTimeout: 0, UniStreamTimeout: 2 * time.Second, WriteStallTimeout: 30 * time.Second,
		PrefixAdmission: false, PrefixLen4: 20, PrefixLen6: 48, PrefixRate: 2.5, PrefixBurst: 0, ReturningReserve: 0.25, MaxPrefixes: 100}
	if err != nil || l != want {
		t.Fatalf("flags: %+v, %v\nwant %+v", l, err, want)
	}

	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--max-uni-streams", "2"}, "need 3 unidirectional streams"},
		{[]string{"--max-header-bytes", "12XB"}, "invalid size"},
		{[]string{"--conn-header-bytes", "1KiB"}, "must hold one header section"},
		{[]string{"--max-conns", "-1"}, "0 means none"},
		{[]string{"--accept-backlog", "0"}, "at least 1"},
		{[]string{"--send-buffer", "0"}, "must be positive"},
		{[]string{"--max-header-bytes", "4GiB", "--conn-header-bytes", "4GiB"}, "above 2 GiB"},
		{[]string{"--prefix-len4", "33"}, "source prefix lengths"},
		{[]string{"--prefix-rate", "-1"}, "prefix rate and burst"},
		{[]string{"--returning-reserve", "1"}, "reserve for returning clients"},
		{[]string{"--max-prefixes", "0"}, "at least 1 source prefix"},
	} {
		code, _, errOut := runCLI(append([]string{"serve", "--state-dir", state}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}

	code, out, _ := runCLI("help", "serve")
	for _, name := range limitNames {
		if code != exitOK || !strings.Contains(out, "-"+name+" ") || !strings.Contains(out, "docs/fileserver.md") {
			t.Errorf("help serve lacks -%s:\n%s", name, out)
		}
	}
	for _, d := range []string{"(default 4096)", "(default 64KiB)", "(default 1m0s)", "(default 8MiB)"} {
		if !strings.Contains(out, d) {
			t.Errorf("help serve lacks %q", d)
		}
	}
}

// TestServeLimitsApplied: the flags reach the running server: a header
// over --max-header-bytes gets 431 over HTTPS.
func TestServeLimitsApplied(t *testing.T) {
	srv := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0", "--max-header-bytes", "4KiB", "--conn-header-bytes", "8KiB")
	tr := &http.Transport{TLSClientConfig: srv.tlsConfig()}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	defer tr.CloseIdleConnections()
	for size, want := range map[int]int{100: 200, 16 << 10: http.StatusRequestHeaderFieldsTooLarge} {
		req, err := http.NewRequest("GET", srv.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Pad", strings.Repeat("x", size))
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%d-byte header: %d, want %d", size, resp.StatusCode, want)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]uint64{"0": 0, "4096": 4096, "64KiB": 64 << 10, "16MiB": 16 << 20, "2GiB": 2 << 30} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "KiB", "-1", "+5", "1.5MiB", "1 MiB", "1kib", "1KB", "0x10", "18446744073709551616", "17179869184GiB"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for v, want := range map[byteSize]string{0: "0", 1000: "1000", 1024: "1KiB", 3 << 20: "3MiB", 1<<30 + 1: "1073741825"} {
		if got := v.String(); got != want {
			t.Errorf("String(%d) = %q, want %q", uint64(v), got, want)
		}
	}
}

// FuzzParseByteSize: a size that parses prints back to a string that
// parses to the same size; nothing panics.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"0", "64KiB", "16MiB", "1GiB", "12XB", "-1", "99999999999999999999GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseByteSize(s)
		if err != nil {
			return
		}
		b := byteSize(v)
		if back, err := parseByteSize(b.String()); err != nil || back != v {
			t.Fatalf("%q = %d prints as %q, which parses to %d, %v", s, v, b.String(), back, err)
		}
	})
}
