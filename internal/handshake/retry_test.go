package handshake

import (
	"errors"
	"testing"
)

// RFC 9001 A.4 and RFC 9369 A.4: the Retry integrity tag over the
// pseudo-packet with ODCID 8394c8f03e515708.
func TestRetryIntegrityTagRFC(t *testing.T) {
	for _, vec := range rfcVectors {
		t.Run(vec.version.String(), func(t *testing.T) {
			want := unhex(vec.retry)
			body := want[:len(want)-RetryIntegrityTagLen]
			got, err := AppendRetryIntegrityTag(append([]byte(nil), body...), vec.version, unhex(rfcDCID))
			if err != nil {
				t.Fatal(err)
			}
			checkHex(t, "Retry packet", got, vec.retry)
			if err := VerifyRetryIntegrityTag(want, vec.version, unhex(rfcDCID)); err != nil {
				t.Errorf("verify RFC Retry: %v", err)
			}
		})
	}
}

func TestRetryIntegrityTagRejects(t *testing.T) {
	retry := unhex(rfc9001.retry)
	odcid := unhex(rfcDCID)
	for i := range retry {
		bad := append([]byte(nil), retry...)
		bad[i] ^= 0x01
		if err := VerifyRetryIntegrityTag(bad, Version1, odcid); !errors.Is(err, ErrRetryIntegrity) {
			t.Fatalf("flipped byte %d: err = %v", i, err)
		}
	}
	badODCID := append([]byte(nil), odcid...)
	badODCID[7] ^= 0x80
	if err := VerifyRetryIntegrityTag(retry, Version1, badODCID); !errors.Is(err, ErrRetryIntegrity) {
		t.Errorf("wrong ODCID: err = %v", err)
	}
	if err := VerifyRetryIntegrityTag(retry, Version1, odcid[:7]); !errors.Is(err, ErrRetryIntegrity) {
		t.Errorf("truncated ODCID: err = %v", err)
	}
	// A v1 Retry does not verify with the v2 key, and the reverse.
	if err := VerifyRetryIntegrityTag(retry, Version2, odcid); !errors.Is(err, ErrRetryIntegrity) {
		t.Errorf("v1 Retry under v2: err = %v", err)
	}
	if err := VerifyRetryIntegrityTag(unhex(rfc9369.retry), Version1, odcid); !errors.Is(err, ErrRetryIntegrity) {
		t.Errorf("v2 Retry under v1: err = %v", err)
	}
	for n := range minRetryLen + RetryIntegrityTagLen {
		if err := VerifyRetryIntegrityTag(retry[:n], Version1, odcid); !errors.Is(err, ErrPacketTooShort) {
			t.Errorf("%d-byte Retry: err = %v", n, err)
		}
	}
	if err := VerifyRetryIntegrityTag(retry, Version1, make([]byte, 21)); !errors.Is(err, ErrConnectionIDTooLong) {
		t.Errorf("21-byte ODCID: err = %v", err)
	}
	if err := VerifyRetryIntegrityTag(retry, 0x0a0a0a0a, odcid); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("grease version: err = %v", err)
	}
	if _, err := AppendRetryIntegrityTag(retry[:3], Version1, odcid); !errors.Is(err, ErrPacketTooShort) {
		t.Errorf("append to 3 bytes: err = %v", err)
	}
	if _, err := AppendRetryIntegrityTag(retry, Version1, make([]byte, 21)); !errors.Is(err, ErrConnectionIDTooLong) {
		t.Errorf("append with 21-byte ODCID: err = %v", err)
	}
}

// A Retry larger than the pooled scratch buffer still gets the right tag.
func TestRetryIntegrityTagLargeToken(t *testing.T) {
	body := append(unhex("ff000000010008f067a5502a4262b5"), make([]byte, 70000)...)
	packet, err := AppendRetryIntegrityTag(body, Version2, unhex(rfcDCID))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRetryIntegrityTag(packet, Version2, unhex(rfcDCID)); err != nil {
		t.Fatal(err)
	}
	packet[100] ^= 1
	if err := VerifyRetryIntegrityTag(packet, Version2, unhex(rfcDCID)); !errors.Is(err, ErrRetryIntegrity) {
		t.Fatalf("tampered large Retry: err = %v", err)
	}
}
