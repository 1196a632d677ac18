package quiclb

import (
	"bytes"
	"testing"
)

// FuzzParsePlaintext: any input either fails to parse or parses into parts
// that AppendPlaintext puts back together into exactly the input.
func FuzzParsePlaintext(f *testing.F) {
	f.Add([]byte{0x07, 0xc4, 0x60, 0x5e, 0x45, 0x04, 0xcc, 0x4f}, 3)
	f.Add([]byte{0x2a, 0x35, 0x0d, 0x28, 0xb4, 0x20, 0x03, 0x48, 0x7d, 0x97, 0x0b}, 5)
	f.Add([]byte{0xe7, 1, 2, 3, 4, 5, 6, 7}, 1)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, cid []byte, sidLen int) {
		cr, sid, nonce, err := ParsePlaintext(cid, sidLen)
		if err != nil {
			return
		}
		back, err := AppendPlaintext(nil, cr, sid, nonce)
		if err != nil || !bytes.Equal(back, cid) {
			t.Fatalf("ParsePlaintext(%x, %d) = %d %x %x, re-encoded %x, %v", cid, sidLen, cr, sid, nonce, back, err)
		}
	})
}

// FuzzCodecParse: Parse and Worker agree on every input, and an accepted
// ID is exactly what the codec makes from its host ID, worker and nonce.
func FuzzCodecParse(f *testing.F) {
	codecs := []*Codec{
		mustCodec(f, Config{MACKey: &testKey}),
		mustCodec(f, Config{ConfigID: 3, HostID: []byte{1, 2}, NonceLen: 6, MACKey: &testKey}),
		mustCodec(f, Config{HostID: []byte{7}}),
	}
	for _, c := range codecs {
		cid, _ := c.Append(nil, 1)
		f.Add(cid, uint8(0))
	}
	f.Add([]byte{0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, cid []byte, which uint8) {
		c := codecs[int(which)%len(codecs)]
		id, err := c.Parse(cid)
		w, ok := c.Worker(cid)
		if (err == nil) != ok {
			t.Fatalf("Parse error %v but Worker ok=%v for %x", err, ok, cid)
		}
		if !ok {
			return
		}
		if w != id.Worker {
			t.Fatalf("workers %d and %d", w, id.Worker)
		}
		// Parse accepts any host's ID (a fleet shares the key): rebuild it
		// with the host ID it carries.
		same := *c
		same.hostID = id.ServerID[:len(id.ServerID)-1]
		if again := same.sealWithNonce(id.Generation<<7|w, id.Nonce); !bytes.Equal(again, cid) {
			t.Fatalf("accepted %x, but the codec makes %x from its fields", cid, again)
		}
	})
}
