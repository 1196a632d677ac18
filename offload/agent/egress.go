package agent

import "github.com/turboretry/turboretry/internal/wire"

// ObserveEgress looks at a datagram the host sends. When it starts with a
// server Initial or Handshake packet, the packet's SCID (the connection ID
// the host chose) is admitted to the fast-path cache, so the client's later
// packets, which carry it as DCID, pass. It reports whether a connection ID
// was admitted. Admitting the same CID again is harmless, which is what
// keeps this stateless. Call it from the worker's goroutine, like Process.
func (w *Worker) ObserveEgress(pkt []byte) bool {
	if len(pkt) == 0 || !wire.IsLongHeader(pkt[0]) || w.eng.paused.Load() {
		w.egressIgnored++
		return false
	}
	if err := wire.ParseLongHeader(pkt, &w.hdr); err != nil ||
		(w.hdr.Type != wire.PacketTypeInitial && w.hdr.Type != wire.PacketTypeHandshake) ||
		len(w.hdr.SrcConnID) == 0 {
		w.egressIgnored++
		return false
	}
	if !w.admit(w.hdr.SrcConnID) {
		w.egressIgnored++
		w.maybePublish()
		return false
	}
	w.egressLearned++
	w.maybePublish()
	return true
}
