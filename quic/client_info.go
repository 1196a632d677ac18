package quic

import (
	"context"
	"errors"
	"net"
)

// ClientInfo describes a connection attempt to a server, for
// Config.GetConfigForClient and Transport.ConnContext, as in quic-go.
type ClientInfo struct {
	// RemoteAddr is the address the client's Initial came from. Unless
	// AddrVerified is set, it is not validated and may be spoofed.
	RemoteAddr net.Addr
	// AddrVerified says that a valid token (from a Retry or a NEW_TOKEN
	// frame) proved the client's address.
	AddrVerified bool
}

// TokenGeneratorKey is the secret of a server's address-validation tokens
// (Transport.TokenGeneratorKey), as in quic-go.
type TokenGeneratorKey = [32]byte

// defaultAddressValidation is the address validation of a Transport
// without AddressValidation, with quic-go's behaviour: no Retry unless
// VerifySourceAddress asks for one, NEW_TOKEN tokens for every client
// (MaxTokenAge, TokenGeneratorKey), and Retry tokens valid for the
// handshake timeout (twice the handshake idle timeout).
func (t *Transport) defaultAddressValidation(conf *Config) *AddressValidationConfig {
	av := &AddressValidationConfig{
		Policy:           NeverRetry(),
		NewTokenMaxAge:   t.MaxTokenAge,
		RetryTokenMaxAge: 2 * conf.HandshakeIdleTimeout,
	}
	if t.VerifySourceAddress != nil {
		av.Policy = VerifySourceAddress(t.VerifySourceAddress)
	}
	if k := t.TokenGeneratorKey; k != nil {
		av.TokenSecret = k[:]
	}
	return av
}

// connectionFor runs Transport.ConnContext and Config.GetConfigForClient
// for a connection attempt: the context and Config the connection gets,
// or an error that refuses it.
func (s *baseServer) connectionFor(remote net.Addr, validated bool) (context.Context, *Config, error) {
	app := appCalls{t: s.t}
	app.enter()
	defer app.exit()
	info := &ClientInfo{RemoteAddr: remote, AddrVerified: validated}
	ctx := context.Background()
	if f := s.t.ConnContext; f != nil {
		c, err := f(ctx, info)
		if err != nil {
			return nil, nil, err
		}
		if c == nil {
			return nil, nil, errors.New("quic: ConnContext returned a nil context")
		}
		ctx = c
	}
	conf := s.config
	if f := s.config.GetConfigForClient; f != nil {
		c, err := f(info)
		if err != nil {
			return nil, nil, err
		}
		if c != nil {
			if conf, err = populateConfig(c); err != nil {
				return nil, nil, err
			}
			// The listener's limits stay the listener's.
			conf.MaxConnections, conf.MaxHandshakes, conf.AcceptBacklog = s.config.MaxConnections, s.config.MaxHandshakes, s.config.AcceptBacklog
		}
	}
	return ctx, conf, nil
}
