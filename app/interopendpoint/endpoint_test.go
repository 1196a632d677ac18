package interopendpoint

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testcert"
)

// writeCerts writes the test certificate (internal/testcert: for localhost
// and the loopback addresses, its own root) as the runner lays
// certificates out: cert.pem, priv.key and ca.pem in dir.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	testcert.WriteFiles(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "priv.key"))
	certPEM, _, _ := testcert.PEM(t)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// listenLoopback binds the server's socket on a free port of 127.0.0.1
// (the server takes it, so no other process can take the port between).
func listenLoopback(t *testing.T) (*net.UDPConn, int) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return c, c.LocalAddr().(*net.UDPAddr).Port
}

// caseFiles are the files served in a test case: sizes as the runner's.
var caseFiles = map[string][]int{
	caseHandshake:    {1 << 10},
	caseTransfer:     {300 << 10, 1 << 20},
	caseRetry:        {10 << 10},
	caseResumption:   {5 << 10, 10 << 10},
	caseZeroRTT:      {32, 32, 32, 32},
	caseMulticonnect: {1 << 10, 1 << 10, 1 << 10},
	caseHTTP3:        {5 << 10, 500 << 10},
	caseKeyUpdate:    {1 << 20},
	caseV2:           {1 << 10},
	caseECN:          {100 << 10},
}

// serverCase is the server's TESTCASE for a client's (as the runner pairs
// them).
func serverCase(c string) string {
	if c == caseKeyUpdate {
		return caseTransfer
	}
	return c
}

// TestClientServer runs our client against our server in this process,
// over loopback, for the cases whose logic is ours (the runner's network
// scenarios and checks are exercised by `make interop-runner`), and checks
// that the downloads equal the served files and that both key logs were
// written.
func TestClientServer(t *testing.T) {
	for _, tc := range []string{caseHandshake, caseTransfer, caseRetry, caseResumption, caseZeroRTT,
		caseMulticonnect, caseHTTP3, caseKeyUpdate, caseV2, caseECN} {
		t.Run(tc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // hang guard
			defer cancel()
			dir := t.TempDir()
			certs, www, dl, logs := filepath.Join(dir, "certs"), filepath.Join(dir, "www"), filepath.Join(dir, "dl"), filepath.Join(dir, "logs")
			for _, d := range []string{certs, www, dl, logs} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeCerts(t, certs)
			sock, port := listenLoopback(t)
			var urls []string
			for i, size := range caseFiles[tc] {
				name := fmt.Sprintf("file-%d", i)
				data := make([]byte, size)
				_, _ = rand.Read(data)
				if err := os.WriteFile(filepath.Join(www, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
				urls = append(urls, fmt.Sprintf("https://localhost:%d/%s", port, name))
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			base := Config{
				CertFile: filepath.Join(certs, "cert.pem"), KeyFile: filepath.Join(certs, "priv.key"),
				CAFile: filepath.Join(certs, "ca.pem"), QlogDir: filepath.Join(logs, "qlog"), Logger: log,
			}
			srvCfg := base
			srvCfg.Role, srvCfg.TestCase, srvCfg.WWW = RoleServer, serverCase(tc), www
			srvCfg.Conn = sock
			srvCfg.KeyLogFile = filepath.Join(logs, "server-keys.log")
			sctx, stop := context.WithCancel(ctx)
			srvDone := make(chan error, 1)
			go func() { srvDone <- Run(sctx, srvCfg) }()
			defer func() {
				stop()
				if err := <-srvDone; err != nil {
					t.Errorf("server: %v", err)
				}
			}()
			cliCfg := base
			cliCfg.Role, cliCfg.TestCase, cliCfg.Requests, cliCfg.Downloads = RoleClient, tc, urls, dl
			cliCfg.KeyLogFile = filepath.Join(logs, "client-keys.log")
			if err := Run(ctx, cliCfg); err != nil {
				t.Fatalf("client: %v", err)
			}
			for i := range caseFiles[tc] {
				name := fmt.Sprintf("file-%d", i)
				want, _ := os.ReadFile(filepath.Join(www, name))
				got, err := os.ReadFile(filepath.Join(dl, name))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes downloaded (%v), want the %d served", name, len(got), err, len(want))
				}
			}
			for _, f := range []string{"server-keys.log", "client-keys.log"} {
				b, _ := os.ReadFile(filepath.Join(logs, f))
				if !strings.Contains(string(b), "SERVER_HANDSHAKE_TRAFFIC_SECRET") {
					t.Errorf("%s has no handshake secret", f)
				}
			}
			if qlogs, _ := filepath.Glob(filepath.Join(logs, "qlog", "*_server.sqlog")); len(qlogs) == 0 {
				t.Error("no server qlog written")
			}
			// The client's connections are closed, and with them their
			// qlog traces where the client closed them (http3's
			// ClientConn.CloseWithError ends its HTTP/3 recorder too:
			// without this wait, 1 of 20 runs found a cut qlog before
			// that, 0 of 20 after); a connection the server closed first
			// (CloseWithError then returns at once) ends its trace only
			// when its draining period ends (docs/testing.md, "qlog at
			// close").
			qlogs, _ := filepath.Glob(filepath.Join(logs, "qlog", "*_client.sqlog"))
			if len(qlogs) == 0 {
				t.Error("no client qlog written")
			}
			for _, f := range qlogs {
				waitQlogClosed(f)
				checkClientQlog(t, f)
			}
		})
	}
}

// checkClientQlog checks that f is a complete qlog (JSON-SEQ) of a client
// connection: the header, then events up to connection_closed.
// waitQlogClosed waits, at most 10 s, until the qlog file f holds its
// connection_closed event, ends with a whole record and has stopped
// growing: what its writer leaves when it is closed.
func waitQlogClosed(f string) {
	var last []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(f)
		if bytes.Equal(b, last) && bytes.HasSuffix(b, []byte("\n")) && bytes.Contains(b, []byte(`"transport:connection_closed"`)) {
			return
		}
		last = b
	}
}

func checkClientQlog(t *testing.T, f string) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[0] != 0x1e {
		t.Fatalf("%s: no record separator first", f)
	}
	names := map[string]int{}
	for i, rec := range bytes.Split(b[1:], []byte{0x1e}) {
		var v struct {
			Name  string `json:"name"`
			Trace struct {
				VantagePoint struct {
					Type string `json:"type"`
				} `json:"vantage_point"`
			} `json:"trace"`
		}
		if !bytes.HasSuffix(rec, []byte("\n")) || json.Unmarshal(rec, &v) != nil {
			t.Fatalf("%s: record %d is not one JSON object and a newline: %q", f, i, rec)
		}
		if i == 0 && v.Trace.VantagePoint.Type != "client" {
			t.Fatalf("%s: header %s", f, rec)
		}
		names[v.Name]++
	}
	for _, want := range []string{"transport:packet_sent", "transport:packet_received", "transport:connection_closed"} {
		if names[want] == 0 {
			t.Errorf("%s: no %s event", f, want)
		}
	}
}

func TestUnsupportedCases(t *testing.T) {
	for _, tc := range []struct {
		role Role
		name string
	}{
		{RoleServer, "unknown-1a2b3c4d"},
		{RoleClient, "unknown-1a2b3c4d"},
		{RoleServer, caseKeyUpdate}, // the runner runs keyupdate's server as transfer
		{RoleServer, ""},
		{"sim", caseHandshake},
	} {
		// Unsupported is decided before anything is touched: no
		// certificates, files or network exist here.
		err := Run(context.Background(), Config{Role: tc.role, TestCase: tc.name, KeyLogFile: "/nonexistent/dir/keys.log"})
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s %q: %v, want ErrUnsupported", tc.role, tc.name, err)
		}
	}
	for _, c := range []string{caseHandshake, caseTransfer, caseChaCha20, caseRetry, caseResumption, caseZeroRTT,
		caseHTTP3, caseMulticonnect, caseECN, caseV2, caseConnectionMigration, caseVersionNegotiation} {
		if !Supports(RoleServer, c) || !Supports(RoleClient, c) {
			t.Errorf("%s not supported by both roles", c)
		}
	}
	if !Supports(RoleClient, caseKeyUpdate) {
		t.Error("keyupdate not supported by the client")
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{
		"ROLE": "client", "TESTCASE": "transfer", "REQUESTS": "https://server4:443/a  https://server4:443/b",
		"SSLKEYLOGFILE": "/logs/keys.log", "QLOGDIR": "/logs/qlog/",
	}
	c := FromEnv(func(k string) string { return env[k] })
	if c.Role != RoleClient || c.TestCase != caseTransfer || len(c.Requests) != 2 || c.Requests[1] != "https://server4:443/b" ||
		c.KeyLogFile != "/logs/keys.log" || c.QlogDir != "/logs/qlog/" || c.WWW != "/www" || c.Downloads != "/downloads" ||
		c.CertFile != "/certs/cert.pem" || c.Addr != "[::]:443" {
		t.Errorf("FromEnv: %+v", c)
	}
}

func TestPickPreferredAddress(t *testing.T) {
	ipnet := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	pa, err := pickPreferredAddress([]net.Addr{ipnet("127.0.0.1/8"), ipnet("::1/128"), ipnet("fe80::1/64"),
		ipnet("198.18.100.100/24"), ipnet("fd00:cafe:cafe:100::100/64"), ipnet("198.18.100.101/24")}, 443)
	if err != nil {
		t.Fatal(err)
	}
	if pa.IPv4 != netip.MustParseAddrPort("198.18.100.100:443") || pa.IPv6 != netip.MustParseAddrPort("[fd00:cafe:cafe:100::100]:443") {
		t.Errorf("preferred address %+v", pa)
	}
	if _, err := pickPreferredAddress([]net.Addr{ipnet("127.0.0.1/8"), ipnet("fe80::1/64")}, 443); err == nil {
		t.Error("a preferred address from loopback and link-local addresses only")
	}
}

func TestOpenFileStaysInRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if f, err := openFile(root, "/f"); err != nil {
		t.Errorf("/f: %v", err)
	} else {
		f.Close()
	}
	// Clean makes a rooted path stay under the root: /../f is /f.
	for _, p := range []string{"/sub", "/", "/missing", "/sub/../../etc/passwd", "/../../etc/passwd"} {
		if f, err := openFile(root, p); err == nil {
			f.Close()
			t.Errorf("%s opened", p)
		}
	}
}
