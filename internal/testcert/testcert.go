// Package testcert is for tests only: a self-signed P-256 certificate for
// "localhost" and the TLS configurations of a server and a client that
// trusts it.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"sync"
	"testing"
	"time"
)

var (
	once sync.Once
	cert tls.Certificate
	pool *x509.CertPool
	err  error
)

// TLS returns a server configuration with the certificate and a client
// configuration that trusts it, both offering the ALPN protocol alpn.
func TLS(tb testing.TB, alpn string) (server, client *tls.Config) {
	tb.Helper()
	once.Do(func() {
		var key *ecdsa.PrivateKey
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "localhost"},
			DNSNames:     []string{"localhost"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
		}
		var der []byte
		if der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key); err != nil {
			return
		}
		var leaf *x509.Certificate
		if leaf, err = x509.ParseCertificate(der); err != nil {
			return
		}
		cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
		pool = x509.NewCertPool()
		pool.AddCert(leaf)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}},
		&tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{alpn}}
}
