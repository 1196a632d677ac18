package fileserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity of the generated certificate. Chromium accepts a self-signed
// certificate pinned by SPKI hash, and for pinned certificates (as for
// WebTransport) it wants short lives, at most 14 days: 13 days plus the
// backdating hour stays under that.
const (
	selfSignedLifetime = 13 * 24 * time.Hour
	selfSignedBackdate = time.Hour      // tolerate a client clock slightly behind
	renewBefore        = 24 * time.Hour // replace when this close to expiry
)

// SPKIHash returns base64(SHA-256(SubjectPublicKeyInfo)), the form
// Chromium's --ignore-certificate-errors-spki-list expects.
func SPKIHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// needsRenewal reports whether a generated certificate should be replaced:
// expired, within renewBefore of expiry, or not yet valid (clock moved back).
func needsRenewal(leaf *x509.Certificate, now time.Time) bool {
	return now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter.Add(-renewBefore))
}

// GenerateSelfSigned returns PEM blocks for a new self-signed ECDSA P-256
// certificate for localhost, 127.0.0.1 and ::1, valid from an hour before
// now for 13 days, and its PKCS #8 key: what serve makes for itself when
// given no certificate, and what the evaluation gives its servers.
func GenerateSelfSigned(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	notBefore := now.Add(-selfSignedBackdate).Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "TurboRetry local server"},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(selfSignedBackdate + selfSignedLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return certPEM, keyPEM, nil
}

// loadKeyPair loads a PEM certificate chain and key and makes sure Leaf is
// set.
func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", certFile, err)
		}
	}
	return &c, nil
}

// selfSignedResult says what loadOrCreateSelfSigned did, for the log.
type selfSignedResult uint8

const (
	certReused selfSignedResult = iota
	certCreated
	certRenewed  // the old one was expired or about to be
	certReplaced // the old files were unreadable or did not match
)

// loadOrCreateSelfSigned returns the certificate kept in dir, creating or
// replacing it when it is missing, broken or close to expiry.
func loadOrCreateSelfSigned(dir string, now time.Time) (*tls.Certificate, selfSignedResult, error) {
	certPath := filepath.Join(dir, stateCertFile)
	keyPath := filepath.Join(dir, stateKeyFile)
	res := certCreated
	c, err := loadKeyPair(certPath, keyPath)
	switch {
	case err == nil && !needsRenewal(c.Leaf, now):
		return c, certReused, nil
	case err == nil:
		res = certRenewed
	case !errors.Is(err, fs.ErrNotExist):
		res = certReplaced
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("state directory: %w", err)
	}
	certPEM, keyPEM, err := GenerateSelfSigned(now)
	if err != nil {
		return nil, 0, fmt.Errorf("generating certificate: %w", err)
	}
	// The key goes first: a crash between the two writes then leaves a
	// mismatched pair, which the next start detects and replaces.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, 0, fmt.Errorf("writing key: %w", err)
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, 0, fmt.Errorf("writing certificate: %w", err)
	}
	c, err = loadKeyPair(certPath, keyPath)
	if err != nil {
		return nil, 0, err
	}
	return c, res, nil
}
