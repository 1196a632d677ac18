package metrics

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// unescapeLabelValue is an independent reader for the escaped form: it
// undoes \\, \" and \n and fails on anything else after a backslash, on a
// bare double quote, and on a raw line feed.
func unescapeLabelValue(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", false
			}
			i++
			switch s[i] {
			case '\\':
				b.WriteByte('\\')
			case '"':
				b.WriteByte('"')
			case 'n':
				b.WriteByte('\n')
			default:
				return "", false
			}
		case '"', '\n':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// FuzzEscapeLabelValue checks that any label value, valid UTF-8 or not,
// exports as a well-formed quoted string that reads back as its sanitized
// form.
func FuzzEscapeLabelValue(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b`, `c\d`, "e\nf", "\xff\xfe", `\n`, "\"\\\n", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		esc := string(appendLabelValue(nil, v))
		if !utf8.ValidString(esc) {
			t.Fatalf("escaped %q is not valid UTF-8: %q", v, esc)
		}
		got, ok := unescapeLabelValue(esc)
		if !ok {
			t.Fatalf("escaped %q is malformed: %q", v, esc)
		}
		// Each invalid byte becomes one U+FFFD, as a rune conversion does.
		if want := string([]rune(v)); got != want {
			t.Fatalf("round trip of %q: got %q", v, got)
		}
		// Through a registry: one line per series, no stray line breaks.
		r := NewRegistry()
		vec, err := r.NewCounterVec("x_total", v, "l")
		if err != nil {
			t.Fatal(err)
		}
		c, err := vec.With(v)
		if err != nil {
			t.Fatal(err)
		}
		c.Inc()
		out := string(r.AppendText(nil))
		if n := strings.Count(out, "\n"); n != 3 {
			t.Fatalf("exposition has %d lines, want 3:\n%q", n, out)
		}
	})
}
