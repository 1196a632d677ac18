package connid

import (
	"errors"
	"testing"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/qerr"
)

// FuzzRemoteCIDs drives RemoteCIDs with random NEW_CONNECTION_ID frames,
// RETIRE_CONNECTION_ID acknowledgments and losses, and switches to an
// unused ID (a new path). data[0] picks our limit;
// every 4 bytes after it are one operation: kind, sequence, retire prior
// to, connection ID. Errors must be transport errors and end the run, as
// they close the connection; after every accepted frame the invariants
// must hold.
func FuzzRemoteCIDs(f *testing.F) {
	f.Add([]byte{2, 0, 1, 0, 1, 0, 2, 0, 2})
	f.Add([]byte{0, 0, 1, 0, 1, 0, 2, 1, 2, 2, 0, 0, 0, 0, 3, 3, 3})
	f.Add([]byte{4, 0, 9, 9, 9, 0, 3, 0, 3, 3, 0, 0, 0, 0, 10, 10, 10})
	f.Add([]byte{1, 0, 1, 0, 1, 0x10, 1, 0, 1})
	f.Add([]byte{3, 0, 200, 100, 5, 2, 0, 0, 0, 3, 0, 0, 0, 0, 201, 201, 6})
	f.Add([]byte{3, 0, 1, 0, 1, 0, 2, 0, 2, 4, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 1, 4, 0, 0, 0}) // switch, ack, stale frame
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		limit := 2 + uint64(data[0]%6)
		r, err := NewRemoteCIDs(mustCID(t, cidN(0)), RemoteConfig{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var inFlight []uint64
		for ops := data[1:]; len(ops) >= 4; ops = ops[4:] {
			kind, seq, rpt, c := ops[0], uint64(ops[1]), uint64(ops[2]), ops[3]
			switch kind % 5 {
			case 4:
				if _, s, ok := r.NextUnusedExcept(nil); ok {
					if err := r.SwitchTo(s); err != nil && !errors.Is(err, ErrNoSpareID) {
						t.Fatal(err)
					} else if err == nil && r.CurrentSequence() != s {
						t.Fatalf("switched to %d, current is %d", s, r.CurrentSequence())
					}
				}
			case 0, 1:
				cid := cidN(c % 32)
				token := tokN(c % 32)
				if kind&0x10 != 0 {
					token[15] = 1 // same ID, another token
				}
				err := r.HandleNewConnectionID(seq, rpt, cid, token)
				if err != nil {
					var te *qerr.TransportError
					if !errors.As(err, &te) {
						t.Fatalf("error %v is not a transport error", err)
					}
					return
				}
			case 2, 3:
				if s, ok := r.PopRetireConnectionID(); ok {
					if s >= r.retirePriorTo && !r.retiredBySwitch(s) {
						t.Fatalf("retiring %d, not below retire_prior_to %d nor switched away from", s, r.retirePriorTo)
					}
					inFlight = append(inFlight, s)
				}
				if len(inFlight) > 0 && kind%5 == 3 {
					r.OnRetireLost(inFlight[0])
					inFlight = inFlight[1:]
				} else if len(inFlight) > 0 {
					r.OnRetireAcked(inFlight[0])
					inFlight = inFlight[1:]
				}
			}
			checkRemoteInvariants(t, r, int(limit))
		}
	})
}

func checkRemoteInvariants(t *testing.T, r *RemoteCIDs, limit int) {
	t.Helper()
	if n := r.ActiveCount(); n < 1 || n > limit {
		t.Fatalf("%d active IDs, limit %d", n, limit)
	}
	if r.current < 0 || r.current >= len(r.active) || !r.Current().Equal(r.active[r.current].cid.Bytes()) {
		t.Fatalf("current index %d of %d is not an active ID", r.current, len(r.active))
	}
	if r.CurrentSequence() < r.retirePriorTo {
		t.Fatalf("current sequence %d below retire_prior_to %d", r.CurrentSequence(), r.retirePriorTo)
	}
	cids := map[protocol.ConnectionID]bool{}
	for i, e := range r.active {
		if i > 0 && r.active[i-1].seq >= e.seq {
			t.Fatalf("active sequences out of order: %d then %d", r.active[i-1].seq, e.seq)
		}
		if e.seq < r.retirePriorTo {
			t.Fatalf("retired sequence %d still active", e.seq)
		}
		if cids[e.cid] {
			t.Fatalf("ID %v active twice", e.cid)
		}
		if r.retiredBySwitch(e.seq) {
			t.Fatalf("sequence %d switched away from but active again", e.seq)
		}
		cids[e.cid] = true
	}
	if p := r.pendingRetirements(); p > r.maxPending {
		t.Fatalf("%d pending retirements, bound %d", p, r.maxPending)
	}
	tok, ok := r.CurrentResetToken()
	if ok && !r.IsStatelessReset(append(make([]byte, 5), tok[:]...)) {
		t.Fatal("token of the ID in use not detected")
	}
	if r.detector.Len() > 1 {
		t.Fatalf("%d tokens watched, only the ID in use has been used", r.detector.Len())
	}
}

// FuzzLocalCIDs feeds random RETIRE_CONNECTION_ID frames and frame losses
// to LocalCIDs. data[0] picks the peer's limit; every 3 bytes after it are
// kind, sequence and the sequence whose ID the packet was sent to. The
// routing table must always equal the active set.
func FuzzLocalCIDs(f *testing.F) {
	f.Add([]byte{2, 0, 0, 1, 0, 1, 2, 0, 5, 0})
	f.Add([]byte{4, 0, 1, 1, 1, 2, 0, 0, 9, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		g, _ := NewGenerator(4)
		rt := &routes{m: map[protocol.ConnectionID]bool{}}
		l, err := NewLocalCIDs(LocalConfig{Generator: g, MaxActive: 3, AddRoute: rt.add, RemoveRoute: rt.remove})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SetPeerLimit(uint64(data[0] % 8)); err != nil {
			t.Fatal(err)
		}
		limit := min(max(int(data[0]%8), 2), 3)
		bySeq := map[uint64]protocol.ConnectionID{0: l.HandshakeCID()}
		for ops := data[1:]; len(ops) >= 3; ops = ops[3:] {
			for nf, ok := l.PopNewConnectionID(); ok; nf, ok = l.PopNewConnectionID() {
				bySeq[nf.SequenceNumber] = nf.ConnectionID
			}
			seq, via := uint64(ops[1]), uint64(ops[2])
			if ops[0]%2 == 1 {
				l.OnNewConnectionIDLost(seq)
				continue
			}
			dcid := bySeq[via]
			err := l.HandleRetireConnectionID(seq, dcid.Bytes())
			if err != nil {
				var te *qerr.TransportError
				if !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
					t.Fatalf("unexpected error %v", err)
				}
				if seq < l.nextSeq && !(l.find(seq) >= 0 && dcid.Len() > 0 && bySeq[seq] == dcid) {
					t.Fatalf("retiring %d via %d rejected: %v", seq, via, err)
				}
				return
			}
			if l.ActiveCount() != limit || len(rt.m) != limit {
				t.Fatalf("%d active, %d routed, limit %d", l.ActiveCount(), len(rt.m), limit)
			}
			for _, c := range l.Active(nil) {
				if !rt.m[c] {
					t.Fatalf("active ID %v not routed", c)
				}
			}
		}
	})
}
