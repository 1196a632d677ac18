package tlskdf

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 5869 appendix A.1 and A.3 (PRK), and RFC 4231 test case 6 (a key
// longer than the block, which HMAC hashes first).
func TestExtractSHA256RFC5869(t *testing.T) {
	cases := []struct {
		name, salt, ikm, prk string
	}{
		{"A.1", "000102030405060708090a0b0c", strings.Repeat("0b", 22),
			"077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"},
		{"A.3 empty salt", "", strings.Repeat("0b", 22),
			"19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"},
		{"RFC 4231 6 long key", strings.Repeat("aa", 131),
			hex.EncodeToString([]byte("Test Using Larger Than Block-Size Key - Hash Key First")),
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	}
	for _, c := range cases {
		got := ExtractSHA256(unhex(t, c.salt), unhex(t, c.ikm))
		if want := unhex(t, c.prk); !bytes.Equal(got[:], want) {
			t.Errorf("%s: PRK = %x, want %x", c.name, got, want)
		}
	}
}

// RFC 9001 appendix A.1 through the allocation-free functions.
func TestExpandLabelSHA256RFC9001(t *testing.T) {
	salt := unhex(t, "38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
	initial := ExtractSHA256(salt, unhex(t, "8394c8f03e515708"))
	if want := unhex(t, "7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44"); !bytes.Equal(initial[:], want) {
		t.Fatalf("initial_secret = %x, want %x", initial, want)
	}
	var client [32]byte
	if err := ExpandLabelSHA256(client[:], initial[:], "client in", nil); err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"); !bytes.Equal(client[:], want) {
		t.Fatalf("client_initial_secret = %x, want %x", client, want)
	}
	iv := make([]byte, 12)
	if err := ExpandLabelSHA256(iv, client[:], "quic iv", nil); err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "fa044b2f42a3fd3b46fb255c"); !bytes.Equal(iv, want) {
		t.Fatalf("quic iv = %x, want %x", iv, want)
	}
}

// The allocation-free path gives the same bytes as ExpandLabel on
// crypto/hkdf for lengths within one block, across block boundaries and at
// the limit, with long secrets, labels and contexts.
func TestExpandLabelSHA256MatchesHKDF(t *testing.T) {
	secrets := [][]byte{nil, bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 200)}
	labels := []string{"", "quic hp", strings.Repeat("l", MaxLabelLen)}
	contexts := [][]byte{nil, {1, 2, 3}, bytes.Repeat([]byte{0xcc}, MaxContextLen)}
	for _, n := range []int{0, 1, 12, 31, 32, 33, 64, 100, MaxSHA256Len} {
		for _, secret := range secrets {
			for _, label := range labels {
				for _, ctx := range contexts {
					checkSame(t, secret, label, ctx, n)
				}
			}
		}
	}
}

func checkSame(t testing.TB, secret []byte, label string, ctx []byte, n int) {
	t.Helper()
	got := make([]byte, n)
	if err := ExpandLabelSHA256(got, secret, label, ctx); err != nil {
		t.Fatalf("len %d label %d ctx %d: %v", n, len(label), len(ctx), err)
	}
	want := ExpandLabel(sha256.New, secret, label, ctx, n)
	if !bytes.Equal(got, want) {
		t.Fatalf("secret %x label %q ctx %x len %d: got %x, want %x", secret, label, ctx, n, got, want)
	}
}

func TestExpandLabelSHA256Errors(t *testing.T) {
	out := []byte{0xee}
	cases := []struct {
		out   []byte
		label string
		ctx   []byte
		want  error
	}{
		{out, strings.Repeat("l", MaxLabelLen+1), nil, ErrLabelTooLong},
		{out, "x", make([]byte, MaxContextLen+1), ErrContextTooLong},
		{make([]byte, MaxSHA256Len+1), "x", nil, ErrOutputTooLong},
	}
	for _, c := range cases {
		if err := ExpandLabelSHA256(c.out, nil, c.label, c.ctx); !errors.Is(err, c.want) {
			t.Errorf("label %d ctx %d out %d: err = %v, want %v", len(c.label), len(c.ctx), len(c.out), err, c.want)
		}
	}
	if out[0] != 0xee {
		t.Error("out written despite an error")
	}
}

// Both HMAC helpers against crypto/hmac around the block size, where the
// key handling changes, and for several MACs under one prepared key.
func TestHMACSHA256MatchesCryptoHMAC(t *testing.T) {
	msg := []byte("some message")
	for _, n := range []int{0, 1, 32, 63, 64, 65, 128, 300} {
		key := bytes.Repeat([]byte{byte(n)}, n)
		var prepared hmacKeySHA256
		if err := prepared.init(key); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			m := hmac.New(sha256.New, key)
			m.Write(msg[:i])
			m.Write(msg[i:])
			want := m.Sum(nil)
			if got := hmacSHA256(key, msg[:i], msg[i:]); !bytes.Equal(got[:], want) {
				t.Errorf("key length %d: %x, want %x", n, got, want)
			}
			got, err := prepared.sum(msg[:i], msg[i:])
			if err != nil || !bytes.Equal(got[:], want) {
				t.Errorf("prepared key length %d, MAC %d: %x, %v; want %x", n, i, got, err, want)
			}
		}
	}
}

// One expander serves several labels, as Initial key derivation uses it.
func TestExpanderSHA256Reuse(t *testing.T) {
	secret := bytes.Repeat([]byte{0x42}, 32)
	var e ExpanderSHA256
	if err := e.Init(secret); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		label string
		n     int
	}{{"quic key", 16}, {"quic iv", 12}, {"quic hp", 16}, {"quic ku", 32}, {"quic key", 70}} {
		got := make([]byte, c.n)
		if err := e.ExpandLabel(got, c.label, nil); err != nil {
			t.Fatal(err)
		}
		if want := ExpandLabel(sha256.New, secret, c.label, nil, c.n); !bytes.Equal(got, want) {
			t.Errorf("%s/%d = %x, want %x", c.label, c.n, got, want)
		}
	}
	var zero ExpanderSHA256
	if err := zero.ExpandLabel(make([]byte, 4), "x", nil); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("zero ExpanderSHA256: err = %v, want ErrNotInitialized", err)
	}
}

// Initial key derivation must not allocate: it runs per new connection.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	if testing.Short() {
		t.Skip("allocation counts in -short mode are not needed")
	}
	salt := make([]byte, 20)
	secret := make([]byte, 32)
	out := make([]byte, 100)
	n := testing.AllocsPerRun(50, func() {
		prk := ExtractSHA256(salt, secret[:8])
		var e ExpanderSHA256
		if err := e.Init(prk[:]); err != nil {
			t.Fatal(err)
		}
		if err := e.ExpandLabel(out, "client in", secret[:3]); err != nil {
			t.Fatal(err)
		}
		if err := ExpandLabelSHA256(out[:12], secret, "quic iv", nil); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocs per run, want 0", n)
	}
}

// Differential fuzzing against crypto/hkdf.
func FuzzExpandLabelSHA256(f *testing.F) {
	f.Add([]byte{}, []byte{}, "", []byte{}, uint16(0))
	f.Add([]byte("salt"), []byte{0x83, 0x94, 0xc8, 0xf0}, "client in", []byte{}, uint16(32))
	f.Add([]byte{}, bytes.Repeat([]byte{1}, 70), "quic key", []byte{1, 2}, uint16(65))
	f.Fuzz(func(t *testing.T, salt, ikm []byte, label string, ctx []byte, n uint16) {
		length := int(n) % (MaxSHA256Len + 2)
		prk := ExtractSHA256(salt, ikm)
		ref, err := hkdf.Extract(sha256.New, ikm, salt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(prk[:], ref) {
			t.Fatalf("Extract = %x, want %x", prk, ref)
		}
		out := make([]byte, length)
		err = ExpandLabelSHA256(out, prk[:], label, ctx)
		switch {
		case len(label) > MaxLabelLen:
			if !errors.Is(err, ErrLabelTooLong) {
				t.Fatalf("label %d: err = %v", len(label), err)
			}
		case len(ctx) > MaxContextLen:
			if !errors.Is(err, ErrContextTooLong) {
				t.Fatalf("context %d: err = %v", len(ctx), err)
			}
		case length > MaxSHA256Len:
			if !errors.Is(err, ErrOutputTooLong) {
				t.Fatalf("length %d: err = %v", length, err)
			}
		default:
			if err != nil {
				t.Fatal(err)
			}
			if want := ExpandLabel(sha256.New, prk[:], label, ctx, length); !bytes.Equal(out, want) {
				t.Fatalf("Expand = %x, want %x", out, want)
			}
		}
	})
}
