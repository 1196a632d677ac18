package connid

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// routes is a fake Transport routing table.
type routes struct {
	m      map[protocol.ConnectionID]bool
	adds   int
	reject int // reject this many AddRoute calls first
}

func (r *routes) add(c protocol.ConnectionID) bool {
	r.adds++
	if r.reject > 0 {
		r.reject--
		return false
	}
	if r.m[c] {
		return false
	}
	r.m[c] = true
	return true
}

func (r *routes) remove(c protocol.ConnectionID) {
	if !r.m[c] {
		panic("removing an unrouted ID " + c.String())
	}
	delete(r.m, c)
}

func newLocal(t *testing.T, cidLen, maxActive int) (*LocalCIDs, *routes) {
	t.Helper()
	g, err := NewGenerator(cidLen)
	if err != nil {
		t.Fatal(err)
	}
	r := &routes{m: map[protocol.ConnectionID]bool{}}
	l, err := NewLocalCIDs(LocalConfig{
		Generator: g, ResetKey: [32]byte{7}, MaxActive: maxActive,
		AddRoute: r.add, RemoveRoute: r.remove,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, r
}

func popAll(l *LocalCIDs) []NewConnectionID {
	var fs []NewConnectionID
	for {
		f, ok := l.PopNewConnectionID()
		if !ok {
			return fs
		}
		fs = append(fs, f)
	}
}

func TestLocalIssuesUpToLimit(t *testing.T) {
	for _, tc := range []struct {
		peerLimit uint64
		maxActive int
		want      int
	}{
		{2, 4, 2},
		{3, 4, 3},
		{8, 4, 4},
		{1 << 62, 0, DefaultMaxActive},
		{0, 4, 2}, // below the minimum: treated as 2
		{8, 1, 2}, // our cap cannot go below 2
	} {
		l, r := newLocal(t, 8, tc.maxActive)
		hs := l.HandshakeCID()
		if hs.Len() != 8 || !r.m[hs] || l.ActiveCount() != 1 || l.HasPendingNewConnectionID() {
			t.Fatal("sequence 0 not issued and routed alone")
		}
		if l.HandshakeResetToken() != ResetTokenFor([32]byte{7}, hs) {
			t.Fatal("HandshakeResetToken is not the token of sequence 0")
		}
		if err := l.SetPeerLimit(tc.peerLimit); err != nil {
			t.Fatal(err)
		}
		if l.ActiveCount() != tc.want || len(r.m) != tc.want {
			t.Fatalf("%+v: %d active, %d routed", tc, l.ActiveCount(), len(r.m))
		}
		fs := popAll(l)
		if len(fs) != tc.want-1 {
			t.Fatalf("%+v: %d frames", tc, len(fs))
		}
		for i, f := range fs {
			if f.SequenceNumber != uint64(i+1) || f.RetirePriorTo != 0 || !r.m[f.ConnectionID] ||
				f.StatelessResetToken != ResetTokenFor([32]byte{7}, f.ConnectionID) {
				t.Fatalf("bad frame %d: %+v", i, f)
			}
		}
		if got := l.Active(nil); len(got) != tc.want || got[0] != hs {
			t.Fatalf("Active = %v", got)
		}
	}
}

func TestLocalRetire(t *testing.T) {
	l, r := newLocal(t, 8, 3)
	if err := l.SetPeerLimit(3); err != nil {
		t.Fatal(err)
	}
	fs := popAll(l) // sequences 1 and 2
	hs := l.HandshakeCID()

	// The peer retires sequence 0 in a packet sent to sequence 1.
	if err := l.HandleRetireConnectionID(0, fs[0].ConnectionID.Bytes()); err != nil {
		t.Fatal(err)
	}
	if r.m[hs] || l.ActiveCount() != 3 || len(r.m) != 3 {
		t.Fatal("retired ID still routed, or no replacement")
	}
	nf := popAll(l)
	if len(nf) != 1 || nf[0].SequenceNumber != 3 || !r.m[nf[0].ConnectionID] {
		t.Fatalf("replacement frames = %+v", nf)
	}
	if l.HandshakeCID().Len() != 0 {
		t.Fatal("HandshakeCID after retiring sequence 0")
	}
	// A repeated frame is not an error and changes nothing.
	if err := l.HandleRetireConnectionID(0, fs[0].ConnectionID.Bytes()); err != nil {
		t.Fatal(err)
	}
	if l.ActiveCount() != 3 || l.HasPendingNewConnectionID() {
		t.Fatal("repeated retirement issued another ID")
	}
}

func TestLocalRetireErrors(t *testing.T) {
	l, _ := newLocal(t, 8, 3)
	l.SetPeerLimit(3)
	fs := popAll(l)

	err := l.HandleRetireConnectionID(3, fs[0].ConnectionID.Bytes())
	wantCode(t, err, qerr.ProtocolViolation, 0x19) // never issued
	err = l.HandleRetireConnectionID(1<<62-1, nil)
	wantCode(t, err, qerr.ProtocolViolation, 0x19)

	// Retiring the ID the packet was sent to.
	err = l.HandleRetireConnectionID(1, fs[0].ConnectionID.Bytes())
	wantCode(t, err, qerr.ProtocolViolation, 0x19)
	err = l.HandleRetireConnectionID(0, l.HandshakeCID().Bytes())
	wantCode(t, err, qerr.ProtocolViolation, 0x19)
}

func TestLocalZeroLength(t *testing.T) {
	l, r := newLocal(t, 0, 4)
	if err := l.SetPeerLimit(8); err != nil {
		t.Fatal(err)
	}
	if l.ActiveCount() != 1 || len(r.m) != 0 || l.HasPendingNewConnectionID() {
		t.Fatal("zero-length IDs issued or routed")
	}
	wantCode(t, l.HandleRetireConnectionID(0, nil), qerr.ProtocolViolation, 0x19)
	if _, _, err := l.IssuePreferredAddressCID(); !errors.Is(err, ErrPreferredAddress) {
		t.Fatalf("err = %v", err)
	}
}

func TestLocalLostFrames(t *testing.T) {
	l, _ := newLocal(t, 8, 4)
	l.SetPeerLimit(4)
	fs := popAll(l)
	l.OnNewConnectionIDLost(2)
	l.OnNewConnectionIDLost(0) // sequence 0 has no frame
	l.OnNewConnectionIDLost(9) // never issued
	again := popAll(l)
	if len(again) != 1 || again[0] != fs[1] {
		t.Fatalf("retransmitted %+v, want %+v", again, fs[1])
	}
	// Once retired, a lost frame is not sent again.
	if err := l.HandleRetireConnectionID(1, l.HandshakeCID().Bytes()); err != nil {
		t.Fatal(err)
	}
	popAll(l)
	l.OnNewConnectionIDLost(1)
	if l.HasPendingNewConnectionID() {
		t.Fatal("frame of a retired ID queued again")
	}
}

func TestLocalInitialDCID(t *testing.T) {
	l, r := newLocal(t, 8, 4)
	odcid := mustCID(t, []byte{9, 9, 9, 9, 9, 9, 9, 9})
	if !l.SetInitialDCID(odcid) || !r.m[odcid] {
		t.Fatal("initial DCID not routed")
	}
	rscid := mustCID(t, []byte{8, 8, 8, 8, 8, 8, 8, 8})
	if !l.SetInitialDCID(rscid) || r.m[odcid] || !r.m[rscid] {
		t.Fatal("replacing the initial DCID did not move the route")
	}
	l.DropInitialDCID()
	l.DropInitialDCID()
	if r.m[rscid] || len(r.m) != 1 {
		t.Fatal("initial DCID still routed")
	}
	// A collision with another connection is reported.
	r.m[odcid] = true
	if l.SetInitialDCID(odcid) {
		t.Fatal("colliding initial DCID accepted")
	}
}

func TestLocalRemoveAll(t *testing.T) {
	l, r := newLocal(t, 8, 4)
	l.SetPeerLimit(4)
	l.SetInitialDCID(mustCID(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	l.RemoveAll()
	if len(r.m) != 0 || l.ActiveCount() != 0 {
		t.Fatalf("%d routes left", len(r.m))
	}
	l.RemoveAll()
	if err := l.SetPeerLimit(8); err != nil || l.ActiveCount() != 0 {
		t.Fatal("issued IDs after RemoveAll")
	}
}

func TestLocalRouteCollision(t *testing.T) {
	g, _ := NewGenerator(8)
	r := &routes{m: map[protocol.ConnectionID]bool{}, reject: 3}
	l, err := NewLocalCIDs(LocalConfig{Generator: g, AddRoute: r.add, RemoveRoute: r.remove})
	if err != nil || r.adds != 4 || len(r.m) != 1 {
		t.Fatalf("adds %d, routes %d, err %v", r.adds, len(r.m), err)
	}
	r.reject = 1000
	if err := l.SetPeerLimit(4); !errors.Is(err, ErrRouteCollision) {
		t.Fatalf("err = %v", err)
	}
	r.reject = 1000
	if _, err := NewLocalCIDs(LocalConfig{Generator: g, AddRoute: r.add}); !errors.Is(err, ErrRouteCollision) {
		t.Fatalf("err = %v", err)
	}
	if _, err := NewLocalCIDs(LocalConfig{}); !errors.Is(err, ErrNoGenerator) {
		t.Fatalf("err = %v", err)
	}
}

func TestLocalPreferredAddress(t *testing.T) {
	l, r := newLocal(t, 8, 3)
	cid, token, err := l.IssuePreferredAddressCID()
	if err != nil || !r.m[cid] || token != ResetTokenFor([32]byte{7}, cid) {
		t.Fatalf("preferred address ID %v not issued: %v", cid, err)
	}
	if _, _, err := l.IssuePreferredAddressCID(); !errors.Is(err, ErrPreferredAddress) {
		t.Fatalf("second call: err = %v", err)
	}
	// Sequence 1 counts towards the limit and has no frame.
	l.SetPeerLimit(3)
	fs := popAll(l)
	if len(fs) != 1 || fs[0].SequenceNumber != 2 {
		t.Fatalf("frames = %+v", fs)
	}
}

func TestLocalNoHooks(t *testing.T) {
	g, _ := NewGenerator(4)
	l, err := NewLocalCIDs(LocalConfig{Generator: g})
	if err != nil {
		t.Fatal(err)
	}
	l.SetPeerLimit(2)
	l.SetInitialDCID(mustCID(t, []byte{1}))
	fs := popAll(l)
	if err := l.HandleRetireConnectionID(0, fs[0].ConnectionID.Bytes()); err != nil {
		t.Fatal(err)
	}
	l.RemoveAll()
}

// TestLocalNoIDNow: a generator with no ID at hand (ErrNoIDNow) defers
// issuing instead of failing; Replenish issues what is missing once it has
// IDs again.
func TestLocalNoIDNow(t *testing.T) {
	stock := 1
	next := byte(0)
	g, err := NewGeneratorFunc(4, func(dst []byte) error {
		if stock == 0 {
			return ErrNoIDNow
		}
		stock--
		next++
		for i := range dst {
			dst[i] = next
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &routes{m: map[protocol.ConnectionID]bool{}}
	l, err := NewLocalCIDs(LocalConfig{Generator: g, MaxActive: 4, AddRoute: r.add, RemoveRoute: r.remove})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetPeerLimit(4); err != nil {
		t.Fatalf("SetPeerLimit with no IDs at hand: %v", err)
	}
	if l.ActiveCount() != 1 || l.Missing() != 3 || l.HasPendingNewConnectionID() {
		t.Fatalf("active %d, missing %d", l.ActiveCount(), l.Missing())
	}
	stock = 2
	if err := l.Replenish(); err != nil {
		t.Fatal(err)
	}
	if l.ActiveCount() != 3 || l.Missing() != 1 || len(popAll(l)) != 2 {
		t.Fatalf("after 2 more IDs: active %d, missing %d", l.ActiveCount(), l.Missing())
	}
	stock = 5
	if err := l.Replenish(); err != nil || l.Missing() != 0 || stock != 4 {
		t.Fatalf("Replenish: %v, missing %d, took %d", err, l.Missing(), 5-stock)
	}
}
