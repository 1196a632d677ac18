package http3

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/quic-go/qpack"
)

// rawSection encodes name/value pairs as a field section without any
// validation, to build malformed messages.
func rawSection(t testing.TB, pairs ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := qpack.NewEncoder(&buf)
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := enc.WriteField(qpack.HeaderField{Name: pairs[i], Value: pairs[i+1]}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func decodeAll(t *testing.T, p []byte, limit uint64) ([]qpack.HeaderField, error) {
	t.Helper()
	it := newFieldIter(p, limit)
	var out []qpack.HeaderField
	for {
		hf, err := it.field()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, hf)
	}
}

func TestQPACKRFC9204Vectors(t *testing.T) {
	tests := []struct {
		hex  string
		want []qpack.HeaderField
	}{
		// RFC 9204 appendix B.1: literal field line with a static name
		// reference, :path=/index.html, no dynamic table.
		{"0000510b2f696e6465782e68746d6c", []qpack.HeaderField{{Name: ":path", Value: "/index.html"}}},
		// Indexed static field lines: :method GET (17), :scheme https (23),
		// :status 200 (25).
		{"0000d1d7d9", []qpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"}, {Name: ":status", Value: "200"}}},
		// An empty section is just the prefix.
		{"0000", nil},
	}
	for _, tt := range tests {
		p, _ := hex.DecodeString(tt.hex)
		got, err := decodeAll(t, p, 0)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("%s: %v, %v", tt.hex, got, err)
		}
	}
}

func TestQPACKDecompressionFailures(t *testing.T) {
	for _, h := range []string{
		"",             // no prefix
		"00",           // truncated prefix
		"0100d1",       // Required Insert Count 1: a dynamic table we never allowed
		"000081",       // indexed field line referring to the dynamic table
		"0000ff7f",     // static index beyond the table
		"0000510b2f69", // truncated literal value
		"000010",       // post-base indexed field line
	} {
		p, _ := hex.DecodeString(h)
		_, err := decodeAll(t, p, 0)
		wantCode(t, err, ErrCodeQPACKDecompressionFailed)
		if _, err := decodeRequest(p, 0, false); errorCode(err) != ErrCodeQPACKDecompressionFailed {
			t.Fatalf("decodeRequest(%s): %v", h, err)
		}
	}
}

func TestFieldSectionSizeLimit(t *testing.T) {
	p := rawSection(t, ":method", "GET", "x-long", strings.Repeat("v", 100))
	size := uint64(len(":method")+len("GET")+32) + uint64(len("x-long")+100+32) // RFC 9114 section 4.2.2
	if _, err := decodeAll(t, p, size); err != nil {
		t.Fatalf("section of exactly the limit: %v", err)
	}
	_, err := decodeAll(t, p, size-1)
	wantCode(t, err, ErrCodeExcessiveLoad)
	if !errors.Is(err, errFieldSectionTooLarge) {
		t.Fatalf("%v does not wrap errFieldSectionTooLarge", err)
	}

}
