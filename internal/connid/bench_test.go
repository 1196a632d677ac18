package connid

import "testing"

func BenchmarkGeneratorNew(b *testing.B) {
	g, _ := NewGenerator(DefaultLen)
	b.ReportAllocs()
	for b.Loop() {
		g.New()
	}
}

func BenchmarkResetTokenFor(b *testing.B) {
	cid := mustCID(b, cidN(1))
	b.ReportAllocs()
	for b.Loop() {
		ResetTokenFor([32]byte{1}, cid)
	}
}

func BenchmarkAppendStatelessReset(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		AppendStatelessReset(buf, [TokenLen]byte{1}, 42)
	}
}

func BenchmarkIsStatelessReset(b *testing.B) {
	var d ResetDetector
	for i := range 4 {
		d.Add([TokenLen]byte{byte(i)})
	}
	pkt, _ := AppendStatelessReset(nil, [TokenLen]byte{9}, 1200)
	b.ReportAllocs()
	for b.Loop() {
		d.IsStatelessReset(pkt)
	}
}

// BenchmarkRemoteRotation measures a peer rotating IDs: each frame
// retires the previous sequence and the retirement is acknowledged.
func BenchmarkRemoteRotation(b *testing.B) {
	r, _ := NewRemoteCIDs(mustCID(b, cidN(0)), RemoteConfig{Limit: 4})
	cid := make([]byte, 8)
	seq := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		cid[0], cid[1], cid[2] = byte(seq), byte(seq>>8), byte(seq>>16)
		if err := r.HandleNewConnectionID(seq, seq-1, cid, [TokenLen]byte{byte(seq)}); err != nil {
			b.Fatal(err)
		}
		for {
			s, ok := r.PopRetireConnectionID()
			if !ok {
				break
			}
			r.OnRetireAcked(s)
		}
		seq++
	}
}

// BenchmarkLocalRetire measures the peer retiring one of our IDs and us
// issuing its replacement.
func BenchmarkLocalRetire(b *testing.B) {
	g, _ := NewGenerator(DefaultLen)
	l, _ := NewLocalCIDs(LocalConfig{Generator: g})
	l.SetPeerLimit(4)
	seq := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.HandleRetireConnectionID(seq, nil); err != nil {
			b.Fatal(err)
		}
		l.PopNewConnectionID()
		seq++
	}
}
