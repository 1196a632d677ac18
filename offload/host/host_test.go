package host

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/turboretry/turboretry/internal/testutil"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/announce"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

func testKeyRing(t *testing.T, seed byte) *token.KeyRing {
	t.Helper()
	return testutil.KeyRing(t, bytes.Repeat([]byte{seed}, 32))
}

func loopbackTransport(t *testing.T) *quic.Transport {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close(); pc.Close() })
	return tr
}

// TestAttachRefused: Attach checks its configuration and attaches nothing
// for ModeNone or without a key ring.
func TestAttachRefused(t *testing.T) {
	kr := testKeyRing(t, 1)
	ctl := netip.MustParseAddrPort("127.0.0.1:9")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"mode none", Config{KeyRing: kr}, "nothing to attach"},
		{"no key ring", Config{Mode: ModeSplit, AgentControl: ctl}, "KeyRing is required"},
		{"bad config", Config{Mode: ModeSplit, KeyRing: kr}, "needs --agent-control"},
		{"window too short", Config{Mode: ModeXDP, Iface: "lo", RotateEvery: time.Second, KeyRing: kr}, "T_W"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := loopbackTransport(t)
			o, err := Attach(tr, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Attach: %v, %v; want an error containing %q", o, err, tc.want)
			}
			if tr.ConnectionIDAdded != nil {
				t.Fatal("a refused Attach set the Transport's ConnectionIDAdded hook")
			}
		})
	}
}

// TestAttachSplitAnnounces: in split mode the Transport's connection IDs
// of the agent's length reach the agent's control listener, authenticated
// with the key of the shared root secret, and after SetKeyRing with the
// key of the new one; the counters say so.
func TestAttachSplitAnnounces(t *testing.T) {
	kr1, kr2 := testKeyRing(t, 1), testKeyRing(t, 2)
	got := make(chan []byte, 16)
	var l *announce.Listener
	startListener := func(kr *token.KeyRing) netip.AddrPort {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		l, err = announce.NewListener(announce.ListenerConfig{
			Conn: pc, Key: announce.Key(kr), CIDLen: agent.DefaultCIDLen,
			Insert: func(cid []byte) { got <- bytes.Clone(cid) },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = l.Serve(ctx) }()
		t.Cleanup(func() { cancel(); pc.Close(); <-done })
		return pc.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	ctl := startListener(kr1)

	tr := loopbackTransport(t)
	var admitted [][]byte
	o, err := Attach(tr, Config{Mode: ModeSplit, AgentControl: ctl, KeyRing: kr1,
		Admitted: func(cid []byte, err error) {
			if err != nil {
				t.Errorf("Admitted(%x, %v) in split mode", cid, err)
			}
			admitted = append(admitted, bytes.Clone(cid))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Mode() != ModeSplit || tr.ConnectionIDLength != agent.DefaultCIDLen {
		t.Fatalf("mode %v, Transport CID length %d; want split, %d", o.Mode(), tr.ConnectionIDLength, agent.DefaultCIDLen)
	}
	want := bytes.Repeat([]byte{0xab}, agent.DefaultCIDLen)
	tr.ConnectionIDAdded([]byte{1, 2, 3, 4}) // a client's Initial DCID: not announced
	tr.ConnectionIDAdded(want)
	if len(admitted) != 2 {
		t.Fatalf("Admitted saw %d IDs, want 2", len(admitted))
	}
	select {
	case cid := <-got:
		if !bytes.Equal(cid, want) {
			t.Fatalf("the agent learned %x, want %x", cid, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the announcement never reached the agent")
	}
	// The announcer counts after the send returns, so the agent may be
	// first.
	testutil.WaitFor(t, "the announcement counted", func() bool {
		st, err := o.Stats()
		return err == nil && st.Mode == ModeSplit && st.Announcer.CIDs == 1 && st.Announcer.Messages == 1
	})

	o.Pause() // only logs: the agent is another process
	if o.Paused() {
		t.Fatal("Paused after Pause in split mode: this process paused nothing")
	}
	if err := o.SetKeyRing(nil); err == nil {
		t.Fatal("SetKeyRing(nil) accepted")
	}
	// After a reload the announcements carry the new key, which an
	// agent still on the old secret rejects.
	if err := o.SetKeyRing(kr2); err != nil {
		t.Fatal(err)
	}
	tr.ConnectionIDAdded(bytes.Repeat([]byte{0xcd}, agent.DefaultCIDLen))
	testutil.WaitFor(t, "the old agent rejecting the new key", func() bool { return l.Stats().Rejected[announce.ReasonMAC] > 0 })
	if ls := l.Stats(); ls.CIDs != 1 {
		t.Fatalf("the old agent admitted %d IDs, want only the one sent before the reload", ls.CIDs)
	}
}
