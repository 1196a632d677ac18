package http3

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turboretry/turboretry/quic"
)

// listenerAddr waits until s serves a listener and returns its address.
func listenerAddr(s *Server) string {
	for {
		s.mu.Lock()
		for ln := range s.listeners {
			s.mu.Unlock()
			return ln.Addr().String()
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

func fetchHello(t *testing.T, tr *Transport, addr string) {
	t.Helper()
	rsp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if string(b) != "hello HTTP/3.0" {
		t.Fatalf("body %q", b)
	}
}

func TestListenAndServeTLS(t *testing.T) {
	checkGoroutines(t)
	serverTLS, clientTLS := testCert(t)
	dir := t.TempDir()
	cert := serverTLS.Certificates[0]
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	s := &Server{Addr: "127.0.0.1:0", Handler: testHandler()}
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServeTLS(certFile, keyFile) }()
	addr := listenerAddr(s)
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	fetchHello(t, tr, addr)
	s.Close()
	if err := <-done; err != http.ErrServerClosed {
		t.Fatalf("ListenAndServeTLS returned %v", err)
	}
	if err := s.ListenAndServeTLS(certFile, keyFile); err != http.ErrServerClosed {
		t.Fatalf("ListenAndServeTLS after Close returned %v", err)
	}
	if err := s.ListenAndServeTLS(filepath.Join(dir, "missing"), keyFile); err == nil {
		t.Fatal("ListenAndServeTLS with a missing certificate succeeded")
	}
}

func TestServeListener(t *testing.T) {
	checkGoroutines(t)
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ln, err := quic.ListenEarly(pc, ConfigureTLSConfig(serverTLS), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: testHandler()}
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ln) }()
	tr := &Transport{TLSClientConfig: clientTLS}
	defer tr.Close()
	fetchHello(t, tr, listenerAddr(s))
	s.Close()
	if err := <-done; err != http.ErrServerClosed {
		t.Fatalf("ServeListener returned %v", err)
	}
	if err := s.Serve(pc); err != http.ErrServerClosed {
		t.Fatalf("Serve after Close returned %v", err)
	}
}

// TestServerHotSwap is quic-go's TestHTTP3ServerHotswap (issue 15): two
// Servers serve one listener; closing the first must not close the
// listener, so the second goes on serving new connections.
func TestServerHotSwap(t *testing.T) {
	checkGoroutines(t)
	serverTLS, clientTLS := testCert(t)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ln, err := quic.ListenEarly(pc, ConfigureTLSConfig(serverTLS), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serve := func(body string) (*Server, chan error) {
		s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
		done := make(chan error, 1)
		go func() { done <- s.ServeListener(ln) }()
		return s, done
	}
	fetch := func() string {
		tr := &Transport{TLSClientConfig: clientTLS}
		defer tr.Close()
		rsp, err := (&http.Client{Transport: tr}).Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		b, _ := io.ReadAll(rsp.Body)
		return string(b)
	}
	s1, done1 := serve("one")
	if got := fetch(); got != "one" {
		t.Fatalf("first server answered %q", got)
	}
	s2, done2 := serve("two")
	s1.Close()
	if err := <-done1; err != http.ErrServerClosed {
		t.Fatalf("first ServeListener returned %v", err)
	}
	if got := fetch(); got != "two" {
		t.Fatalf("after closing the first server: %q, want the second's answer", got)
	}
	s2.Close()
	if err := <-done2; err != http.ErrServerClosed {
		t.Fatalf("second ServeListener returned %v", err)
	}
}
