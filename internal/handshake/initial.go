package handshake

// initialKeys holds both directions of the Initial level in one
// allocation; NewInitialKeys hands out pointers into it.
type initialKeys struct {
	sealer         Sealer
	opener         Opener
	sealHP, openHP headerProtector
}

// NewInitialKeys derives the Initial-level Sealer and Opener of one
// endpoint from the Destination Connection ID of the client's first
// Initial packet (RFC 9001 section 5.2). A client seals with the client
// secret and opens with the server secret; a server the reverse. After a
// Retry the client derives new keys from the Retry's Source Connection ID.
//
// A server pays this for every client Initial that reaches connection
// creation, so it derives all secrets and keys on the stack: what it
// allocates is the AES and GCM state from crypto/aes and crypto/cipher
// plus one struct holding both directions.
func NewInitialKeys(dcid []byte, v Version, isClient bool) (*Sealer, *Opener, error) {
	vp, client, server, err := initialSecrets(dcid, v)
	if err != nil {
		return nil, nil, err
	}
	send, recv := &server, &client
	if isClient {
		send, recv = recv, send
	}
	k := new(initialKeys)
	if err := k.sealer.initFromSecret(&suiteAES128, vp, send[:], &k.sealHP); err != nil {
		return nil, nil, err
	}
	if err := k.opener.initFromSecret(&suiteAES128, vp, recv[:], &k.openHP); err != nil {
		return nil, nil, err
	}
	return &k.sealer, &k.opener, nil
}

// initialSealer holds one direction of the Initial level in one
// allocation.
type initialSealer struct {
	sealer Sealer
	hp     headerProtector
}

// NewInitialSealer derives only the Initial-level Sealer of one endpoint
// (NewInitialKeys without the Opener), for a packet sent without a
// connection: a server's stateless close pays it for every refused
// Initial, so it builds half of the AES and GCM state.
func NewInitialSealer(dcid []byte, v Version, isClient bool) (*Sealer, error) {
	vp, client, server, err := initialSecrets(dcid, v)
	if err != nil {
		return nil, err
	}
	send := &server
	if isClient {
		send = &client
	}
	k := new(initialSealer)
	if err := k.sealer.initFromSecret(&suiteAES128, vp, send[:], &k.hp); err != nil {
		return nil, err
	}
	return &k.sealer, nil
}
