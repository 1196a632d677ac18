package http3

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestStreamTypeRoundTrip(t *testing.T) {
	types := []StreamType{streamTypeControl, streamTypePush, streamTypeQPACKEncoder,
		streamTypeQPACKDecoder, 0x21, 0x21 + 0x1f*12345, 1<<62 - 1}
	for _, st := range types {
		for _, rk := range readerKinds {
			b := appendStreamType(nil, st)
			b = append(b, 0x04, 0x00) // a SETTINGS frame follows; it must stay unread
			r := rk.make(b)
			got, err := readStreamType(r)
			if err != nil || got != st {
				t.Fatalf("%s: readStreamType(%x) = %v, %v", rk.name, b, got, err)
			}
			rest, _ := io.ReadAll(r)
			if !bytes.Equal(rest, []byte{0x04, 0x00}) {
				t.Fatalf("%s: consumed beyond the stream type: rest %x", rk.name, rest)
			}
		}
	}
}

func TestReadStreamTypeTruncated(t *testing.T) {
	for _, in := range [][]byte{nil, {0x40}, {0xc0, 1, 2, 3}} {
		if _, err := readStreamType(bytes.NewReader(in)); err != io.EOF {
			t.Fatalf("readStreamType(%x) = %v, want io.EOF", in, err)
		}
	}
	reset := errors.New("reset")
	if _, err := readStreamType(&failingReader{data: []byte{0x40}, err: reset}); err != reset {
		t.Fatalf("stream error: %v, want %v", err, reset)
	}
}

func TestStreamTypeStrings(t *testing.T) {
	tests := map[StreamType]string{
		0: "control", 1: "push", 2: "QPACK encoder", 3: "QPACK decoder",
		0x21: "reserved stream type 0x21", 0x54: "unknown stream type 0x54",
	}
	for st, want := range tests {
		if got := st.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint64(st), got, want)
		}
	}
}

func TestUniStreamSet(t *testing.T) {
	for _, isClient := range []bool{false, true} {
		s := uniStreamSet{isClient: isClient}
		for _, st := range []StreamType{streamTypeControl, streamTypeQPACKEncoder, streamTypeQPACKDecoder} {
			if ignore, err := s.accept(st); ignore || err != nil {
				t.Fatalf("first %s stream: ignore=%v err=%v", st, ignore, err)
			}
			_, err := s.accept(st)
			wantCode(t, err, ErrCodeStreamCreationError)
		}
		// Reserved and unknown types are ignored, any number of times.
		for _, st := range []StreamType{0x21, 0x40, 0x21, 1<<62 - 1} {
			if ignore, err := s.accept(st); !ignore || err != nil {
				t.Fatalf("%s: ignore=%v err=%v", st, ignore, err)
			}
		}
		ignore, err := s.accept(streamTypePush)
		if isClient {
			if ignore || err != nil {
				t.Fatalf("client, push stream: ignore=%v err=%v", ignore, err)
			}
			if _, err := s.accept(streamTypePush); err != nil {
				t.Fatalf("client, second push stream: %v", err)
			}
		} else {
			wantCode(t, err, ErrCodeStreamCreationError)
		}
	}
}
