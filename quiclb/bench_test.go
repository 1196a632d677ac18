package quiclb

import "testing"

func BenchmarkGenerateConnectionID(b *testing.B) {
	g, _ := mustCodec(b, Config{MACKey: &testKey}).Generator(1)
	cid := make([]byte, g.Len())
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Fill(cid); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWorkerVerify(b *testing.B) {
	c := mustCodec(b, Config{MACKey: &testKey})
	cid, _ := c.Append(nil, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Worker(cid); !ok {
			b.Fatal("does not verify")
		}
	}
}
