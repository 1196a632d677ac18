package flood

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/turboretry/turboretry/internal/protocol"
	"github.com/turboretry/turboretry/internal/wire"
)

// DefaultServerName is the SNI put into generated ClientHellos.
const DefaultServerName = "turboretry.test"

// ClientHello returns the Initial-level CRYPTO data of a real QUIC client
// handshake: crypto/tls's QUIC client is started and its first flight (one
// ClientHello) is taken. scid goes into the initial_source_connection_id
// transport parameter. The key share is X25519 only, so the ClientHello
// fits one 1200-byte Initial (a hybrid post-quantum share would not).
func ClientHello(serverName string, v Version, scid []byte) ([]byte, error) {
	if serverName == "" {
		serverName = DefaultServerName
	}
	tp := wire.DefaultTransportParameters()
	tp.InitialMaxData = 1 << 20
	tp.InitialMaxStreamDataBidiLocal = 1 << 18
	tp.InitialMaxStreamDataBidiRemote = 1 << 18
	tp.InitialMaxStreamDataUni = 1 << 18
	tp.InitialMaxStreamsBidi = 100
	tp.InitialMaxStreamsUni = 100
	tp.InitialSourceConnectionID = scid
	tp.HasInitialSourceConnectionID = true
	if v == Version2 {
		// RFC 9368: a v2 client announces the version it uses.
		tp.VersionInformation = &wire.VersionInformation{
			ChosenVersion:     wire.Version2,
			AvailableVersions: []wire.Version{wire.Version2, wire.Version1},
		}
	}
	params, err := tp.Marshal(nil, protocol.PerspectiveClient)
	if err != nil {
		return nil, fmt.Errorf("flood: transport parameters: %w", err)
	}
	conf := &tls.Config{
		ServerName:       serverName,
		NextProtos:       []string{"h3"},
		MinVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{tls.X25519},
	}
	qc := tls.QUICClient(&tls.QUICConfig{TLSConfig: conf})
	defer qc.Close()
	qc.SetTransportParameters(params)
	if err := qc.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("flood: starting TLS client: %w", err)
	}
	var hello []byte
	for {
		ev := qc.NextEvent()
		if ev.Kind == tls.QUICNoEvent {
			break
		}
		if ev.Kind == tls.QUICWriteData && ev.Level == tls.QUICEncryptionLevelInitial {
			hello = append(hello, ev.Data...)
		}
	}
	if len(hello) == 0 {
		return nil, errors.New("flood: TLS client produced no ClientHello")
	}
	return hello, nil
}
