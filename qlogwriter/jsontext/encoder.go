// Package jsontext is a small streaming JSON encoder with the token API
// that quic-go's qlogwriter/jsontext has: an event writes its data as a
// sequence of tokens (names, values, object and array delimiters) and the
// encoder adds the commas and colons. It allocates nothing per token once
// its buffer has grown.
package jsontext

import (
	"errors"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

type kind uint8

const (
	kindInvalid kind = iota
	kindNull
	kindBool
	kindString
	kindInt
	kindUint
	kindFloat
	kindBeginObject
	kindEndObject
	kindBeginArray
	kindEndArray
)

// A Token is one JSON token: a literal, a string, a number, or an object or
// array delimiter.
type Token struct {
	k kind
	s string
	i int64
	u uint64
	f float64
	b bool
}

// The literal and delimiter tokens.
var (
	Null        = Token{k: kindNull}
	False       = Token{k: kindBool}
	True        = Token{k: kindBool, b: true}
	BeginObject = Token{k: kindBeginObject}
	EndObject   = Token{k: kindEndObject}
	BeginArray  = Token{k: kindBeginArray}
	EndArray    = Token{k: kindEndArray}
)

// String returns a string token (an object member name or a value).
func String(s string) Token { return Token{k: kindString, s: s} }

// Int returns a signed integer token.
func Int(i int64) Token { return Token{k: kindInt, i: i} }

// Uint returns an unsigned integer token.
func Uint(u uint64) Token { return Token{k: kindUint, u: u} }

// Float returns a number token; NaN and infinities are not JSON and make
// WriteToken fail.
func Float(f float64) Token { return Token{k: kindFloat, f: f} }

// Bool returns True or False.
func Bool(b bool) Token {
	if b {
		return True
	}
	return False
}

// Errors WriteToken returns for a token that does not fit where it is
// written; the encoder is unusable afterwards.
var (
	ErrSyntax   = errors.New("jsontext: token out of place")
	ErrBadFloat = errors.New("jsontext: NaN or infinite number")
)

// container is one open object or array.
type container struct {
	object bool
	n      int // tokens written in it (names and values of an object count both)
}

// An Encoder writes JSON values to a writer, one token at a time. Each
// complete top-level value is written to the writer with a single Write.
type Encoder struct {
	w     io.Writer
	buf   []byte
	stack []container
	err   error
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// WriteToken appends t to the value being written. It returns an error for
// a token out of place (a name that is not a string, a value where a name
// belongs, an unmatched end) and for the writer's errors.
func (e *Encoder) WriteToken(t Token) error {
	if e.err != nil {
		return e.err
	}
	if err := e.write(t); err != nil {
		e.err = err
		return err
	}
	if len(e.stack) == 0 {
		_, err := e.w.Write(e.buf)
		e.buf = e.buf[:0]
		if err != nil {
			e.err = err
			return err
		}
	}
	return nil
}

func (e *Encoder) write(t Token) error {
	var top *container
	if len(e.stack) > 0 {
		top = &e.stack[len(e.stack)-1]
	}
	isEnd := t.k == kindEndObject || t.k == kindEndArray
	if isEnd {
		if top == nil || top.object != (t.k == kindEndObject) || (top.object && top.n%2 == 1) {
			return ErrSyntax
		}
		if t.k == kindEndObject {
			e.buf = append(e.buf, '}')
		} else {
			e.buf = append(e.buf, ']')
		}
		e.stack = e.stack[:len(e.stack)-1]
		return nil
	}
	if top != nil {
		isName := top.object && top.n%2 == 0
		if isName && t.k != kindString {
			return ErrSyntax
		}
		switch {
		case top.object && !isName:
			e.buf = append(e.buf, ':')
		case top.n > 0:
			e.buf = append(e.buf, ',')
		}
		top.n++
	}
	switch t.k {
	case kindNull:
		e.buf = append(e.buf, "null"...)
	case kindBool:
		e.buf = strconv.AppendBool(e.buf, t.b)
	case kindString:
		e.buf = appendString(e.buf, t.s)
	case kindInt:
		e.buf = strconv.AppendInt(e.buf, t.i, 10)
	case kindUint:
		e.buf = strconv.AppendUint(e.buf, t.u, 10)
	case kindFloat:
		if math.IsNaN(t.f) || math.IsInf(t.f, 0) {
			return ErrBadFloat
		}
		e.buf = strconv.AppendFloat(e.buf, t.f, 'f', -1, 64)
	case kindBeginObject:
		e.buf = append(e.buf, '{')
		e.stack = append(e.stack, container{object: true})
	case kindBeginArray:
		e.buf = append(e.buf, '[')
		e.stack = append(e.stack, container{})
	default:
		return ErrSyntax
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
