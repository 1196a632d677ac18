package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/quic"
)

// The server's preferred address (RFC 9000 section 9.6) between our stack
// and ngtcp2 0.12.1's examples, both ways. 127.0.0.2 is a loopback
// address of its own on Linux, so the move is a real change of the
// server's address.

// migrationWait bounds the wait for a migration that happens in the
// background once the handshake is confirmed (a hang guard).
const migrationWait = 10 * time.Second

// TestOurClientMovesToNgtcp2PreferredAddress: gtlsserver advertises
// 127.0.0.2 as its preferred address; our HTTP/3 client validates the path
// there and moves, and the next request travels over it.
func TestOurClientMovesToNgtcp2PreferredAddress(t *testing.T) {
	server := findPeer(t, "gtlsserver")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	dir := t.TempDir()
	keyFile, certFile, pool := writeSelfSignedCert(t, dir)
	root := t.TempDir()
	sum := writeRandomFile(t, root, "blob.bin", blobSize)
	var pref string
	p, port := startPeerOnFreePort(ctx, t, server, func(port int) []string {
		pref = fmt.Sprintf("127.0.0.2:%d", freeUDPPort(t))
		return []string{"--preferred-ipv4-addr=" + pref,
			"-d", root, "--no-quic-dump", "--no-http-dump", "--timeout=10s",
			"127.0.0.1", fmt.Sprint(port), keyFile, certFile}
	})
	defer func() {
		if t.Failed() {
			p.logTail(t, 40)
		}
	}()

	var mu sync.Mutex
	var conn *quic.Conn
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		QUICConfig:      &quic.Config{MigrateToPreferredAddress: true},
		Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
			c, err := quic.DialAddrEarly(ctx, addr, tlsConf, conf)
			mu.Lock()
			conn = c
			mu.Unlock()
			return c, err
		},
	}
	defer tr.Close()
	url := fmt.Sprintf("https://127.0.0.1:%d/blob.bin", port)
	status, _, body := fetchHTTP3(ctx, t, tr, url)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	checkSameContent(t, "first download", body, blobSize, sum)
	mu.Lock()
	c := conn
	mu.Unlock()
	testutil.WaitValue(t, "the move to the preferred address "+pref, migrationWait,
		func() string { return c.RemoteAddr().String() }, func(addr string) bool { return addr == pref })
	status, _, body = fetchHTTP3(ctx, t, tr, url)
	if status != http.StatusOK {
		t.Fatalf("status %d after the move", status)
	}
	checkSameContent(t, "download over the preferred address", body, blobSize, sum)
	for _, line := range ngtcp2Problems(p.output(t)) {
		t.Errorf("gtlsserver reported: %s", line)
	}
}

// TestNgtcp2ClientMovesToOurPreferredAddress: our HTTP/3 server on
// 0.0.0.0 advertises 127.0.0.2 as its preferred address; gtlsclient moves
// there (it does by default, from the socket it already uses) and the
// download completes. The server answers from the address the client
// sends to and follows it to the new path. (gtlsclient moves only within
// its address family.)
func TestNgtcp2ClientMovesToOurPreferredAddress(t *testing.T) {
	client := findPeer(t, "gtlsclient")
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()

	dir := t.TempDir()
	keyFile, certFile, _ := writeSelfSignedCert(t, dir)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	sum := writeRandomFile(t, root, "blob.bin", blobSize)
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	qt := &quic.Transport{Conn: udp, AddressValidation: &quic.AddressValidationConfig{Policy: quic.NeverRetry()}}
	defer qt.Close()
	pref := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port)
	ln, err := qt.ListenEarly(http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		&quic.Config{PreferredAddress: &quic.PreferredAddress{IPv4: pref}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []*quic.Conn
	srv := &http3.Server{
		Handler: http.FileServer(http.Dir(root)),
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			return ctx
		},
	}
	go func() { _ = srv.ServeListener(ln) }()
	defer srv.Close()

	dl := t.TempDir()
	p := startPeer(ctx, t, client,
		"--exit-on-all-streams-close", "--download="+dl,
		"--no-http-dump", "--timeout=10s", "--handshake-timeout=5s",
		"127.0.0.1", fmt.Sprint(port), fmt.Sprintf("https://127.0.0.1:%d/blob.bin", port))
	if err := p.wait(ctx); err != nil {
		t.Errorf("gtlsclient: %v", err)
	}
	out := p.output(t)
	defer func() {
		if t.Failed() {
			p.logTail(t, 60)
		}
	}()
	for _, line := range ngtcp2Problems(out) {
		t.Errorf("gtlsclient reported: %s", line)
	}
	got, err := os.ReadFile(filepath.Join(dl, "blob.bin"))
	if err != nil {
		t.Fatalf("gtlsclient saved nothing: %v", err)
	}
	checkSameContent(t, "downloaded blob.bin", got, blobSize, sum)
	// ngtcp2's log names the path of every datagram: it must have taken
	// datagrams from the preferred address (which our wildcard-bound
	// server sends from there, local_address.go), and it keeps no others.
	fromPref := fmt.Sprintf("remote=[%s]:%d", pref.Addr(), pref.Port())
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Received packet:") && strings.Contains(line, fromPref) {
			n++
		}
	}
	if n == 0 {
		t.Errorf("gtlsclient received no datagram from the preferred address %s", pref)
	}
	if n := qt.AddressValidationStats().PathMigrations; n < 1 {
		t.Errorf("the server followed the client to %d new addresses, want at least 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
}
