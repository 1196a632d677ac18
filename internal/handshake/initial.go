package handshake

import "crypto/tls"

// NewInitialKeys derives the Initial-level Sealer and Opener of one
// endpoint from the Destination Connection ID of the client's first
// Initial packet (RFC 9001 section 5.2). A client seals with the client
// secret and opens with the server secret; a server the reverse. After a
// Retry the client derives new keys from the Retry's Source Connection ID.
func NewInitialKeys(dcid []byte, v Version, isClient bool) (*Sealer, *Opener, error) {
	client, server, err := InitialSecrets(dcid, v)
	if err != nil {
		return nil, nil, err
	}
	sendSecret, recvSecret := server, client
	if isClient {
		sendSecret, recvSecret = client, server
	}
	sealer, err := NewSealer(tls.TLS_AES_128_GCM_SHA256, sendSecret, v)
	if err != nil {
		return nil, nil, err
	}
	opener, err := NewOpener(tls.TLS_AES_128_GCM_SHA256, recvSecret, v)
	if err != nil {
		return nil, nil, err
	}
	return sealer, opener, nil
}
