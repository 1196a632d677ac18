package handshake

import "testing"

// BenchmarkNewInitialKeys measures what a server pays per client Initial
// that reaches connection creation, and a re-protecting flood per packet.
func BenchmarkNewInitialKeys(b *testing.B) {
	dcid := unhex(rfcDCID)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := NewInitialKeys(dcid, Version1, false); err != nil {
			b.Fatal(err)
		}
	}
}
