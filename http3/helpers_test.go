package http3

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// readerKinds runs a test against a reader that can read single bytes
// (bytes.Reader) and one that returns one byte per Read and is not an
// io.ByteReader, the two paths of frameReader.
var readerKinds = []struct {
	name string
	make func([]byte) io.Reader
}{
	{"bytes", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"onebyte", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
}

// wantCode fails the test unless err is a local *Error with code.
func wantCode(t *testing.T, err error, code ErrCode) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want %s", err, err, code)
	}
	if e.ErrorCode != code || e.Remote {
		t.Fatalf("error = %v, want local %s", err, code)
	}
}

// concat joins byte slices.
func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}
