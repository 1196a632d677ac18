package stateless

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/turboretry/turboretry/internal/wire"
)

// AppendVersionNegotiation appends a Version Negotiation packet (RFC 9000
// section 17.2.1) answering a client packet with the connection IDs
// clientDCID and clientSCID (up to 255 bytes each; the packet swaps them):
// the versions the Responder speaks, preferred first, then a reserved
// version drawn afresh each time, so that clients do not ossify on the list
// (section 6.3). A client ignores the reserved version; RFC 9368's
// downgrade check compares the spoken ones with the server's
// version_information. Connection IDs over 255 bytes panic (Examine never
// passes one: the invariant header cannot hold it).
func (r *Responder) AppendVersionNegotiation(b, clientDCID, clientSCID []byte) []byte {
	// One draw gives the first byte's unused bits and the reserved
	// version. The runtime generator is enough: they only have to vary.
	x := rand.Uint64()
	b = wire.AppendVersionNegotiationHeader(b, byte(x), clientDCID, clientSCID)
	for _, v := range r.versions[:r.n] {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return binary.BigEndian.AppendUint32(b, uint32(x>>32)&0xf0f0f0f0|0x0a0a0a0a)
}
