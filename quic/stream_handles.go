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

// Write queues p for sending, as far as the peer's flow control allows (a
// p that fits one packet whole), and returns once all but 16 KiB of it has
// been sent. It blocks for flow control credit, or while the connection's
// or the Transport's send budget is used up (docs/api.md "Limits"); a
// deadline that passes returns the bytes let through so far.
func (s *Stream) Write(p []byte) (int, error) { return s.s.write(p) }

// Close closes the send side: a FIN follows the written data. The receive
// side stays open.
func (s *Stream) Close() error { return s.s.closeSend() }

// CancelWrite abandons the send side with RESET_STREAM carrying code, or
// RESET_STREAM_AT after SetReliableBoundary (see there).
func (s *Stream) CancelWrite(code StreamErrorCode) { s.s.cancelWrite(code) }

// SetReliableBoundary marks the data written so far as reliable: a later
// CancelWrite sends RESET_STREAM_AT (draft-ietf-quic-reliable-stream-reset)
// and keeps sending and resending the data up to this point until the peer
// acknowledged it, so its reader gets that data before the reset error.
// Calling it again moves the boundary up to the data written by then. It
// has no effect when the peer did not advertise support (see
// ConnectionState.SupportsStreamResetPartialDelivery.Remote): CancelWrite
// then sends RESET_STREAM, as in quic-go. A STOP_SENDING from the peer
// still ends the delivery.
func (s *Stream) SetReliableBoundary() { s.s.setReliableBoundary() }

// CancelRead asks the peer to stop sending with STOP_SENDING carrying code.
func (s *Stream) CancelRead(code StreamErrorCode) { s.s.cancelRead(code) }

// Context is canceled once the send side is closed, reset or the
// connection closes.
func (s *Stream) Context() context.Context { return s.s.context() }

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

// CancelWrite abandons the stream with RESET_STREAM carrying code, or
// RESET_STREAM_AT after SetReliableBoundary.
func (s *SendStream) CancelWrite(code StreamErrorCode) { s.s.cancelWrite(code) }

// SetReliableBoundary marks the data written so far as reliable; see
// Stream.SetReliableBoundary.
func (s *SendStream) SetReliableBoundary() { s.s.setReliableBoundary() }

// Context is canceled once the stream is closed, reset or the connection
// closes.
func (s *SendStream) Context() context.Context { return s.s.context() }

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

// Peek fills b with stream data without consuming it. It waits until
// len(b) bytes are there, returns them with io.EOF if the stream ends
// first, and respects the read deadline. With it *Stream is a
// quicvarint.Peeker.
func (s *Stream) Peek(b []byte) (int, error) { return s.s.peek(b) }

// TryWriteAll queues all of p if it can be queued at once (flow control,
// the stream's and the send budgets), else nothing and ErrWouldBlock. It
// never waits and ignores the write deadline.
func (s *Stream) TryWriteAll(p []byte) error { return s.s.tryWriteAll(p) }

// WriteWithLimit is Write with an additional send limit: as packets are
// built, limiter is offered the bytes the next STREAM frame may carry
// (after flow control) and returns how many it grants (clamped to
// [0, maxBytes]); retransmissions do not ask it again. When it grants less
// than offered, WriteWithLimit returns the bytes accepted so far and
// ErrWriteLimitReached. limiter runs on the goroutine calling
// WriteWithLimit, one call at a time, without any lock of ours held: it
// may call into the stream and the connection (quic-go's runs with its
// flow control locked and must not). A nil limiter makes it Write.
func (s *Stream) WriteWithLimit(p []byte, limiter func(maxBytes int) int) (int, error) {
	return s.s.writeWithLimit(p, limiter)
}

// SetPriority sets the stream's scheduling priority (RFC 9218): urgency
// 0 (first) to 7, clamped; within an urgency, incremental streams share
// the connection round robin and non-incremental ones are sent one after
// another in stream ID order. The default is urgency 3, incremental.
func (s *Stream) SetPriority(urgency int8, incremental bool) { s.s.setPriority(urgency, incremental) }

// ReleaseStreamCredit lets the peer open another stream in place of this
// one once it completed, when Config.RequireStreamCreditRelease is set;
// otherwise, and for streams we opened, it does nothing.
func (s *Stream) ReleaseStreamCredit() { s.s.releaseCredit() }

// SetReceiveFinalSizeCallback sets a function called once with the final
// size of the receive side, learned from a FIN or RESET_STREAM: at once if
// it is known already, else later on the connection's goroutine. It runs
// without any lock of ours held, so it may call into the stream and the
// connection; blocking delays the connection. It is not called if the
// connection closes first. A nil callback removes it.
func (s *Stream) SetReceiveFinalSizeCallback(cb func(int64)) { s.s.setFinalSizeCallback(cb) }

// NotifyReadable calls cb once, as soon as Read would return without
// waiting (data, the end of the stream, a reset or the connection's
// error is there): at once on the caller's goroutine when that is so
// already, otherwise on the connection's goroutine, without its locks; cb
// must not block. It may not be called once the connection closed. A
// later call replaces cb; nil cancels it. It lets a
// reader of a stream that is mostly quiet wait without a goroutine of its
// own.
func (s *Stream) NotifyReadable(cb func()) { s.s.notifyReadable(cb) }

// TryWriteAll is Stream.TryWriteAll.
func (s *SendStream) TryWriteAll(p []byte) error { return s.s.tryWriteAll(p) }

// WriteWithLimit is Stream.WriteWithLimit.
func (s *SendStream) WriteWithLimit(p []byte, limiter func(maxBytes int) int) (int, error) {
	return s.s.writeWithLimit(p, limiter)
}

// SetPriority is Stream.SetPriority.
func (s *SendStream) SetPriority(urgency int8, incremental bool) {
	s.s.setPriority(urgency, incremental)
}

// Peek is Stream.Peek.
func (s *ReceiveStream) Peek(b []byte) (int, error) { return s.s.peek(b) }

// NotifyReadable is Stream.NotifyReadable.
func (s *ReceiveStream) NotifyReadable(cb func()) { s.s.notifyReadable(cb) }

// ReleaseStreamCredit is Stream.ReleaseStreamCredit.
func (s *ReceiveStream) ReleaseStreamCredit() { s.s.releaseCredit() }

// SetReceiveFinalSizeCallback is Stream.SetReceiveFinalSizeCallback.
func (s *ReceiveStream) SetReceiveFinalSizeCallback(cb func(int64)) { s.s.setFinalSizeCallback(cb) }
