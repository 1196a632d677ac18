// Package testcert is for tests only: a self-signed P-256 certificate for
// "localhost", 127.0.0.1 and ::1, valid from 1999 to 2100 so that it also
// holds inside a synctest bubble (whose clock starts in 2000), and the TLS
// configurations of a server and a client that trusts it.
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

// PEM returns the certificate and its private key PEM-encoded, for a server
// that reads files (a program under test), and the pool a client trusts.
func PEM(tb testing.TB) (certificate, key []byte, roots *x509.CertPool) {
	tb.Helper()
	load(tb)
	return certPEM, keyPEM, pool
}

func load(tb testing.TB) {
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
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
			NotBefore:    time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC),
			NotAfter:     time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		}
		var der []byte
		if der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key); err != nil {
			return
		}
		var leaf *x509.Certificate
		if leaf, err = x509.ParseCertificate(der); err != nil {
			return
		}
		var keyDER []byte
		if keyDER, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
			return
		}
		cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
		pool = x509.NewCertPool()
		pool.AddCert(leaf)
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	})
	if err != nil {
		tb.Fatal(err)
	}
}
