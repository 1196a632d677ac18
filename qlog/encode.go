package qlog

import (
	"encoding/hex"
	"net/netip"
	"time"

	"github.com/turboretry/turboretry/qlogwriter/jsontext"
)

// encoder writes an event's tokens and keeps the first error, so encoding
// code reads straight through.
type encoder struct {
	enc *jsontext.Encoder
	err error
}

func (e *encoder) tok(t jsontext.Token) {
	if e.err == nil {
		e.err = e.enc.WriteToken(t)
	}
}

func (e *encoder) begin()                  { e.tok(jsontext.BeginObject) }
func (e *encoder) end()                    { e.tok(jsontext.EndObject) }
func (e *encoder) beginArray()             { e.tok(jsontext.BeginArray) }
func (e *encoder) endArray()               { e.tok(jsontext.EndArray) }
func (e *encoder) name(n string)           { e.tok(jsontext.String(n)) }
func (e *encoder) str(n, v string)         { e.name(n); e.tok(jsontext.String(v)) }
func (e *encoder) uint(n string, v uint64) { e.name(n); e.tok(jsontext.Uint(v)) }
func (e *encoder) int(n string, v int64)   { e.name(n); e.tok(jsontext.Int(v)) }
func (e *encoder) float(n string, v float64) {
	e.name(n)
	e.tok(jsontext.Float(v))
}
func (e *encoder) bool(n string, v bool)  { e.name(n); e.tok(jsontext.Bool(v)) }
func (e *encoder) hex(n string, b []byte) { e.str(n, hex.EncodeToString(b)) }

// ms writes a duration in milliseconds, as qlog wants durations.
func (e *encoder) ms(n string, d time.Duration) { e.float(n, float64(d.Nanoseconds())/1e6) }

// value lets a nested encoder write into the same stream.
func (e *encoder) value(encode func(*jsontext.Encoder) error) {
	if e.err == nil {
		e.err = encode(e.enc)
	}
}

// addrPort writes {"ip": ..., "port": ...}.
func (e *encoder) addrPort(ap netip.AddrPort) {
	e.begin()
	e.str("ip", ap.Addr().String())
	e.uint("port", uint64(ap.Port()))
	e.end()
}

func (e *encoder) versions(n string, vs []Version) {
	e.name(n)
	e.beginArray()
	for _, v := range vs {
		e.tok(jsontext.String(versionHex(v)))
	}
	e.endArray()
}
