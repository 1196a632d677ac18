package http3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"
	gqlog "github.com/quic-go/quic-go/http3/qlog"
	gqlogwriter "github.com/quic-go/quic-go/qlogwriter"

	"github.com/turboretry/turboretry/http3/qlog"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/qlogwriter"
	"github.com/turboretry/turboretry/quic"
)

// recordingTrace is a qlog trace whose producers record into one list. It
// counts the producers and sends on closed for each Close; late counts
// events recorded into a closed producer.
type recordingTrace struct {
	mu     sync.Mutex
	events []qlogwriter.Event
	open   int
	late   int
	closed chan struct{}
	// slowClose makes each Close take that long first, as a file's flush
	// may: a close left to another goroutine is then still running when
	// the caller returns.
	slowClose time.Duration
}

func newRecordingTrace() *recordingTrace { return &recordingTrace{closed: make(chan struct{}, 16)} }

func (t *recordingTrace) tracer() func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return t }
}

func (t *recordingTrace) AddProducer() qlogwriter.Recorder {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open++
	return &recordingRecorder{t: t}
}

func (t *recordingTrace) snapshot() (events []qlogwriter.Event, open, late int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events), t.open, t.late
}

// waitClosed waits for n more producers to close.
func (t *recordingTrace) waitClosed(tb testing.TB, n int) {
	tb.Helper()
	for range n {
		select {
		case <-t.closed:
		case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
			_, open, _ := t.snapshot()
			tb.Fatalf("qlog producers not closed: %d open", open)
		}
	}
}

type recordingRecorder struct {
	t      *recordingTrace
	closed bool
}

func (r *recordingRecorder) RecordEvent(ev qlogwriter.Event) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if r.closed {
		r.t.late++
		return
	}
	r.t.events = append(r.t.events, ev)
}

func (r *recordingRecorder) Close() error {
	time.Sleep(r.t.slowClose)
	r.t.mu.Lock()
	r.closed = true
	r.t.open--
	r.t.mu.Unlock()
	r.t.closed <- struct{}{}
	return nil
}

// quicGoTrace is recordingTrace for quic-go's qlog types.
type quicGoTrace struct {
	mu     sync.Mutex
	events []gqlogwriter.Event
}

func (t *quicGoTrace) AddProducer() gqlogwriter.Recorder { return quicGoRecorder{t} }

type quicGoRecorder struct{ t *quicGoTrace }

func (r quicGoRecorder) RecordEvent(ev gqlogwriter.Event) {
	r.t.mu.Lock()
	r.t.events = append(r.t.events, ev)
	r.t.mu.Unlock()
}
func (quicGoRecorder) Close() error { return nil }

// loggedFrame is a HEADERS or DATA event of either implementation, in one
// form: created says the logging side wrote it.
type loggedFrame struct {
	created bool
	stream  uint64
	kind    string
	length  int
	payload int
	fields  string
}

func (f loggedFrame) String() string {
	return fmt.Sprintf("created=%v stream %d %s %d/%d [%s]", f.created, f.stream, f.kind, f.length, f.payload, f.fields)
}

func ourFrames(evs []qlogwriter.Event) []loggedFrame {
	var out []loggedFrame
	for _, ev := range evs {
		var lf loggedFrame
		var raw qlog.RawInfo
		var f any
		switch e := ev.(type) {
		case qlog.FrameCreated:
			lf.created, lf.stream, raw, f = true, uint64(e.StreamID), e.Raw, e.Frame.Frame
		case qlog.FrameParsed:
			lf.stream, raw, f = uint64(e.StreamID), e.Raw, e.Frame.Frame
		default:
			continue
		}
		lf.length, lf.payload = raw.Length, raw.PayloadLength
		switch f := f.(type) {
		case qlog.DataFrame:
			lf.kind = "data"
		case qlog.HeadersFrame:
			lf.kind = "headers"
			var s []string
			for _, hf := range f.HeaderFields {
				s = append(s, hf.Name+": "+hf.Value)
			}
			lf.fields = strings.Join(s, ", ")
		default:
			continue
		}
		out = append(out, lf)
	}
	return out
}

func quicGoFrames(evs []gqlogwriter.Event) []loggedFrame {
	var out []loggedFrame
	for _, ev := range evs {
		var lf loggedFrame
		var raw gqlog.RawInfo
		var f any
		switch e := ev.(type) {
		case gqlog.FrameCreated:
			lf.created, lf.stream, raw, f = true, uint64(e.StreamID), e.Raw, e.Frame.Frame
		case gqlog.FrameParsed:
			lf.stream, raw, f = uint64(e.StreamID), e.Raw, e.Frame.Frame
		default:
			continue
		}
		lf.length, lf.payload = raw.Length, raw.PayloadLength
		switch f := f.(type) {
		case gqlog.DataFrame:
			lf.kind = "data"
		case gqlog.HeadersFrame:
			lf.kind = "headers"
			var s []string
			for _, hf := range f.HeaderFields {
				s = append(s, hf.Name+": "+hf.Value)
			}
			lf.fields = strings.Join(s, ", ")
		default:
			continue
		}
		out = append(out, lf)
	}
	return out
}

// TestQlogFramesMatchQuicGo runs a request with a body and trailers each
// way from quic-go's client, both sides tracing, and checks that every
// HEADERS and DATA frame one side logs as created the other logs as
// parsed, with the same stream, lengths and fields (the server's header
// values redacted by qlog.RedactHeaders), that the control streams'
// types and SETTINGS are logged, and that the server's producers all
// close with the connection and record nothing after.
func TestQlogFramesMatchQuicGo(t *testing.T) {
	ours := newRecordingTrace()
	redact := func(name, value string) string {
		if name == "Authorization" {
			return "***"
		}
		return value
	}
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Echo")
		w.Write(body)
		w.Header().Set("X-Echo", r.Trailer.Get("X-Check"))
	}), func(s *Server) { s.QUICConfig.Tracer = qlog.RedactHeaders(ours.tracer(), redact) })

	theirs := &quicGoTrace{}
	tr := &quicgohttp3.Transport{TLSClientConfig: clientTLS, DisableCompression: true, QUICConfig: &quicgo.Config{
		Tracer: func(context.Context, bool, quicgo.ConnectionID) gqlogwriter.Trace { return theirs },
	}}
	req, err := http.NewRequest(http.MethodPost, localhostURL(t, addr, "/echo"), strings.NewReader("hello qlog"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "secret")
	req.Trailer = http.Header{"X-Check": {"c1"}}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if err != nil || string(body) != "hello qlog" || rsp.Trailer.Get("X-Echo") != "c1" {
		t.Fatalf("response %q %v, trailer %v", body, err, rsp.Trailer)
	}
	if _, open, _ := ours.snapshot(); open != 3 {
		t.Errorf("%d server producers open, want 3 (QUIC, HTTP/3, our control stream)", open)
	}
	// Each side reads the other's control stream on a goroutine of its
	// own, which the response need not wait for: close only once our
	// server logged the client's control stream and quic-go's client
	// our SETTINGS.
	testutil.WaitFor(t, "our server to log the client's control stream", func() bool {
		evs, _, _ := ours.snapshot()
		return slices.ContainsFunc(evs, func(ev qlogwriter.Event) bool {
			e, ok := ev.(qlog.StreamTypeSet)
			return ok && e.StreamType == qlog.StreamTypeControl && e.Initiator != qlog.InitiatorLocal
		})
	})
	testutil.WaitFor(t, "quic-go's client to parse our SETTINGS", func() bool {
		theirs.mu.Lock()
		defer theirs.mu.Unlock()
		return slices.ContainsFunc(theirs.events, func(ev gqlogwriter.Event) bool {
			fp, ok := ev.(gqlog.FrameParsed)
			if !ok {
				return false
			}
			_, ok = fp.Frame.Frame.(gqlog.SettingsFrame)
			return ok
		})
	})
	tr.Close()
	ours.waitClosed(t, 3)

	evs, _, late := ours.snapshot()
	if late != 0 {
		t.Errorf("%d events recorded after a producer closed", late)
	}
	theirs.mu.Lock()
	gevs := slices.Clone(theirs.events)
	theirs.mu.Unlock()

	var got, want []loggedFrame
	for _, f := range ourFrames(evs) {
		if f.stream == 0 { // the request stream
			got = append(got, f)
		}
	}
	for _, f := range quicGoFrames(gevs) {
		if f.stream != 0 {
			continue
		}
		f.created = !f.created
		f.fields = strings.ReplaceAll(f.fields, "authorization: secret", "authorization: ***")
		want = append(want, f)
	}
	slices.SortStableFunc(got, func(a, b loggedFrame) int { return boolOrder(a.created, b.created) })
	slices.SortStableFunc(want, func(a, b loggedFrame) int { return boolOrder(a.created, b.created) })
	if !slices.Equal(got, want) {
		t.Errorf("our server logged\n%v\nquic-go's client\n%v", joinFrames(got), joinFrames(want))
	}
	if !slices.ContainsFunc(got, func(f loggedFrame) bool { return strings.Contains(f.fields, ":method: POST") }) ||
		!slices.ContainsFunc(got, func(f loggedFrame) bool { return f.kind == "headers" && f.fields == "x-echo: c1" }) {
		t.Errorf("request header or response trailer missing: %v", joinFrames(got))
	}

	// Control streams: our local one carries our SETTINGS, the client's
	// is logged as remote, with the IDs quic-go logs.
	var ourCtrl, peerCtrl quic.StreamID = -1, -1
	var sentSettings *qlog.SettingsFrame
	for _, ev := range evs {
		switch e := ev.(type) {
		case qlog.StreamTypeSet:
			if e.StreamType == qlog.StreamTypeControl && e.Initiator == qlog.InitiatorLocal {
				ourCtrl = e.StreamID
			} else if e.StreamType == qlog.StreamTypeControl {
				peerCtrl = e.StreamID
			}
		case qlog.FrameCreated:
			if s, ok := e.Frame.Frame.(qlog.SettingsFrame); ok && e.StreamID == ourCtrl {
				sentSettings = &s
			}
		}
	}
	var theirCtrl, theirPeerCtrl quicgo.StreamID = -1, -1
	var gotSettings *gqlog.SettingsFrame
	for _, ev := range gevs {
		switch e := ev.(type) {
		case gqlog.StreamTypeSet:
			if e.StreamType == gqlog.StreamTypeControl && e.Initiator == gqlog.InitiatorLocal {
				theirCtrl = e.StreamID
			} else if e.StreamType == gqlog.StreamTypeControl {
				theirPeerCtrl = e.StreamID
			}
		case gqlog.FrameParsed:
			if s, ok := e.Frame.Frame.(gqlog.SettingsFrame); ok {
				gotSettings = &s
			}
		}
	}
	if ourCtrl != 3 || peerCtrl != 2 || int64(theirCtrl) != int64(peerCtrl) || int64(theirPeerCtrl) != int64(ourCtrl) {
		t.Errorf("control streams: ours %d, the client's %d; quic-go logs %d and %d", ourCtrl, peerCtrl, theirCtrl, theirPeerCtrl)
	}
	if sentSettings == nil || gotSettings == nil || sentSettings.MaxFieldSectionSize != gotSettings.MaxFieldSectionSize ||
		sentSettings.ExtendedConnect != 1 || gotSettings.ExtendedConnect != 1 || sentSettings.Datagram != gotSettings.Datagram {
		t.Errorf("SETTINGS logged %+v, quic-go parsed %+v", sentSettings, gotSettings)
	}
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func joinFrames(fs []loggedFrame) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.String())
	}
	return strings.Join(s, "\n")
}

// TestQlogProducerOutlivesConnectionForHandler checks that the server's
// HTTP/3 producer stays open while a handler runs on after its
// connection closed, and closes once it returns; the other producers
// close with the connection.
func TestQlogProducerOutlivesConnectionForHandler(t *testing.T) {
	ours := newRecordingTrace()
	inHandler, release := make(chan struct{}), make(chan struct{})
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		w.(http.Flusher).Flush()
		close(inHandler)
		<-release
	}), func(s *Server) { s.QUICConfig.Tracer = ours.tracer() })
	tr := &Transport{TLSClientConfig: clientTLS}
	rsp, err := tr.RoundTrip(mustRequest(t, localhostURL(t, addr, "/")))
	if err != nil {
		t.Fatal(err)
	}
	<-inHandler
	tr.Close()
	rsp.Body.Close()
	ours.waitClosed(t, 2) // QUIC and our control stream's producers
	if _, open, _ := ours.snapshot(); open != 1 {
		t.Fatalf("%d producers open while the handler runs, want 1", open)
	}
	close(release)
	ours.waitClosed(t, 1)
	if _, _, late := ours.snapshot(); late != 0 {
		t.Errorf("%d events recorded after a producer closed", late)
	}
}

// TestQlogResponseHeaderTooLarge checks what our client logs and returns
// for a response header over MaxResponseHeaderBytes: a HEADERS frame
// longer than the limit is logged with its lengths and no fields and
// refused unread; one within it that decodes to more is logged with the
// fields decoded before the limit.
func TestQlogResponseHeaderTooLarge(t *testing.T) {
	const limit = 1024
	for _, tc := range []struct {
		name     string
		header   func(http.Header)
		wantErr  string
		wantLong bool
	}{
		{"frame", func(h http.Header) {
			for i := range 20 {
				h.Set(fmt.Sprintf("x-%02d", i), strings.Repeat("v", 100)) // about 90 bytes Huffman-coded
			}
		}, "HEADERS frame too large", true},
		{"decoded", func(h http.Header) {
			for range 200 {
				h.Add("Content-Type", "text/plain;charset=utf-8") // a static table entry: 2 bytes each
			}
		}, "headers too large", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.header(w.Header())
			}))
			trace := newRecordingTrace()
			tr := &Transport{TLSClientConfig: clientTLS, MaxResponseHeaderBytes: limit, QUICConfig: &quic.Config{Tracer: trace.tracer()}}
			defer tr.Close()
			_, err := tr.RoundTrip(mustRequest(t, localhostURL(t, addr, "/")))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RoundTrip: %v, want %q", err, tc.wantErr)
			}
			evs, _, _ := trace.snapshot()
			var found bool
			for _, f := range ourFrames(evs) {
				if f.created || f.kind != "headers" || f.stream != 0 {
					continue
				}
				found = true
				if tc.wantLong != (f.payload > limit) || f.length <= f.payload {
					t.Errorf("logged %v", f)
				}
				if tc.wantLong != (f.fields == "") {
					t.Errorf("fields logged: %q", f.fields)
				}
			}
			if !found {
				t.Fatalf("no HEADERS frame logged as parsed: %v", joinFrames(ourFrames(evs)))
			}
		})
	}
}

// TestQlogClientTraceEndsWithClose checks that our client's trace, the
// QUIC producer and the HTTP/3 one, is closed when Transport.Close
// returns, so a program may exit right after: the HTTP/3 producer's
// release had waited for a goroutine run when the connection's context
// ended.
func TestQlogClientTraceEndsWithClose(t *testing.T) {
	_, addr, clientTLS := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	for i := range 5 {
		ours := newRecordingTrace()
		ours.slowClose = 5 * time.Millisecond
		tr := &Transport{TLSClientConfig: clientTLS, QUICConfig: &quic.Config{Tracer: ours.tracer()}}
		rsp, err := tr.RoundTrip(mustRequest(t, localhostURL(t, addr, "/")))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(rsp.Body)
		rsp.Body.Close()
		tr.Close()
		if _, open, _ := ours.snapshot(); open != 0 {
			t.Fatalf("run %d: %d client qlog producers open after Transport.Close returned", i, open)
		}
	}
}
