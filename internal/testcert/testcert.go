// Package testcert is for tests only: a self-signed P-256 certificate for
// "localhost", 127.0.0.1 and ::1, valid from 1999 to 2100 so that it also
// holds inside a synctest bubble (whose clock starts in 2000), and the TLS
// configurations of a server and a client that trusts it. It is its own
// root (a CA certificate for server authentication), so peers that insist
// on a CA in their trust store (ngtcp2's, an interop runner's) accept it
// too. New makes further certificates for the tests that need other names.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

var (
	once    sync.Once
	cert    tls.Certificate
	pool    *x509.CertPool
	certPEM []byte
	keyPEM  []byte
	err     error
)

// TLS returns a server configuration with the certificate and a client
// configuration that trusts it, both offering the ALPN protocol alpn.
func TLS(tb testing.TB, alpn string) (server, client *tls.Config) {
	tb.Helper()
	load(tb)
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}},
		&tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{alpn}}
}

// Certificate returns the certificate with its key, for a server
// configuration a test builds itself.
func Certificate(tb testing.TB) tls.Certificate {
	tb.Helper()
	load(tb)
	return cert
}

// Pool returns a pool that trusts the certificate.
func Pool(tb testing.TB) *x509.CertPool {
	tb.Helper()
	load(tb)
	return pool
}

// PEM returns the certificate and its private key PEM-encoded, for a server
// that reads files (a program under test), and the pool a client trusts.
func PEM(tb testing.TB) (certificate, key []byte, roots *x509.CertPool) {
	tb.Helper()
	load(tb)
	return certPEM, keyPEM, pool
}

// WriteFiles writes the certificate and its private key PEM-encoded to
// certFile and keyFile (the key readable by its owner only), for a
// program under test that reads them, and returns the pool a client trusts.
func WriteFiles(tb testing.TB, certFile, keyFile string) *x509.CertPool {
	tb.Helper()
	load(tb)
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	return pool
}

// New makes a fresh self-signed P-256 certificate, valid 1999-2100, for the
// DNS names given (the first is also its common name) and no IP address,
// for a test that needs names other than the shared certificate's or a
// second certificate (to lengthen a chain).
func New(tb testing.TB, dnsNames ...string) tls.Certificate {
	tb.Helper()
	c, err := generate(dnsNames, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var serial struct {
	sync.Mutex
	n int64
}

// generate makes a self-signed certificate, its own root, for dnsNames and
// ips with a serial number unique in this process.
func generate(dnsNames []string, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial.Lock()
	serial.n++
	sn := serial.n
	serial.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(sn),
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		NotBefore:             time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		BasicConstraintsValid: true,
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(dnsNames) > 0 {
		tmpl.Subject = pkix.Name{CommonName: dnsNames[0]}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

func load(tb testing.TB) {
	tb.Helper()
	once.Do(func() {
		if cert, err = generate([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}); err != nil {
			return
		}
		var keyDER []byte
		if keyDER, err = x509.MarshalPKCS8PrivateKey(cert.PrivateKey); err != nil {
			return
		}
		pool = x509.NewCertPool()
		pool.AddCert(cert.Leaf)
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	})
	if err != nil {
		tb.Fatal(err)
	}
}
