package quic

import (
	"context"
	"time"
)

// Stream is a bidirectional stream. Read and Write may be used concurrently
// with each other, each from one goroutine at a time.
type Stream struct{ s *stream }

// SendStream is the sending half of a stream, or a unidirectional stream we
// opened.
type SendStream struct{ s *stream }

// ReceiveStream is the receiving half of a stream, or a unidirectional
// stream the peer opened.
type ReceiveStream struct{ s *stream }

// StreamID returns the stream's ID.
func (s *Stream) StreamID() StreamID { return StreamID(s.s.id) }

// Read reads stream data; it returns io.EOF after the peer's FIN, a
// *StreamError after a reset, and the connection's error once it closed.
func (s *Stream) Read(p []byte) (int, error) { return s.s.read(p) }

// Write queues p for sending. It blocks while the stream has queued what
// the peer's flow control allows plus 16 KiB, or while the connection's or
// the Transport's send budget is used up (docs/api.md "Limits").
func (s *Stream) Write(p []byte) (int, error) { return s.s.write(p) }

// Close closes the send side: a FIN follows the written data. The receive
// side stays open.
func (s *Stream) Close() error { return s.s.closeSend() }

// CancelWrite abandons the send side with RESET_STREAM carrying code.
func (s *Stream) CancelWrite(code StreamErrorCode) { s.s.cancelWrite(code) }

// CancelRead asks the peer to stop sending with STOP_SENDING carrying code.
func (s *Stream) CancelRead(code StreamErrorCode) { s.s.cancelRead(code) }

// Context is canceled once the send side is closed, reset or the
// connection closes.
func (s *Stream) Context() context.Context { return s.s.sendCtx }

// SetDeadline sets the read and write deadlines.
func (s *Stream) SetDeadline(t time.Time) error {
	s.s.setReadDeadline(t)
	s.s.setWriteDeadline(t)
	return nil
}

// SetReadDeadline sets the deadline for Read; the zero time disables it.
func (s *Stream) SetReadDeadline(t time.Time) error { s.s.setReadDeadline(t); return nil }

// SetWriteDeadline sets the deadline for Write; the zero time disables it.
func (s *Stream) SetWriteDeadline(t time.Time) error { s.s.setWriteDeadline(t); return nil }

// StreamID returns the stream's ID.
func (s *SendStream) StreamID() StreamID { return StreamID(s.s.id) }

// Write queues p for sending; it blocks as Stream.Write does.
func (s *SendStream) Write(p []byte) (int, error) { return s.s.write(p) }

// Close closes the stream: a FIN follows the written data.
func (s *SendStream) Close() error { return s.s.closeSend() }

// CancelWrite abandons the stream with RESET_STREAM carrying code.
func (s *SendStream) CancelWrite(code StreamErrorCode) { s.s.cancelWrite(code) }

// Context is canceled once the stream is closed, reset or the connection
// closes.
func (s *SendStream) Context() context.Context { return s.s.sendCtx }

// SetWriteDeadline sets the deadline for Write; the zero time disables it.
func (s *SendStream) SetWriteDeadline(t time.Time) error { s.s.setWriteDeadline(t); return nil }

// StreamID returns the stream's ID.
func (s *ReceiveStream) StreamID() StreamID { return StreamID(s.s.id) }

// Read reads stream data; see Stream.Read.
func (s *ReceiveStream) Read(p []byte) (int, error) { return s.s.read(p) }

// CancelRead asks the peer to stop sending with STOP_SENDING carrying code.
func (s *ReceiveStream) CancelRead(code StreamErrorCode) { s.s.cancelRead(code) }

// SetReadDeadline sets the deadline for Read; the zero time disables it.
func (s *ReceiveStream) SetReadDeadline(t time.Time) error { s.s.setReadDeadline(t); return nil }
