package host

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/turboretry/turboretry/internal/testcert"
	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/offload/reuseport"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/quiclb"
)

func testCodec(t *testing.T, key quiclb.Key) *quiclb.Codec {
	t.Helper()
	c, err := quiclb.NewCodec(quiclb.Config{HostID: []byte{0x44}, MACKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWorkersSplitAnnouncesWhatTheMACCannotCover: two workers in split
// mode with authenticated IDs. Clients connect to both Transports; every
// ID the Transports route is one of the server's (it verifies), and none
// of them is announced; an ID that does not verify (a client's chosen
// DCID of the same length) is.
func TestWorkersSplitAnnouncesWhatTheMACCannotCover(t *testing.T) {
	kr := testKeyRing(t, 7)
	ids := testCodec(t, quiclb.KeyFromRing(kr))
	w, err := ListenWorkers(reuseport.Config{Addr: "127.0.0.1:0", Workers: 2, IDs: ids, Fallback: reuseport.FallbackPlain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	var mu sync.Mutex
	learned := map[string]bool{}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := announce.NewListener(announce.ListenerConfig{Conn: pc, Key: announce.Key(kr), CIDLen: ids.Len(),
		Insert: func(cid []byte) { mu.Lock(); learned[string(cid)] = true; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Serve(ctx) }()
	t.Cleanup(func() { cancel(); pc.Close(); <-done })

	var routed sync.Map
	o, err := AttachWorkers(w.Transports, w.WorkerFor, Config{Mode: ModeSplit, AgentControl: pc.LocalAddr().(*net.UDPAddr).AddrPort(),
		KeyRing: kr, IDs: ids, Admitted: func(cid []byte, _ error) { routed.Store(string(cid), true) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	srvTLS, cliTLS := testcert.TLS(t, "tr-test")
	for _, tr := range w.Transports {
		ln, err := tr.Listen(srvTLS, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept(ctx)
				if err != nil {
					return
				}
				go func() {
					s, err := c.AcceptStream(ctx)
					if err == nil {
						buf := make([]byte, 5)
						if _, err := io.ReadFull(s, buf); err == nil {
							_, _ = s.Write(buf)
						}
						_ = s.Close()
					}
				}()
			}
		}()
	}
	srvAddr := w.Group.LocalAddr().String()
	for i := range 6 {
		c, err := quic.DialAddr(ctx, srvAddr, cliTLS, nil)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Write([]byte("hello"))
		buf := make([]byte, 5)
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "hello" {
			t.Fatalf("client %d: echo %q, %v", i, buf, err)
		}
		_ = c.CloseWithError(0, "")
	}
	// Every server ID routed verifies; none reached the agent.
	n := 0
	routed.Range(func(k, _ any) bool {
		cid := []byte(k.(string))
		if len(cid) == ids.Len() {
			if !ids.Verify(cid) {
				t.Errorf("routed ID %x of the IDs' length does not verify", cid)
			}
			n++
		}
		return true
	})
	if n < 6 {
		t.Fatalf("%d server IDs routed for 6 connections", n)
	}
	foreign := bytes.Repeat([]byte{0xfe}, ids.Len())
	w.Transports[1].ConnectionIDAdded(foreign)
	testutil.WaitFor(t, "the unverifiable ID announced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return learned[string(foreign)]
	})
	mu.Lock()
	if len(learned) != 1 {
		t.Errorf("the agent learned %d IDs, want only the unverifiable one", len(learned))
	}
	mu.Unlock()
	if st, _ := o.Stats(); st.Announcer.Skipped < uint64(n) {
		t.Errorf("announcer skipped %d IDs, want at least the %d server IDs", st.Announcer.Skipped, n)
	}
}

func TestAttachWorkersChecksIDs(t *testing.T) {
	kr := testKeyRing(t, 3)
	ids := testCodec(t, quiclb.KeyFromRing(kr))
	ctl := netip.MustParseAddrPort("127.0.0.1:9")
	gen, _ := ids.Generator(0)
	other, _ := quiclb.NewCodec(quiclb.Config{NonceLen: 6})
	ogen, _ := other.Generator(0)
	for name, c := range map[string]struct {
		gen  quic.ConnectionIDGenerator
		ids  *quiclb.Codec
		want string
	}{
		"IDs but no generator":   {nil, ids, "must issue"},
		"generator but no IDs":   {quic.ConnectionIDGeneratorFunc(gen.Len(), gen.Fill), nil, "own ConnectionIDGenerator"},
		"generator of other IDs": {quic.ConnectionIDGeneratorFunc(ogen.Len(), ogen.Fill), ids, "must issue"},
	} {
		tr := loopbackTransport(t)
		tr.ConnectionIDGenerator = c.gen
		if _, err := AttachWorkers([]*quic.Transport{tr}, nil, Config{Mode: ModeSplit, AgentControl: ctl, KeyRing: kr, IDs: c.ids}); err == nil ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	trs := []*quic.Transport{loopbackTransport(t), loopbackTransport(t)}
	if _, err := AttachWorkers(trs, nil, Config{Mode: ModeSplit, AgentControl: ctl, KeyRing: kr}); err == nil {
		t.Error("two Transports without a steering function accepted")
	}
}
