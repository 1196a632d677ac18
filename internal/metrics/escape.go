package metrics

import "unicode/utf8"

// appendLabelValue appends v escaped for a label value in the text format:
// backslash, double quote and line feed are escaped; invalid UTF-8 is
// replaced so that the output always parses.
func appendLabelValue(b []byte, v string) []byte { return appendEscaped(b, v, true) }

// appendHelp appends help text escaped for a HELP line, where only
// backslash and line feed are special.
func appendHelp(b []byte, h string) []byte { return appendEscaped(b, h, false) }

// appendEscaped escapes backslash, line feed and, with quote, double quote,
// and replaces invalid UTF-8 with U+FFFD.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for _, r := range s {
		switch {
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '"' && quote:
			b = append(b, '\\', '"')
		case r == '\n':
			b = append(b, '\\', 'n')
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// validMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and does
// not start with the "__" prefix Prometheus reserves.
func validLabelName(s string) bool {
	if s == "" || len(s) >= 2 && s[0] == '_' && s[1] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
