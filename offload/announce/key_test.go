package announce

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"testing"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/token"
)

// TestKeyIsHKDFExpandLabel recomputes the key with the standard library's
// HKDF-Expand and the TLS 1.3 HkdfLabel encoding (RFC 8446, section 7.1).
func TestKeyIsHKDFExpandLabel(t *testing.T) {
	root := bytes.Repeat([]byte{0x42}, token.SecretLen)
	full := "tls13 " + KeyLabel
	info := append([]byte{0, 32, byte(len(full))}, full...)
	info = append(info, 0) // empty context
	want, err := hkdf.Expand(sha256.New, root, string(info), 32)
	if err != nil {
		t.Fatal(err)
	}
	got := Key(testutil.KeyRing(t, root))
	if !bytes.Equal(got[:], want) {
		t.Fatalf("Key = %x, want %x", got, want)
	}
}

func TestKeyDependsOnRoot(t *testing.T) {
	a := Key(testutil.KeyRing(t, bytes.Repeat([]byte{1}, token.SecretLen)))
	b := Key(testutil.KeyRing(t, bytes.Repeat([]byte{2}, token.SecretLen)))
	if a == b {
		t.Fatal("different roots gave the same key")
	}
	if a == ([32]byte{}) || b == ([32]byte{}) {
		t.Fatal("zero key from a real root")
	}
	if Key(nil) != ([32]byte{}) {
		t.Fatal("Key(nil) is not the zero key")
	}
}
