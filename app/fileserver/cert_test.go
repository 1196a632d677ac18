package fileserver

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// independentSPKI computes the Chromium pin from the PEM file on disk,
// re-encoding the public key rather than using the raw field.
func independentSPKI(t *testing.T, certPath string) string {
	t.Helper()
	data, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s holds no certificate", certPath)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestSelfSignedCertificateLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	c1, res, err := loadOrCreateSelfSigned(dir, now)
	if err != nil || res != certCreated {
		t.Fatalf("first load: %v, result %d", err, res)
	}
	certPath, keyPath := filepath.Join(dir, stateCertFile), filepath.Join(dir, stateKeyFile)
	if m := fileMode(t, keyPath); m != 0o600 {
		t.Errorf("key mode %04o, want 0600", m)
	}
	if m := fileMode(t, dir); m != 0o700 {
		t.Errorf("state dir mode %04o, want 0700", m)
	}
	spki := SPKIHash(c1.Leaf)
	if want := independentSPKI(t, certPath); spki != want {
		t.Errorf("SPKIHash %s, independent %s", spki, want)
	}
	leaf := c1.Leaf
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life > 14*24*time.Hour {
		t.Errorf("validity %v exceeds 14 days", life)
	}
	if !leaf.NotBefore.Before(now) || !leaf.NotAfter.After(now.Add(7*24*time.Hour)) {
		t.Errorf("validity %v..%v does not cover now+7d", leaf.NotBefore, leaf.NotAfter)
	}
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(ip); err != nil {
			t.Error(err)
		}
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA || leaf.SignatureAlgorithm != x509.ECDSAWithSHA256 {
		t.Errorf("algorithms %v / %v, want ECDSA P-256 with SHA-256", leaf.PublicKeyAlgorithm, leaf.SignatureAlgorithm)
	}

	// Reused on restart while more than a day of validity remains.
	c2, res, err := loadOrCreateSelfSigned(dir, now.Add(11*24*time.Hour))
	if err != nil || res != certReused || SPKIHash(c2.Leaf) != spki {
		t.Fatalf("restart: %v, result %d, same key %v", err, res, SPKIHash(c2.Leaf) == spki)
	}
	// Within a day of expiry: regenerated, new key, files replaced.
	c3, res, err := loadOrCreateSelfSigned(dir, leaf.NotAfter.Add(-23*time.Hour))
	if err != nil || res != certRenewed || SPKIHash(c3.Leaf) == spki {
		t.Fatalf("near expiry: %v, result %d", err, res)
	}
	if independentSPKI(t, certPath) != SPKIHash(c3.Leaf) {
		t.Error("renewed certificate not written to disk")
	}
	// Expired long ago, or clock before NotBefore: regenerated.
	for _, at := range []time.Time{c3.Leaf.NotAfter.Add(30 * 24 * time.Hour), c3.Leaf.NotBefore.Add(-time.Minute)} {
		c4, res, err := loadOrCreateSelfSigned(dir, at)
		if err != nil || res != certRenewed || SPKIHash(c4.Leaf) == SPKIHash(c3.Leaf) {
			t.Errorf("at %v: %v, result %d", at, err, res)
		}
		c3 = c4
	}
	// A damaged pair is replaced rather than fatal.
	if err := os.WriteFile(certPath, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, res, err := loadOrCreateSelfSigned(dir, now); err != nil || res != certReplaced {
		t.Errorf("damaged: %v, result %d", err, res)
	}
}

// TestServerCertificateRestartAndExpiry lets weeks pass in virtual time
// (synctest); New opens a listener but starts nothing that reads it.
func TestServerCertificateRestartAndExpiry(t *testing.T) {
	synctest.Test(t, testServerCertificateRestartAndExpiry)
}

func testServerCertificateRestartAndExpiry(t *testing.T) {
	state := t.TempDir()
	cfg := func(c *Config) { c.StateDir = state }
	s1, _ := newServer(t, cfg)
	spki := s1.SPKIHash()
	s1.Close()
	s2, _ := newServer(t, cfg)
	if s2.SPKIHash() != spki {
		t.Error("restart generated a new certificate")
	}
	s2.Close()
	time.Sleep(20 * 24 * time.Hour)
	s3, logs := newServer(t, cfg)
	defer s3.Close()
	if s3.SPKIHash() == spki {
		t.Error("expired certificate reused")
	}
	if !strings.Contains(logs.String(), "renewed expiring self-signed certificate") {
		t.Errorf("renewal not logged: %s", logs)
	}
	if s3.SPKIHash() != independentSPKI(t, filepath.Join(state, stateCertFile)) {
		t.Error("server SPKI differs from the file")
	}
	// A long-running server renews in the handshake once the renewal
	// time comes.
	old := s3.SPKIHash()
	time.Sleep(13 * 24 * time.Hour)
	c, err := s3.TLSConfig().GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || SPKIHash(c.Leaf) == old || needsRenewal(c.Leaf, time.Now()) {
		t.Errorf("handshake-time renewal: %v, renewed %v", err, SPKIHash(c.Leaf) != old)
	}
	if needsRenewal(s3.certs.current().Leaf, time.Now()) {
		t.Error("current certificate still needs renewal")
	}
}

func TestSecretCreatedAndReused(t *testing.T) {
	state := t.TempDir()
	s1, logs := newServer(t, func(c *Config) { c.StateDir = state })
	s1.Close()
	path := filepath.Join(state, stateSecretFile)
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("secret mode %04o, want 0600", m)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 65 || data[64] != '\n' || strings.Trim(string(data[:64]), "0123456789abcdef") != "" {
		t.Errorf("secret file %q is not 64 hex digits and a newline", data)
	}
	if !strings.Contains(logs.String(), "created root secret") {
		t.Error("creation not logged")
	}
	s2, logs := newServer(t, func(c *Config) { c.StateDir = state })
	defer s2.Close()
	again, _ := os.ReadFile(path)
	if string(again) != string(data) || strings.Contains(logs.String(), "created root secret") {
		t.Error("secret regenerated on restart")
	}
	if s2.KeyRing() == nil {
		t.Error("no key ring")
	}
}

// writePair writes a fresh self-signed pair to dir and returns its SPKI.
func writePair(t *testing.T, certPath, keyPath string) string {
	t.Helper()
	cp, kp, err := GenerateSelfSigned(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, cp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, kp, 0o600); err != nil {
		t.Fatal(err)
	}
	return independentSPKI(t, certPath)
}

// peerSPKI connects with a new TLS connection and returns the SPKI of the
// certificate the server presents.
func peerSPKI(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return SPKIHash(conn.ConnectionState().PeerCertificates[0])
}

func TestReloadCertificateAndSecret(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	spkiA := writePair(t, certPath, keyPath)
	secretPath := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretPath, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) {
		c.CertFile, c.KeyFile, c.SecretFile = certPath, keyPath, secretPath
	})
	addr := ts.Addr().String()
	if got := peerSPKI(t, addr); got != spkiA {
		t.Fatalf("served %s, want %s", got, spkiA)
	}
	// An open keep-alive connection, to show reload does not drop it.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if resp, _ := get(t, client, "GET", ts.URL()); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	krA := ts.KeyRing()

	spkiB := writePair(t, certPath, keyPath)
	if err := os.WriteFile(secretPath, []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := peerSPKI(t, addr); got != spkiB {
		t.Errorf("after reload served %s, want %s", got, spkiB)
	}
	if ts.KeyRing() == krA {
		t.Error("key ring not replaced")
	}
	var reused bool
	req, _ := http.NewRequest("GET", ts.URL(), nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused },
	}))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !reused || SPKIHash(resp.TLS.PeerCertificates[0]) != spkiA {
		t.Errorf("old connection: reused %v, still on the old certificate %v", reused, SPKIHash(resp.TLS.PeerCertificates[0]) == spkiA)
	}

	// A broken pair is refused and the current one kept.
	if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretPath, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	krB := ts.KeyRing()
	err = ts.Reload()
	if err == nil || !strings.Contains(err.Error(), "reloading certificate") || !strings.Contains(err.Error(), "reloading root secret") {
		t.Errorf("broken reload: %v", err)
	}
	if got := peerSPKI(t, addr); got != spkiB {
		t.Error("broken reload replaced the certificate")
	}
	if ts.KeyRing() != krB {
		t.Error("broken reload replaced the key ring")
	}
}

func TestReloadSelfSigned(t *testing.T) {
	ts := startServer(t, nil)
	spkiA := peerSPKI(t, ts.Addr().String())
	if err := os.Remove(filepath.Join(ts.cfg.StateDir, stateCertFile)); err != nil {
		t.Fatal(err)
	}
	if err := ts.Reload(); err != nil {
		t.Fatal(err)
	}
	if spkiB := peerSPKI(t, ts.Addr().String()); spkiB == spkiA || spkiB != ts.SPKIHash() {
		t.Errorf("after reload: %s (was %s, server says %s)", spkiB, spkiA, ts.SPKIHash())
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	writePair(t, certPath, keyPath)
	otherCert, otherKey := filepath.Join(dir, "c2.pem"), filepath.Join(dir, "k2.pem")
	writePair(t, otherCert, otherKey)
	openSecret := filepath.Join(dir, "open.key")
	os.WriteFile(openSecret, []byte(strings.Repeat("ab", 32)+"\n"), 0o644)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing root", Config{Root: filepath.Join(dir, "nope")}, "root directory"},
		{"root is a file", Config{Root: file}, "not a directory"},
		{"cert without key", Config{CertFile: certPath}, "--cert and --key go together"},
		{"key without cert", Config{KeyFile: keyPath}, "--cert and --key go together"},
		{"missing cert", Config{CertFile: filepath.Join(dir, "none.pem"), KeyFile: keyPath}, "none.pem"},
		{"mismatched pair", Config{CertFile: certPath, KeyFile: otherKey}, "private key does not match public key"},
		{"garbage cert", Config{CertFile: file, KeyFile: keyPath}, "certificate " + file},
		{"world-readable secret", Config{SecretFile: openSecret}, "world-readable"},
		{"missing secret", Config{SecretFile: filepath.Join(dir, "none.key")}, "none.key"},
		{"address in use", Config{Addr: busy.Addr().String()}, "address already in use"},
		{"bad metrics address", Config{MetricsAddr: "127.0.0.1:notaport"}, "metrics: listening"},
		{"bad retry", Config{Retry: RetryMode(7)}, "invalid retry mode"},
	}
	for _, c := range cases {
		cfg := c.cfg
		if cfg.Addr == "" {
			cfg.Addr = "127.0.0.1:0"
		}
		cfg.StateDir = t.TempDir()
		cfg.Logger = slog.New(slog.DiscardHandler)
		s, err := New(cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q lacks %q", c.name, err, c.want)
		}
	}
	// No state dir at all while something has to be generated.
	if _, err := New(Config{Addr: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Errorf("no state dir: %v", err)
	}
}
