package interop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// blobSize is the size of the file the ngtcp2 tests transfer: large
// enough for flow-control updates and many packets, small enough to be
// quick.
const blobSize = 1 << 20

// writeRandomFile writes size random bytes to dir/name and returns their
// SHA-256.
func writeRandomFile(t *testing.T, dir, name string, size int) [sha256.Size]byte {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// checkSameContent fails the test unless got has the given size and
// SHA-256.
func checkSameContent(t *testing.T, what string, got []byte, size int, want [sha256.Size]byte) {
	t.Helper()
	if len(got) != size {
		t.Errorf("%s: got %d bytes, want %d", what, len(got), size)
		return
	}
	if sha256.Sum256(got) != want {
		t.Errorf("%s: %d bytes as expected but the SHA-256 differs: content corrupted", what, size)
	}
}

// writeSelfSignedCert writes a fresh ECDSA P-256 key and a self-signed
// certificate for 127.0.0.1 and localhost as PEM files in dir, and returns
// their paths and a pool that trusts the certificate.
func writeSelfSignedCert(t *testing.T, dir string) (keyFile, certFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own root in the pool
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(dir, "key.pem")
	certFile = filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return keyFile, certFile, pool
}
