package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"unicode/utf8"
)

func encode(t *testing.T, toks ...Token) string {
	t.Helper()
	var b bytes.Buffer
	e := NewEncoder(&b)
	for _, tok := range toks {
		if err := e.WriteToken(tok); err != nil {
			t.Fatalf("WriteToken: %v", err)
		}
	}
	return b.String()
}

func TestEncoderValues(t *testing.T) {
	got := encode(t, BeginObject,
		String("s"), String("a\"b\\c\n\x01\xff€"),
		String("i"), Int(-3),
		String("u"), Uint(1<<63),
		String("f"), Float(1.5),
		String("b"), True,
		String("n"), Null,
		String("a"), BeginArray, Int(1), BeginObject, EndObject, BeginArray, EndArray, False, EndArray,
		EndObject)
	want := `{"s":"a\"b\\c\n\u0001\ufffd€","i":-3,"u":9223372036854775808,"f":1.5,"b":true,"n":null,"a":[1,{},[],false]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
}

func TestEncoderWritesEachTopLevelValueOnce(t *testing.T) {
	var w countingWriter
	e := NewEncoder(&w)
	for _, tok := range []Token{BeginObject, String("x"), Int(1), EndObject, Int(2)} {
		if err := e.WriteToken(tok); err != nil {
			t.Fatal(err)
		}
	}
	if w.writes != 2 || w.String() != `{"x":1}2` {
		t.Fatalf("%d writes: %q", w.writes, w.String())
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.Buffer.Write(p) }

func TestEncoderRejectsMisplacedTokens(t *testing.T) {
	for name, toks := range map[string][]Token{
		"non-string name":  {BeginObject, Int(1)},
		"unmatched end":    {EndObject},
		"wrong end":        {BeginArray, EndObject},
		"end after a name": {BeginObject, String("x"), EndObject},
		"NaN":              {Float(math.NaN())},
		"infinity":         {BeginArray, Float(math.Inf(1))},
	} {
		e := NewEncoder(&bytes.Buffer{})
		var err error
		for _, tok := range toks {
			if err = e.WriteToken(tok); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrBadFloat) {
			t.Errorf("%s: err = %v", name, err)
		}
		if e.WriteToken(Null) == nil {
			t.Errorf("%s: encoder usable after an error", name)
		}
	}
}

func FuzzEncoderString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\"", "\x00\x1f", "\xff\xfe", "€𝄞"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if err := NewEncoder(&b).WriteToken(String(s)); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, b.String(), err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("%q round-trips to %q", s, got)
		}
	})
}
