package connid

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

func cidN(n byte) []byte { return []byte{n, n, n, n, n, n, n, n} }

func tokN(n byte) [TokenLen]byte { return [TokenLen]byte{0xf0, n} }

func newRemote(t *testing.T, limit uint64) *RemoteCIDs {
	t.Helper()
	r, err := NewRemoteCIDs(mustCID(t, cidN(0)), RemoteConfig{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func popRetires(r *RemoteCIDs) []uint64 {
	var s []uint64
	for {
		seq, ok := r.PopRetireConnectionID()
		if !ok {
			return s
		}
		s = append(s, seq)
	}
}

func resetFor(t *testing.T, token [TokenLen]byte) []byte {
	b, err := AppendStatelessReset(nil, token, 40)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRemoteStoreAndLimit(t *testing.T) {
	r := newRemote(t, 3)
	for seq := byte(1); seq <= 2; seq++ {
		if err := r.HandleNewConnectionID(uint64(seq), 0, cidN(seq), tokN(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if r.ActiveCount() != 3 || !r.Current().Equal(cidN(0)) || r.CurrentSequence() != 0 {
		t.Fatal("stored IDs or current ID wrong")
	}
	// A repeated frame is fine, even at the limit.
	if err := r.HandleNewConnectionID(2, 0, cidN(2), tokN(2)); err != nil {
		t.Fatal(err)
	}
	// One more than active_connection_id_limit.
	err := r.HandleNewConnectionID(3, 0, cidN(3), tokN(3))
	wantCode(t, err, qerr.ConnectionIDLimitError, 0x18)
}

func TestRemoteFrameErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seq, rpt uint64
		cid      []byte
		token    [TokenLen]byte
		code     qerr.TransportErrorCode
	}{
		{"empty CID", 1, 0, nil, tokN(1), qerr.FrameEncodingError},
		{"21-byte CID", 1, 0, make([]byte, 21), tokN(1), qerr.FrameEncodingError},
		{"retire_prior_to > seq", 1, 2, cidN(1), tokN(1), qerr.FrameEncodingError},
		{"seq 1 new CID", 1, 0, cidN(9), tokN(1), qerr.ProtocolViolation},
		{"seq 1 new token", 1, 0, cidN(1), tokN(9), qerr.ProtocolViolation},
		{"seq 0 new CID", 0, 0, cidN(9), tokN(0), qerr.ProtocolViolation},
		{"CID of seq 1 as seq 2", 2, 0, cidN(1), tokN(2), qerr.ProtocolViolation},
		{"handshake CID as seq 2", 2, 0, cidN(0), tokN(2), qerr.ProtocolViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRemote(t, 4)
			if err := r.HandleNewConnectionID(1, 0, cidN(1), tokN(1)); err != nil {
				t.Fatal(err)
			}
			wantCode(t, r.HandleNewConnectionID(tc.seq, tc.rpt, tc.cid, tc.token), tc.code, 0x18)
		})
	}
}

func TestRemoteZeroLengthPeer(t *testing.T) {
	r, err := NewRemoteCIDs(protocol.ConnectionIDFromBytes(nil), RemoteConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.HandleNewConnectionID(1, 0, cidN(1), tokN(1)), qerr.ProtocolViolation, 0x18)
	wantCode(t, r.AddPreferredAddressCID(cidN(1), tokN(1)), qerr.ProtocolViolation, 0x18)
	// A client that learns the server uses zero-length IDs.
	r = newRemote(t, 2)
	if err := r.SetHandshakeCID(protocol.ConnectionIDFromBytes(nil)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.HandleNewConnectionID(1, 0, cidN(1), tokN(1)), qerr.ProtocolViolation, 0x18)
}

func TestRemoteRetirePriorTo(t *testing.T) {
	r := newRemote(t, 3)
	r.SetResetToken(tokN(0))
	r.HandleNewConnectionID(1, 0, cidN(1), tokN(1))
	r.HandleNewConnectionID(2, 0, cidN(2), tokN(2))
	if !r.IsStatelessReset(resetFor(t, tokN(0))) || r.IsStatelessReset(resetFor(t, tokN(1))) {
		t.Fatal("detector must watch only the token of the ID in use")
	}
	// Sequence 3 retires 0 and 1: the ID in use moves to sequence 2.
	if err := r.HandleNewConnectionID(3, 2, cidN(3), tokN(3)); err != nil {
		t.Fatal(err)
	}
	if !r.Current().Equal(cidN(2)) || r.CurrentSequence() != 2 || r.ActiveCount() != 2 {
		t.Fatalf("current %v seq %d, %d active", r.Current(), r.CurrentSequence(), r.ActiveCount())
	}
	if tok, ok := r.CurrentResetToken(); !ok || tok != tokN(2) {
		t.Fatal("wrong reset token for the new ID")
	}
	if r.IsStatelessReset(resetFor(t, tokN(0))) || !r.IsStatelessReset(resetFor(t, tokN(2))) {
		t.Fatal("detector not moved to the new ID's token")
	}
	if got := popRetires(r); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("retirements = %v", got)
	}
	// Repeats of retired sequences are ignored and owe nothing more.
	for seq := byte(0); seq <= 1; seq++ {
		if err := r.HandleNewConnectionID(uint64(seq), 0, cidN(seq), tokN(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if r.HasPendingRetireConnectionID() || r.ActiveCount() != 2 {
		t.Fatal("repeat of a retired sequence changed state")
	}
	// A late, lower retire_prior_to changes nothing either.
	if err := r.HandleNewConnectionID(3, 1, cidN(3), tokN(3)); err != nil || r.HasPendingRetireConnectionID() {
		t.Fatalf("err %v", err)
	}
}

// Sequence numbers skipped by retire_prior_to are retired even if their
// frames never arrived, and a late frame for one is then ignored.
func TestRemoteRetireUnseen(t *testing.T) {
	r := newRemote(t, 2)
	if err := r.HandleNewConnectionID(3, 3, cidN(3), tokN(3)); err != nil {
		t.Fatal(err)
	}
	if got := popRetires(r); len(got) != 3 || got[2] != 2 {
		t.Fatalf("retirements = %v", got)
	}
	if !r.Current().Equal(cidN(3)) || r.ActiveCount() != 1 {
		t.Fatal("did not switch to sequence 3")
	}
	if err := r.HandleNewConnectionID(2, 0, cidN(2), tokN(2)); err != nil {
		t.Fatal(err)
	}
	if r.ActiveCount() != 1 || r.HasPendingRetireConnectionID() {
		t.Fatal("late frame of a retired sequence stored or retired twice")
	}
}

// Retirement happens before the limit check (RFC 9000 section 5.1.2), so a
// full set plus a frame that retires one of them is fine.
func TestRemoteRetireBeforeLimit(t *testing.T) {
	r := newRemote(t, 2)
	r.HandleNewConnectionID(1, 0, cidN(1), tokN(1))
	if err := r.HandleNewConnectionID(2, 1, cidN(2), tokN(2)); err != nil {
		t.Fatal(err)
	}
	if r.ActiveCount() != 2 || !r.Current().Equal(cidN(1)) {
		t.Fatalf("current %v, %d active", r.Current(), r.ActiveCount())
	}
}

func TestRemoteOutOfOrder(t *testing.T) {
	r := newRemote(t, 4)
	r.HandleNewConnectionID(3, 0, cidN(3), tokN(3))
	r.HandleNewConnectionID(1, 0, cidN(1), tokN(1))
	if err := r.HandleNewConnectionID(4, 2, cidN(4), tokN(4)); err != nil {
		t.Fatal(err)
	}
	// 0 and 1 retired; the lowest remaining (3) is used next.
	if !r.Current().Equal(cidN(3)) || r.ActiveCount() != 2 {
		t.Fatalf("current %v, %d active", r.Current(), r.ActiveCount())
	}
	// Sequence 2 is not below retire_prior_to: stored, but the ID in use
	// does not change.
	if err := r.HandleNewConnectionID(2, 0, cidN(2), tokN(2)); err != nil || r.ActiveCount() != 3 {
		t.Fatalf("sequence 2 not stored: %v", err)
	}
	if !r.Current().Equal(cidN(3)) {
		t.Fatalf("current moved to %v", r.Current())
	}
	if got := popRetires(r); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("retirements = %v", got)
	}
	// The ID in use stays when a lower unretired sequence arrives.
	r = newRemote(t, 4)
	r.HandleNewConnectionID(5, 5, cidN(5), tokN(5))
	if err := r.HandleNewConnectionID(6, 0, cidN(6), tokN(6)); err != nil {
		t.Fatal(err)
	}
	if !r.Current().Equal(cidN(5)) {
		t.Fatalf("current %v", r.Current())
	}
}

func TestRemotePendingRetirementBound(t *testing.T) {
	r, _ := NewRemoteCIDs(mustCID(t, cidN(0)), RemoteConfig{Limit: 2, MaxPendingRetirements: 4})
	// Retiring 4 unacknowledged sequences fills the queue exactly.
	if err := r.HandleNewConnectionID(4, 4, cidN(4), tokN(4)); err != nil {
		t.Fatal(err)
	}
	err := r.HandleNewConnectionID(5, 5, cidN(5), tokN(5))
	wantCode(t, err, qerr.ConnectionIDLimitError, 0x18)

	// With acknowledgments the same peer behaviour is fine; lost frames
	// still count until acknowledged.
	r, _ = NewRemoteCIDs(mustCID(t, cidN(0)), RemoteConfig{Limit: 2, MaxPendingRetirements: 4})
	r.HandleNewConnectionID(4, 4, cidN(4), tokN(4))
	seqs := popRetires(r)
	for _, s := range seqs[:3] {
		r.OnRetireAcked(s)
	}
	r.OnRetireLost(seqs[3])
	if got := popRetires(r); len(got) != 1 || got[0] != 3 {
		t.Fatalf("lost retirement not queued again: %v", got)
	}
	if err := r.HandleNewConnectionID(7, 7, cidN(7), tokN(7)); err != nil {
		t.Fatal(err)
	}
	err = r.HandleNewConnectionID(8, 8, cidN(8), tokN(8))
	wantCode(t, err, qerr.ConnectionIDLimitError, 0x18)

	// A huge jump must fail at once, not loop.
	r = newRemote(t, 2)
	err = r.HandleNewConnectionID(1<<62-1, 1<<62-1, cidN(1), tokN(1))
	wantCode(t, err, qerr.ConnectionIDLimitError, 0x18)
}

func TestRemoteHandshakeCID(t *testing.T) {
	r := newRemote(t, 2)
	if _, ok := r.CurrentResetToken(); ok {
		t.Fatal("token before transport parameters")
	}
	if err := r.SetHandshakeCID(mustCID(t, cidN(7))); err != nil || !r.Current().Equal(cidN(7)) {
		t.Fatal("handshake CID not replaced")
	}
	r.SetResetToken(tokN(7))
	if tok, ok := r.CurrentResetToken(); !ok || tok != tokN(7) || !r.IsStatelessReset(resetFor(t, tokN(7))) {
		t.Fatal("transport parameter token not used for sequence 0")
	}
	r.SetResetToken(tokN(8))
	if r.IsStatelessReset(resetFor(t, tokN(7))) || !r.IsStatelessReset(resetFor(t, tokN(8))) {
		t.Fatal("replaced token still watched")
	}
	r.HandleNewConnectionID(1, 0, cidN(1), tokN(1))
	if err := r.SetHandshakeCID(mustCID(t, cidN(9))); !errors.Is(err, ErrHandshakeDone) {
		t.Fatalf("err = %v", err)
	}
	// After sequence 0 is retired its token is no longer settable.
	r.HandleNewConnectionID(2, 1, cidN(2), tokN(2))
	r.SetResetToken(tokN(9))
	if r.IsStatelessReset(resetFor(t, tokN(9))) {
		t.Fatal("token of a retired ID watched")
	}
}

// A server's view: the client's sequence 0 has no token; a NEW_CONNECTION_ID
// for sequence 0 with the same ID may supply one.
func TestRemoteSequenceZeroToken(t *testing.T) {
	r := newRemote(t, 2)
	if err := r.HandleNewConnectionID(0, 0, cidN(0), tokN(0)); err != nil {
		t.Fatal(err)
	}
	if tok, ok := r.CurrentResetToken(); !ok || tok != tokN(0) {
		t.Fatal("token not stored")
	}
	wantCode(t, r.HandleNewConnectionID(0, 0, cidN(0), tokN(1)), qerr.ProtocolViolation, 0x18)
}

func TestRemotePreferredAddress(t *testing.T) {
	r := newRemote(t, 2)
	if err := r.AddPreferredAddressCID(cidN(1), tokN(1)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.HandleNewConnectionID(2, 0, cidN(2), tokN(2)), qerr.ConnectionIDLimitError, 0x18)
}

func TestRemoteConfig(t *testing.T) {
	if _, err := NewRemoteCIDs(mustCID(t, cidN(0)), RemoteConfig{Limit: MaxRemoteLimit + 1}); !errors.Is(err, ErrBadLimit) {
		t.Fatalf("err = %v", err)
	}
	r := newRemote(t, 1) // counts as 2
	r.HandleNewConnectionID(1, 0, cidN(1), tokN(1))
	wantCode(t, r.HandleNewConnectionID(2, 0, cidN(2), tokN(2)), qerr.ConnectionIDLimitError, 0x18)
	r = newRemote(t, 0) // DefaultRemoteLimit
	for seq := byte(1); seq < DefaultRemoteLimit; seq++ {
		if err := r.HandleNewConnectionID(uint64(seq), 0, cidN(seq), tokN(seq)); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, r.HandleNewConnectionID(9, 0, cidN(9), tokN(9)), qerr.ConnectionIDLimitError, 0x18)
}
