package announce

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSeedVectors: the fuzz seed files were computed outside Go (Python's
// hmac and struct, testKey, t0), so they double as interoperability
// vectors for the format. Each must get the reason its name says.
func TestSeedVectors(t *testing.T) { atT0(t, testSeedVectors) }

func testSeedVectors(t *testing.T) {
	want := map[string]Reason{
		"valid_8x4":      ReasonNone,
		"valid_full_8":   ReasonNone,
		"valid_20x3":     ReasonCIDLen, // valid framing, but the listener expects 8-byte IDs
		"too_old":        ReasonTooOld,
		"future":         ReasonFuture,
		"version2":       ReasonVersion,
		"count_mismatch": ReasonMalformed,
		"wrong_key":      ReasonMAC,
		"short":          ReasonShort,
	}
	l, s := newDirectListener(t, 30*time.Second)
	for name, r := range want {
		raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzParse", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a corpus file", name)
		}
		b, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before := s.total()
		if got := l.handle([]byte(b)); got != r {
			t.Errorf("%s: reason %v, want %v", name, got, r)
		}
		if r == ReasonNone {
			m, _ := parseMessage([]byte(b))
			if s.total()-before != m.count {
				t.Errorf("%s: inserted %d of %d", name, s.total()-before, m.count)
			}
		}
	}
	if s.missing(cids(146, 8)) != 0 {
		t.Fatal("the full message's IDs were not all inserted")
	}
}
