package quic

import (
	"errors"

	"github.com/turboretry/turboretry/internal/qerr"
	"github.com/turboretry/turboretry/internal/streambuf"
)

// requeueCrypto marks every sent and unacknowledged CRYPTO byte lost, so a
// probe or the Initial after a Retry carries the whole flight again.
func (sp *pnSpace) requeueCrypto() {
	if hw := sp.crypto.SentHighWater(); hw > 0 {
		sp.crypto.OnLost(0, int(hw), false)
	}
}

// bufferError turns a reassembly error into the transport error that closes
// the connection, naming the STREAM or CRYPTO frame that caused it.
func bufferError(err error, frameType uint64) error {
	var be *streambuf.Error
	if errors.As(err, &be) {
		return qerr.NewTransportError(be.Code, frameType, be.Reason)
	}
	return qerr.NewTransportError(qerr.InternalError, frameType, err.Error())
}
