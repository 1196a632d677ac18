package handshake

import (
	"bytes"
	"crypto/tls"
	"errors"
	"testing"
)

const testDCIDLen = 8

// shortPacket builds a short header packet (8-byte DCID, 2-byte packet
// number) carrying payload, ready for protection.
func shortPacket(pn uint64, payload []byte) []byte {
	p := make([]byte, 0, 1+testDCIDLen+2+len(payload)+16)
	p = append(p, 0x41) // fixed bit, pn length 2
	p = append(p, bytes.Repeat([]byte{0xd1}, testDCIDLen)...)
	p = append(p, byte(pn>>8), byte(pn))
	return append(p, payload...)
}

func appKeyPair(t testing.TB, suite uint16, v Version) (client, server *AppKeys) {
	t.Helper()
	c2s, s2c := testSecret(suite, 0x11), testSecret(suite, 0x22)
	return newAppKeys(t, suite, v, c2s, s2c), newAppKeys(t, suite, v, s2c, c2s)
}

func newAppKeys(t testing.TB, suite uint16, v Version, sendSecret, recvSecret []byte) *AppKeys {
	t.Helper()
	k, err := NewAppKeys(suite, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.SetSendSecret(sendSecret); err != nil {
		t.Fatal(err)
	}
	if err := k.SetRecvSecret(recvSecret); err != nil {
		t.Fatal(err)
	}
	return k
}

func send(t *testing.T, k *AppKeys, pn uint64, payload []byte) []byte {
	t.Helper()
	p, err := k.ProtectPacket(shortPacket(pn, payload), 1+testDCIDLen, 2, pn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func receive(k *AppKeys, packet []byte, largest int64) ([]byte, uint64, bool, error) {
	return k.UnprotectPacket(append([]byte(nil), packet...), 1+testDCIDLen, largest)
}

// Generation 1 keys derived with "quic ku" open what generation 1 sealed
// and not what generation 0 sealed, and the header protection key stays
// the generation 0 one.
func TestKeyUpdateGeneration(t *testing.T) {
	for _, v := range []Version{Version1, Version2} {
		suite := uint16(tls.TLS_AES_256_GCM_SHA384)
		secret0 := testSecret(suite, 0x33)
		secret1, err := NextSecret(suite, secret0, v)
		if err != nil {
			t.Fatal(err)
		}
		keys0, err := deriveKeyMaterial(&suiteAES256, mustParams(t, v), secret0)
		if err != nil {
			t.Fatal(err)
		}
		keys1, err := deriveKeyMaterial(&suiteAES256, mustParams(t, v), secret1)
		if err != nil {
			t.Fatal(err)
		}
		hp0 := new(headerProtector)
		if err := hp0.init(&suiteAES256, keys0.hpKey(&suiteAES256)); err != nil {
			t.Fatal(err)
		}
		// Reference generation 1 sealer/opener: new AEAD key and IV, old hp.
		sealer1, err := newSealer(&suiteAES256, &keys1, hp0)
		if err != nil {
			t.Fatal(err)
		}
		opener1, err := newOpener(&suiteAES256, &keys1, hp0)
		if err != nil {
			t.Fatal(err)
		}
		opener0, err := newOpener(&suiteAES256, &keys0, hp0)
		if err != nil {
			t.Fatal(err)
		}

		k := newAppKeys(t, suite, v, secret0, secret0)
		gen0 := send(t, k, 1, []byte("gen 0"))
		if err := k.NextGeneration(); err != nil {
			t.Fatal(err)
		}
		if k.Generation() != 1 || !k.KeyPhase() {
			t.Fatalf("after update: generation %d phase %v", k.Generation(), k.KeyPhase())
		}
		gen1 := send(t, k, 2, []byte("gen 1"))

		want := shortPacket(2, []byte("gen 1"))
		want[0] |= KeyPhaseBit
		want, err = sealer1.ProtectPacket(want, 1+testDCIDLen, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gen1, want) {
			t.Errorf("%v: generation 1 packet %x, want %x", v, gen1, want)
		}
		if p, _, err := opener1.UnprotectPacket(append([]byte(nil), gen1...), 9, 1); err != nil || string(p) != "gen 1" {
			t.Errorf("%v: generation 1 opener on gen 1 packet: %q, %v", v, p, err)
		}
		if _, _, err := opener1.UnprotectPacket(append([]byte(nil), gen0...), 9, 0); !errors.Is(err, ErrDecryptionFailed) {
			t.Errorf("%v: generation 1 opener on gen 0 packet: err = %v", v, err)
		}
		if _, _, err := opener0.UnprotectPacket(append([]byte(nil), gen1...), 9, 1); !errors.Is(err, ErrDecryptionFailed) {
			t.Errorf("%v: generation 0 opener on gen 1 packet: err = %v", v, err)
		}
	}
}

func mustParams(t *testing.T, v Version) *versionParams {
	t.Helper()
	vp, err := paramsFor(v)
	if err != nil {
		t.Fatal(err)
	}
	return vp
}

// A full key update exchange: the client initiates, the server follows on
// the first packet with the new phase, delayed old-phase packets still
// open until the previous keys are dropped.
func TestKeyUpdateExchange(t *testing.T) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		client, server := appKeyPair(t, suite, Version1)

		// Generation 0 both ways.
		p, pn, upd, err := receive(server, send(t, client, 0, []byte("c0")), -1)
		if err != nil || string(p) != "c0" || pn != 0 || upd {
			t.Fatalf("suite %#x: gen 0 c->s: %q %d %v %v", suite, p, pn, upd, err)
		}
		if _, _, _, err := receive(client, send(t, server, 0, []byte("s0")), -1); err != nil {
			t.Fatal(err)
		}
		server.OnAckSent(0) // s0 acknowledged c0: the client may update
		delayed := send(t, client, 1, []byte("c1 delayed"))

		// Client initiates.
		if err := client.NextGeneration(); err != nil {
			t.Fatal(err)
		}
		if client.SealedPackets() != 0 || !client.HasPreviousKeys() {
			t.Errorf("after initiating: sealed %d, previous kept %v", client.SealedPackets(), client.HasPreviousKeys())
		}
		c2 := send(t, client, 2, []byte("c2"))
		// A server packet of generation 0 still opens at the client.
		if p, _, upd, err := receive(client, send(t, server, 1, []byte("s1 old")), 0); err != nil || upd || string(p) != "s1 old" {
			t.Fatalf("client receiving old phase: %q %v %v", p, upd, err)
		}
		// The server sees the new phase and follows.
		p, pn, upd, err = receive(server, c2, 0)
		if err != nil || !upd || pn != 2 || string(p) != "c2" {
			t.Fatalf("server receiving update: %q %d %v %v", p, pn, upd, err)
		}
		if server.Generation() != 1 || !server.KeyPhase() {
			t.Fatalf("server generation %d", server.Generation())
		}
		// The delayed generation 0 packet (lower pn) opens with previous keys.
		p, _, upd, err = receive(server, delayed, 2)
		if err != nil || upd || string(p) != "c1 delayed" {
			t.Fatalf("delayed old-phase packet: %q %v %v", p, upd, err)
		}
		// The server answers with generation 1; the client opens it
		// with its current keys and no further update.
		p, _, upd, err = receive(client, send(t, server, 2, []byte("s2")), 1)
		if err != nil || upd || string(p) != "s2" || client.Generation() != 1 {
			t.Fatalf("client receiving gen 1: %q %v %v gen %d", p, upd, err, client.Generation())
		}
		// Once previous keys are dropped, old-phase packets are refused.
		server.DropPreviousKeys()
		if server.HasPreviousKeys() {
			t.Fatal("previous keys kept after DropPreviousKeys")
		}
		if _, _, _, err := receive(server, delayed, 2); !errors.Is(err, ErrKeysDiscarded) {
			t.Fatalf("old packet after drop: err = %v", err)
		}
		// Second update, initiated by the server this time, once the
		// client acknowledged s2 in generation 1.
		if _, _, _, err := receive(server, send(t, client, 3, []byte("c3 acks s2")), 2); err != nil {
			t.Fatal(err)
		}
		client.OnAckSent(2)
		if err := server.NextGeneration(); err != nil {
			t.Fatal(err)
		}
		p, _, upd, err = receive(client, send(t, server, 3, []byte("s3")), 2)
		if err != nil || !upd || string(p) != "s3" || client.Generation() != 2 || client.KeyPhase() {
			t.Fatalf("client following second update: %q %v %v gen %d", p, upd, err, client.Generation())
		}
		if _, _, _, err := receive(server, send(t, client, 4, []byte("c4")), 3); err != nil {
			t.Fatalf("server receiving gen 2: %v", err)
		}
	}
}

// A peer may update keys only after it received an ACK, protected with
// the current keys, of one of its packets of the current phase (RFC 9001
// section 6.1): an update before that is refused with ErrKeyUpdateTooSoon
// and changes nothing, and one after it is followed.
func TestKeyUpdateTooSoon(t *testing.T) {
	client, server := appKeyPair(t, tls.TLS_AES_128_GCM_SHA256, Version1)
	// The server updates before the client acknowledged anything.
	if err := server.NextGeneration(); err != nil {
		t.Fatal(err)
	}
	if _, _, upd, err := receive(client, send(t, server, 0, []byte("s0 too soon")), -1); !errors.Is(err, ErrKeyUpdateTooSoon) || upd {
		t.Fatalf("update before any ACK: upd %v err %v", upd, err)
	}
	if client.Generation() != 0 || client.AuthFailures() != 0 {
		t.Fatalf("refused update: generation %d, failures %d", client.Generation(), client.AuthFailures())
	}

	client, server = appKeyPair(t, tls.TLS_AES_128_GCM_SHA256, Version1)
	for pn := range uint64(3) {
		if _, _, _, err := receive(client, send(t, server, pn, []byte("s gen 0")), int64(pn)-1); err != nil {
			t.Fatal(err)
		}
	}
	// The client acknowledged s0 to s2; the server updates.
	client.OnAckSent(2)
	if err := server.NextGeneration(); err != nil {
		t.Fatal(err)
	}
	if _, _, upd, err := receive(client, send(t, server, 3, []byte("s3 gen 1")), 2); err != nil || !upd || client.Generation() != 1 {
		t.Fatalf("first update: upd %v err %v generation %d", upd, err, client.Generation())
	}
	// An ACK the client sends now still has Largest Acknowledged 2, below
	// the server's first generation 1 packet: it is no confirmation.
	client.OnAckSent(2)
	if err := server.NextGeneration(); err != nil {
		t.Fatal(err)
	}
	tooSoon := send(t, server, 4, []byte("s4 gen 2"))
	if _, _, upd, err := receive(client, tooSoon, 3); !errors.Is(err, ErrKeyUpdateTooSoon) || upd || client.Generation() != 1 {
		t.Fatalf("second update without confirmation: upd %v err %v generation %d", upd, err, client.Generation())
	}
	// Once the client acknowledged s3, the same update is followed.
	client.OnAckSent(3)
	if p, _, upd, err := receive(client, tooSoon, 3); err != nil || !upd || string(p) != "s4 gen 2" || client.Generation() != 2 {
		t.Fatalf("second update after confirmation: %q upd %v err %v generation %d", p, upd, err, client.Generation())
	}
	// An update the client initiates needs a new confirmation too: the
	// server cannot have seen the client's generation 3 yet.
	client.OnAckSent(4)
	if err := client.NextGeneration(); err != nil {
		t.Fatal(err)
	}
	if err := server.NextGeneration(); err != nil { // server to generation 3 (following)
		t.Fatal(err)
	}
	if _, _, upd, err := receive(client, send(t, server, 5, []byte("s5 gen 3")), 4); err != nil || upd {
		t.Fatalf("packet of the client's new generation: upd %v err %v", upd, err)
	}
	if err := server.NextGeneration(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := receive(client, send(t, server, 6, []byte("s6 gen 4")), 5); !errors.Is(err, ErrKeyUpdateTooSoon) {
		t.Fatalf("update right after the client's own: err %v", err)
	}
}

// A packet whose Key Phase bit claims the next phase but that was sealed
// with current keys fails, and does not move AppKeys to the next phase.
func TestWrongKeyPhase(t *testing.T) {
	client, server := appKeyPair(t, tls.TLS_AES_128_GCM_SHA256, Version2)
	// Seal with generation 0 keys but the phase bit set.
	packet := shortPacket(5, []byte("liar"))
	packet[0] |= KeyPhaseBit
	packet, err := client.Sealer().ProtectPacket(packet, 9, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	_, _, upd, err := receive(server, packet, 4)
	if !errors.Is(err, ErrDecryptionFailed) || upd {
		t.Fatalf("wrong phase: upd %v err %v", upd, err)
	}
	if server.Generation() != 0 || server.AuthFailures() != 1 {
		t.Fatalf("server generation %d, failures %d", server.Generation(), server.AuthFailures())
	}
	// And a genuine generation 0 packet still opens.
	if _, _, _, err := receive(server, send(t, client, 6, []byte("ok")), 5); err != nil {
		t.Fatal(err)
	}
	// Tampered packets in the current phase count as failures too.
	bad := send(t, client, 7, []byte("tampered"))
	bad[len(bad)-1] ^= 1
	if _, _, _, err := receive(server, bad, 6); !errors.Is(err, ErrDecryptionFailed) || server.AuthFailures() != 2 {
		t.Fatalf("tampered: err %v failures %d", err, server.AuthFailures())
	}
	if server.IntegrityLimit() != AESGCMIntegrityLimit || client.ConfidentialityLimitReached() {
		t.Error("limits wrong")
	}
	if _, err := client.ProtectPacket(nil, 1, 1, 0); err == nil {
		t.Error("ProtectPacket(nil) succeeded")
	}
	if _, _, _, err := server.UnprotectPacket([]byte{0x40}, 1, 0); !errors.Is(err, ErrInvalidPacketNumberOffset) {
		t.Errorf("1-byte packet: err = %v", err)
	}
}

// Secrets arrive one at a time; AppKeys refuses what it cannot do yet.
func TestAppKeysInstallation(t *testing.T) {
	suite := uint16(tls.TLS_AES_128_GCM_SHA256)
	k, err := NewAppKeys(suite, Version1)
	if err != nil {
		t.Fatal(err)
	}
	if k.CanSend() || k.CanReceive() || k.Sealer() != nil || k.SealedPackets() != 0 {
		t.Fatal("empty AppKeys claims keys")
	}
	if _, err := k.ProtectPacket(shortPacket(1, make([]byte, 20)), 9, 2, 1); !errors.Is(err, ErrKeysNotReady) {
		t.Errorf("protect without send secret: err = %v", err)
	}
	if _, _, _, err := k.UnprotectPacket(make([]byte, 40), 9, -1); !errors.Is(err, ErrKeysNotReady) {
		t.Errorf("unprotect without receive secret: err = %v", err)
	}
	if err := k.SetSendSecret(testSecret(suite, 1)[:31]); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("short send secret: err = %v", err)
	}
	if err := k.SetRecvSecret(testSecret(suite, 1)[:31]); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("short receive secret: err = %v", err)
	}
	// A server can send 0.5-RTT data before it can read 1-RTT packets.
	if err := k.SetSendSecret(testSecret(suite, 1)); err != nil {
		t.Fatal(err)
	}
	if !k.CanSend() || k.CanReceive() {
		t.Fatal("CanSend/CanReceive wrong after send secret")
	}
	if err := k.NextGeneration(); !errors.Is(err, ErrKeysNotReady) {
		t.Errorf("update with one secret: err = %v", err)
	}
	packet := send(t, k, 1, []byte("half rtt"))
	if err := k.SetSendSecret(testSecret(suite, 1)); !errors.Is(err, ErrKeysAlreadySet) {
		t.Errorf("second send secret: err = %v", err)
	}
	if err := k.SetRecvSecret(testSecret(suite, 2)); err != nil {
		t.Fatal(err)
	}
	if err := k.SetRecvSecret(testSecret(suite, 2)); !errors.Is(err, ErrKeysAlreadySet) {
		t.Errorf("second receive secret: err = %v", err)
	}
	peer := newAppKeys(t, suite, Version1, testSecret(suite, 2), testSecret(suite, 1))
	if p, _, _, err := receive(peer, packet, -1); err != nil || string(p) != "half rtt" {
		t.Fatalf("peer opening: %q %v", p, err)
	}
	if _, err := NewAppKeys(0x1304, Version1); !errors.Is(err, ErrUnsupportedCipherSuite) {
		t.Errorf("CCM suite: err = %v", err)
	}
	if _, err := NewAppKeys(suite, 7); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("version 7: err = %v", err)
	}
}
