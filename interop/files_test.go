package interop

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/turboretry/turboretry/internal/testcert"
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

// writeSelfSignedCert writes the test certificate (internal/testcert: for
// localhost and the loopback addresses, its own root) and its key as PEM
// files in dir, and returns their paths and a pool that trusts it.
func writeSelfSignedCert(t *testing.T, dir string) (keyFile, certFile string, pool *x509.CertPool) {
	t.Helper()
	keyFile, certFile = filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem")
	return keyFile, certFile, testcert.WriteFiles(t, certFile, keyFile)
}
