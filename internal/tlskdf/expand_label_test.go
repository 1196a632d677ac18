package tlskdf

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// RFC 9001 appendix A.1: client_initial_secret -> "quic key".
func TestExpandLabelRFC9001ClientKey(t *testing.T) {
	salt, _ := hex.DecodeString("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
	dcid, _ := hex.DecodeString("8394c8f03e515708")
	initial, err := hkdf.Extract(sha256.New, dcid, salt)
	if err != nil {
		t.Fatal(err)
	}
	client := ExpandLabel(sha256.New, initial, "client in", nil, 32)
	wantClient, _ := hex.DecodeString("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea")
	if !bytes.Equal(client, wantClient) {
		t.Fatalf("client_initial_secret = %x, want %x", client, wantClient)
	}
	key := ExpandLabel(sha256.New, client, "quic key", nil, 16)
	wantKey, _ := hex.DecodeString("1f369613dd76d5467730efcbe3b1a22d")
	if !bytes.Equal(key, wantKey) {
		t.Fatalf("quic key = %x, want %x", key, wantKey)
	}
}

func TestHkdfLabelEncoding(t *testing.T) {
	got := HkdfLabel(16, "quic key", []byte{0xaa})
	want := append([]byte{0x00, 0x10, 14}, "tls13 quic key"...)
	want = append(want, 1, 0xaa)
	if !bytes.Equal(got, want) {
		t.Fatalf("HkdfLabel = %x, want %x", got, want)
	}
}
