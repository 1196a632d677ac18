package interop

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/http3"
)

// TestStartServerServesHTTP3 checks the harness with our own client, so
// that it is tested where no peer is installed: the server is reachable
// over HTTP/3 as soon as StartServer returns, and the access record of
// the request can be read back.
func TestStartServerServesHTTP3(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()
	root := t.TempDir()
	sum := writeRandomFile(t, root, "blob.bin", 64<<10)
	srv, err := StartServer(ctx, fileserver.Config{Root: root, Retry: fileserver.RetryNever, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: serverPool(t, srv)}}
	defer tr.Close()
	_, _, body := fetchHTTP3(ctx, t, tr, srv.URL()+"blob.bin")
	checkSameContent(t, "body", body, 64<<10, sum)

	rec, err := waitRequest(ctx, srv, "/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Protocol != "HTTP/3.0" || rec.Status != 200 || rec.Bytes != 64<<10 || rec.RetryValidated {
		t.Errorf("access record %+v, want HTTP/3.0 200 65536 bytes without Retry", rec)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if !strings.Contains(srv.Log(), `"msg":"stopped"`) {
		t.Errorf("no graceful stop in the log:\n%s", srv.Log())
	}
}

// serverPool trusts the server's self-signed certificate, which its state
// directory holds.
func serverPool(t *testing.T, srv *Server) *x509.CertPool {
	t.Helper()
	conf := srv.TLSConfig()
	cert, err := conf.GetCertificate(&tls.ClientHelloInfo{ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return pool
}

// TestOurClientRetryHook is the Retry hook of the harness exercised with
// our own client: with Retry: always, a request must be logged with
// retry_validated=true.
func TestOurClientRetryHook(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()
	srv, err := StartServer(ctx, fileserver.Config{Retry: fileserver.RetryAlways, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: serverPool(t, srv)}}
	defer tr.Close()
	if status, _, _ := fetchHTTP3(ctx, t, tr, srv.URL()); status != http.StatusOK {
		t.Fatalf("GET /: status %d", status)
	}
	rec, err := waitRequest(ctx, srv, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.RetryValidated {
		t.Errorf("retry_validated=false with Retry: always: %+v", rec)
	}
}

func TestStartServerErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), peerTestTimeout)
	defer cancel()
	if _, err := StartServer(ctx, fileserver.Config{}); err == nil {
		t.Error("no error without a state directory")
	}
	if _, err := StartServer(ctx, fileserver.Config{Root: filepath.Join(t.TempDir(), "missing"), StateDir: t.TempDir()}); err == nil {
		t.Error("no error for a missing root directory")
	}

	// The UDP port taken: Serve fails, and StartServer says so rather
	// than waiting for a listener that never comes.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	addr := pc.LocalAddr().String()
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Skipf("TCP port of the same number is taken too: %v", err)
	} else {
		ln.Close()
	}
	_, err = StartServer(ctx, fileserver.Config{Addr: addr, StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "UDP") {
		t.Errorf("StartServer with the UDP port taken: %v, want an error naming UDP", err)
	}

	expired, cancel2 := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel2()
	if _, err := StartServer(expired, fileserver.Config{StateDir: t.TempDir()}); err == nil {
		t.Error("no error with an expired context")
	}
}

// TestLogBufferWakesWaiters checks the wait-for-a-line mechanism the
// harness relies on: a snapshot's channel is closed by the next write.
func TestLogBufferWakesWaiters(t *testing.T) {
	b := newLogBuffer()
	data, changed := b.snapshot()
	if len(data) != 0 {
		t.Fatalf("new buffer holds %q", data)
	}
	select {
	case <-changed:
		t.Fatal("changed closed before any write")
	default:
	}
	go b.Write([]byte("line\n"))
	<-changed // a missed wake-up would hang here until the test timeout
	if data, _ := b.snapshot(); string(data) != "line\n" || b.String() != "line\n" {
		t.Errorf("buffer holds %q", data)
	}
}
