package datapath

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/turboretry/turboretry/offload/frame"
)

// requestFrame encodes a client-to-server frame with payload, in a buffer
// with room to spare as a UMEM frame has.
func requestFrame(t testing.TB, src, dst netip.Addr, payload []byte) []byte {
	t.Helper()
	f := frame.UDP{
		Src: frame.MAC{2, 0, 0, 0, 0, 1}, Dst: frame.MAC{2, 0, 0, 0, 0, 2},
		SrcIP: src, DstIP: dst, SrcPort: 50000, DstPort: 4433, Payload: payload,
	}
	buf := make([]byte, 4096)
	n, err := f.Encode(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// checkReply parses the frame encodeReply wrote over req's frame, strictly
// (checksums included), and compares it with req swapped.
func checkReply(t testing.TB, out []byte, req frame.UDP, payload []byte) {
	t.Helper()
	got, err := frame.Parse(out)
	if err != nil {
		t.Fatalf("reply frame does not parse strictly: %v", err)
	}
	if got.Src != req.Dst || got.Dst != req.Src || got.SrcIP != req.DstIP || got.DstIP != req.SrcIP ||
		got.SrcPort != req.DstPort || got.DstPort != req.SrcPort {
		t.Fatalf("reply %v:%d -> %v:%d (%x -> %x) is not the request %v:%d -> %v:%d swapped",
			got.SrcIP, got.SrcPort, got.DstIP, got.DstPort, got.Src, got.Dst, req.SrcIP, req.SrcPort, req.DstIP, req.DstPort)
	}
	if !bytes.Equal(got.Payload, payload) {
		t.Fatalf("reply payload %x, want %x", got.Payload, payload)
	}
}

func TestEncodeReplySwapsInPlace(t *testing.T) {
	for _, tc := range []struct{ src, dst string }{
		{"198.18.0.1", "198.18.0.2"},
		{"2001:db8::1", "2001:db8::2"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			fr := requestFrame(t, netip.MustParseAddr(tc.src), netip.MustParseAddr(tc.dst), bytes.Repeat([]byte{0xc3}, 1200))
			req, err := frame.ParseLax(fr)
			if err != nil {
				t.Fatal(err)
			}
			saved := req // fields are values; Payload is overwritten
			reply := bytes.Repeat([]byte{0xf5}, 100)
			n, err := encodeReply(fr, &req, reply)
			if err != nil {
				t.Fatal(err)
			}
			checkReply(t, fr[:n], saved, reply)
		})
	}
}

func TestEncodeReplyTooLarge(t *testing.T) {
	fr := requestFrame(t, netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), []byte("x"))
	req, err := frame.ParseLax(fr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := encodeReply(fr[:len(fr):len(fr)], &req, make([]byte, 100)); err == nil {
		t.Fatal("a reply larger than the frame's room was encoded")
	}
}

func TestEncodeReplyRefusesMappedAddresses(t *testing.T) {
	fr := requestFrame(t, netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"), []byte("x"))
	// Source ::ffff:198.18.0.1: IPv4-mapped, not a wire address.
	copy(fr[frame.EthHeaderLen+8:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1})
	req, err := frame.ParseLax(fr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := encodeReply(fr, &req, []byte("retry")); err != errMappedAddress {
		t.Fatalf("encodeReply: %v, want errMappedAddress", err)
	}
}

func TestEncodeReplyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("skipping: the race detector allocates by itself")
	}
	fr := requestFrame(t, netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), make([]byte, 1200))
	orig := bytes.Clone(fr)
	reply := make([]byte, 200)
	allocs := testing.AllocsPerRun(100, func() {
		copy(fr, orig)
		req, err := frame.ParseLax(fr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := encodeReply(fr, &req, reply); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("parse + encodeReply allocates %.1f times per frame", allocs)
	}
}

// FuzzReplyFrame feeds arbitrary received frames (extended to a 2048-byte
// UMEM frame) and replies: whatever parses must turn into a reply that
// parses strictly and is the request swapped, or a clear error.
func FuzzReplyFrame(f *testing.F) {
	f.Add(requestFrame(f, netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), []byte("initial")), []byte("retry"))
	f.Add(requestFrame(f, netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"), make([]byte, 1200)), make([]byte, 600))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, in, reply []byte) {
		buf := make([]byte, len(in), max(len(in), 2048))
		copy(buf, in)
		req, err := frame.ParseLax(buf)
		if err != nil {
			return
		}
		saved := req
		n, err := encodeReply(buf, &req, reply)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with length %d", err, n)
			}
			return
		}
		checkReply(t, buf[:n], saved, reply)
	})
}
