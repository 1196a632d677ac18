package quic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/turboretry/turboretry/internal/testhook"
	"github.com/turboretry/turboretry/qlog"
)

// forceKeyUpdate initiates a key update as soon as one is allowed (the
// previous one must have been acknowledged).
func forceKeyUpdate(c *Conn) error {
	for range 1000 {
		c.mu.Lock()
		err := c.keys.initiateUpdate(c.hs.confirmed, c.trace)
		c.mu.Unlock()
		if err == nil {
			c.wake()
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("key update never allowed")
}

func keyGeneration(c *Conn) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys.app.Generation()
}

func TestKeyUpdateDuringTransfer(t *testing.T) {
	for _, peer := range []string{"ours", "quic-go"} {
		t.Run(peer, func(t *testing.T) {
			simTest(t, simLink, func(t *testing.T, s *sim) {
				ctx := s.ctx()
				addr := s.peerServer(peer)
				ctls := clientTLS(t)
				frames := s.logFrames(simClientAddr(1), ctls)
				c := s.dialTLS(simClientAddr(1), addr, ctls, nil)
				st, err := c.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				data := testData(1<<20, 9)
				errc := make(chan error, 1)
				go func() {
					half := len(data) / 2
					if _, err := st.Write(data[:half]); err != nil {
						errc <- err
						return
					}
					if err := forceKeyUpdate(c); err != nil {
						errc <- err
						return
					}
					if _, err := st.Write(data[half:]); err != nil {
						errc <- err
						return
					}
					errc <- st.Close()
				}()
				got, err := io.ReadAll(st)
				if err != nil {
					t.Fatal(err)
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data) {
					t.Fatal("data mismatch across the key update")
				}
				// quic-go also updates keys early on its own (after about 100
				// packets), so its peer may see more than one generation.
				if g := keyGeneration(c); g < 1 || (peer == "ours" && g != 1) {
					t.Fatalf("key generation %d", g)
				}
				// On the wire: each side's 1-RTT packets change key phase
				// once (our update; the peer's answer to it), and never
				// back, but for quic-go's own early updates.
				for _, fromClient := range []bool{true, false} {
					changes, phase := 0, false
					for _, p := range frames.packets(t, c, fromClient, defaultConnIDLength) {
						if p.keyPhase != phase {
							changes++
							phase = p.keyPhase
						}
					}
					if changes < 1 || (peer == "ours" && changes != 1) {
						t.Errorf("the key phase of the %s packets changed %d times", map[bool]string{true: "client's", false: "server's"}[fromClient], changes)
					}
				}
			})
		})
	}
}

// forcePeerKeyUpdate moves c to the next key generation whatever RFC 9001
// allows, as a misbehaving peer would, and has it send a PING with the new
// keys. It returns once the PING is on its way.
func forcePeerKeyUpdate(t *testing.T, c *Conn) {
	t.Helper()
	c.mu.Lock()
	err := c.keys.app.NextGeneration()
	if err == nil {
		c.keys.onPeerUpdate(time.Now(), c.loss.pto())
		c.send.pingPending = true
	}
	c.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	c.wake()
	synctest.Wait()
}

// checkKeyUpdateError checks that c was closed with KEY_UPDATE_ERROR, by
// the peer (remote) or by itself.
func checkKeyUpdateError(t *testing.T, c *Conn, remote bool) {
	t.Helper()
	<-c.Context().Done()
	var te *TransportError
	if err := context.Cause(c.Context()); !errors.As(err, &te) || te.ErrorCode != KeyUpdateError || te.Remote != remote {
		t.Fatalf("closed with %v, want KEY_UPDATE_ERROR (remote %v)", err, remote)
	}
}

// TestPeerKeyUpdateTooSoon: a peer that updates keys a second time before
// it could have received an acknowledgment in the new key phase (RFC 9001
// section 6.2) is not followed: the connection closes with
// KEY_UPDATE_ERROR, and the peer learns the code. Both updates reach the
// client at the same instant, before its delayed ACK of the first.
func TestPeerKeyUpdateTooSoon(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, s.ctx(), c, 1000)
		time.Sleep(time.Second) // every ACK sent; both sides confirmed
		sc := srv.only(t)
		forcePeerKeyUpdate(t, sc)
		forcePeerKeyUpdate(t, sc)
		checkKeyUpdateError(t, c, false)
		checkKeyUpdateError(t, sc, true)
		if g := keyGeneration(c); g != 1 {
			t.Errorf("the client moved to key generation %d, want 1", g)
		}
	})
}

// TestPeerKeyUpdatesFollowed: a peer that updates keys, waits for an
// acknowledgment in the new phase, and updates again is followed each
// time, both when it updates as soon as RFC 9001 allows and when it
// waits longer.
func TestPeerKeyUpdatesFollowed(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 1000)
		sc := srv.only(t)
		for gen := uint64(1); gen <= 4; gen++ {
			if gen%2 == 1 {
				// The server's own updates wait for the acknowledgment
				// of one of its packets in the current phase.
				if err := forceKeyUpdate(sc); err != nil {
					t.Fatal(err)
				}
			} else {
				// One round trip plus the client's ACK delay later, the
				// client has acknowledged the previous update's PING.
				time.Sleep(100 * time.Millisecond)
				forcePeerKeyUpdate(t, sc)
			}
			echoOurs(t, ctx, c, 1000)
			if g := keyGeneration(c); g != gen {
				t.Fatalf("client at key generation %d, want %d", g, gen)
			}
		}
		if err := context.Cause(c.Context()); err != nil {
			t.Fatalf("connection closed: %v", err)
		}
	})
}

// TestKeyUpdatesAsSoonAsAllowed: both sides update keys whenever RFC 9001
// allows them (as quic-go does with its update interval lowered to one
// packet), during a transfer; neither takes the other's updates for ones
// that came too soon.
func TestKeyUpdatesAsSoonAsAllowed(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 1000)
		sc := srv.only(t)
		done := make(chan struct{})
		updated := make(chan struct{})
		defer func() {
			close(done)
			<-updated
		}()
		go func() {
			defer close(updated)
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
				}
				for _, conn := range []*Conn{c, sc} {
					conn.mu.Lock()
					_ = conn.keys.initiateUpdate(conn.hs.confirmed, conn.trace)
					conn.mu.Unlock()
					conn.wake()
				}
			}
		}()
		// An update takes about a round trip (10 ms); 256 KiB echo in
		// less than that.
		for i := 0; keyGeneration(c) < 30; i++ {
			if i == 100 {
				t.Fatalf("only %d key updates", keyGeneration(c))
			}
			echoOurs(t, ctx, c, 256<<10)
		}
		for _, conn := range []*Conn{c, sc} {
			if err := context.Cause(conn.Context()); err != nil {
				t.Fatalf("connection closed: %v", err)
			}
		}
	})
}

// TestKeyUpdateKeepsPreviousKeysForSilentPeer: after our own key update,
// the previous receive keys stay until a packet of the peer's shows it
// follows (RFC 9001 section 6.5 counts the three PTOs from then). A
// server that updates while flow control blocks it sends nothing with the
// new keys; the client, which never saw them, asks for more data with the
// old ones a second later, and the transfer goes on.
func TestKeyUpdateKeepsPreviousKeysForSilentPeer(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		ctx := s.ctx()
		srv := s.server(nil, nil)
		c := s.dial(simClientAddr(1), srv.addr, nil)
		echoOurs(t, ctx, c, 1000)
		sc := srv.only(t)
		data := testData(4<<20, 7)
		written := make(chan error, 1)
		go func() {
			str, err := sc.OpenUniStream()
			if err == nil {
				_, err = str.Write(data)
			}
			if err == nil {
				err = str.Close()
			}
			written <- err
		}()
		str, err := c.AcceptUniStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The client reads nothing yet: the server fills the stream's
		// window, and everything it sent is acknowledged.
		time.Sleep(time.Second)
		if err := forceKeyUpdate(sc); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // many PTOs on this 10 ms path
		got, err := io.ReadAll(str)
		if err != nil {
			t.Fatalf("reading after the server's key update: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, not the %d written", len(got), len(data))
		}
		if err := <-written; err != nil {
			t.Fatal(err)
		}
		if g := keyGeneration(c); g != 1 {
			t.Fatalf("client at key generation %d, want 1", g)
		}
	})
}

// TestKeyUpdateIntervalHook: with testhook.SetKeyUpdateInterval(1) (the
// knob the drop-in suite maps quic-go's handshake.SetKeyUpdateInterval
// to), our server initiates a key update whenever RFC 9001 allows one
// during a transfer, and quic-go's client follows each. The server's
// qlog has the key phase of every packet it sent (sealing sets the bit,
// after the packet is recorded).
func TestKeyUpdateIntervalHook(t *testing.T) {
	simTest(t, simLink, func(t *testing.T, s *sim) {
		t.Cleanup(testhook.SetKeyUpdateInterval(1))
		ctx := s.ctx()
		var log eventLog
		srv := s.server(nil, &Config{Tracer: log.tracer})
		_, qc := s.dialQuicGo(simClientAddr(1), srv.addr)
		echoOver(t, ctx, qc, 1000)
		sc := srv.only(t)
		for i := 0; keyGeneration(sc) < 20; i++ {
			if i == 20 {
				t.Fatalf("only %d key updates", keyGeneration(sc))
			}
			echoOver(t, ctx, qc, 256<<10)
		}
		if err := context.Cause(sc.Context()); err != nil {
			t.Fatalf("connection closed: %v", err)
		}
		changes, phase := 0, qlog.KeyPhaseZero
		for _, ev := range log.all() {
			if p, ok := ev.(qlog.PacketSent); ok && p.Header.PacketType == qlog.PacketType1RTT && p.Header.KeyPhaseBit != phase {
				changes++
				phase = p.Header.KeyPhaseBit
			}
		}
		if changes < 20 {
			t.Errorf("the server's qlog shows %d key phase changes in its packets, after %d updates", changes, keyGeneration(sc))
		}
	})
}
