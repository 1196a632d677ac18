package quic

import (
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf8"
)

// A small JSON appender for qlog records: building them by hand keeps
// reflection and maps off the connection goroutine.

// field appends `,"name":` or, as the first field of an object, `"name":`.
func field(b []byte, name string) []byte {
	if n := len(b); n > 0 && b[n-1] != '{' && b[n-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func fieldUint(b []byte, name string, v uint64) []byte {
	return strconv.AppendUint(field(b, name), v, 10)
}

func fieldInt(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(field(b, name), v, 10)
}

func fieldBool(b []byte, name string, v bool) []byte {
	return strconv.AppendBool(field(b, name), v)
}

// fieldMs appends a duration in milliseconds.
func fieldMs(b []byte, name string, d time.Duration) []byte {
	return strconv.AppendFloat(field(b, name), float64(d.Nanoseconds())/1e6, 'f', 3, 64)
}

// fieldHex appends bytes as a hexadecimal string.
func fieldHex(b []byte, name string, v []byte) []byte {
	b = append(field(b, name), '"')
	b = hex.AppendEncode(b, v)
	return append(b, '"')
}

// fieldRaw appends a value that needs no escaping (a name from this
// package).
func fieldRaw(b []byte, name, v string) []byte {
	b = append(field(b, name), '"')
	b = append(b, v...)
	return append(b, '"')
}

func fieldString(b []byte, name, v string) []byte {
	return appendJSONString(field(b, name), v)
}

// appendJSONString appends s as a JSON string; control characters are
// escaped and invalid UTF-8 becomes U+FFFD, so any input gives valid JSON.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		ch := s[i]
		if ch < utf8.RuneSelf {
			switch {
			case ch == '"' || ch == '\\':
				b = append(b, '\\', ch)
			case ch == '\n':
				b = append(b, '\\', 'n')
			case ch == '\r':
				b = append(b, '\\', 'r')
			case ch == '\t':
				b = append(b, '\\', 't')
			case ch < 0x20 || ch == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[ch>>4], hexDigits[ch&0xf])
			default:
				b = append(b, ch)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
