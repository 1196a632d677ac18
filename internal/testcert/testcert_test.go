package testcert

import (
	"crypto/x509"
	"testing"
	"time"
)

// TestValidInBubbleAndNow: the shared certificate verifies for each of its
// names at a synctest bubble's start (2000-01-01) and today, and a
// certificate from New for its own name.
func TestValidInBubbleAndNow(t *testing.T) {
	c := Certificate(t)
	for _, at := range []time.Time{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
			if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: Pool(t), DNSName: name, CurrentTime: at}); err != nil {
				t.Errorf("%s at %v: %v", name, at, err)
			}
		}
	}
	other := New(t, "example.test", "b.example.test")
	roots := x509.NewCertPool()
	roots.AddCert(other.Leaf)
	if _, err := other.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "b.example.test"}); err != nil {
		t.Error(err)
	}
	if other.Leaf.Subject.CommonName != "example.test" || len(other.Leaf.IPAddresses) != 0 {
		t.Errorf("New: common name %q, IPs %v", other.Leaf.Subject.CommonName, other.Leaf.IPAddresses)
	}
	if other.Leaf.SerialNumber.Cmp(c.Leaf.SerialNumber) == 0 {
		t.Error("two certificates share a serial number")
	}
}
