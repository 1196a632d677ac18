package quic

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"net"

	"github.com/turboretry/turboretry/internal/handshake"
)

// DialAddr dials addr over a new UDP socket and returns once the handshake
// completed. The socket is closed when the connection is.
func DialAddr(ctx context.Context, addr string, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return dialAddr(ctx, addr, tlsConf, conf)
}

// DialAddrEarly is DialAddr, except that when it resumes a session whose
// ticket allows 0-RTT (tls.Config.ClientSessionCache) it returns at once:
// streams opened before the handshake completes send their data in 0-RTT
// packets. Otherwise it waits for the handshake.
func DialAddrEarly(ctx context.Context, addr string, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return dialAddrMode(ctx, addr, tlsConf, conf, true)
}

func dialAddr(ctx context.Context, addr string, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return dialAddrMode(ctx, addr, tlsConf, conf, false)
}

func dialAddrMode(ctx context.Context, addr string, tlsConf *tls.Config, conf *Config, early bool) (*Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	laddr := &net.UDPAddr{IP: net.IPv4zero}
	if ua.IP.To4() == nil {
		laddr = &net.UDPAddr{IP: net.IPv6zero}
	}
	udp, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	if tlsConf != nil && tlsConf.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			tlsConf = tlsConf.Clone()
			tlsConf.ServerName = host
		}
	}
	t := &Transport{Conn: udp, createdConn: true, isSingleUse: true, singleDial: true}
	c, err := t.dial(ctx, ua, tlsConf, conf, early)
	if err != nil {
		t.close(false)
		return nil, err
	}
	return c, nil
}

// Dial dials addr over conn, which is not closed with the connection.
func Dial(ctx context.Context, conn net.PacketConn, addr net.Addr, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return dialConn(ctx, conn, addr, tlsConf, conf, false)
}

func dialConn(ctx context.Context, conn net.PacketConn, addr net.Addr, tlsConf *tls.Config, conf *Config, early bool) (*Conn, error) {
	t := &Transport{Conn: conn, isSingleUse: true, singleDial: true}
	c, err := t.dial(ctx, addr, tlsConf, conf, early)
	if err != nil {
		t.close(false)
		return nil, err
	}
	return c, nil
}

// DialEarly is Dial with 0-RTT, as DialAddrEarly.
func DialEarly(ctx context.Context, conn net.PacketConn, addr net.Addr, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return dialConn(ctx, conn, addr, tlsConf, conf, true)
}

// Dial dials addr over the Transport and returns once the handshake
// completed.
func (t *Transport) Dial(ctx context.Context, addr net.Addr, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return t.dial(ctx, addr, tlsConf, conf, false)
}

// DialEarly is Dial with 0-RTT, as DialAddrEarly.
func (t *Transport) DialEarly(ctx context.Context, addr net.Addr, tlsConf *tls.Config, conf *Config) (*Conn, error) {
	return t.dial(ctx, addr, tlsConf, conf, true)
}

func (t *Transport) dial(ctx context.Context, addr net.Addr, tlsConf *tls.Config, config *Config, early bool) (*Conn, error) {
	if err := checkTLSConfig(tlsConf); err != nil {
		return nil, err
	}
	conf, err := populateConfig(config)
	if err != nil {
		return nil, err
	}
	if err := t.init(); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.closedErr()
	}
	tc := tlsConf.Clone()
	tc.MinVersion = tls.VersionTLS13
	if tc.ServerName == "" {
		// As quic-go: the host of the address (an IP unless DialAddr
		// was given a name, see dialAddrMode).
		if host, _, err := net.SplitHostPort(addr.String()); err == nil {
			tc.ServerName = host
		}
	}
	v := conf.Versions[0]
	// The connection's context keeps ctx's values, not its cancellation.
	c := newConn(context.WithoutCancel(ctx), t, true, conf, tc, v, addr)
	c.early.dial = early
	c.cids.origDest = make([]byte, 8)
	_, _ = rand.Read(c.cids.origDest)
	c.cids.dest = c.cids.origDest
	if conf.TokenStore != nil {
		c.tokens.storeKey = tc.ServerName
		if c.tokens.storeKey == "" {
			c.tokens.storeKey = addr.String()
		}
		if tok := conf.TokenStore.Pop(c.tokens.storeKey); tok != nil {
			c.tokens.initial = tok.data
		}
	}
	sealer, opener, err := handshake.NewInitialKeys(c.cids.dest, initialKeyVersion(v), true)
	if err != nil {
		return nil, err
	}
	c.spaces[spaceInitial].sealer = sealer
	c.spaces[spaceInitial].opener = opener
	if err := c.cids.initLocal(c.t, c, &c.out, &c.path); err != nil {
		return nil, err
	}
	// No lock: nothing else reaches c before startConn (its datagrams
	// only queue, deliver), and the callbacks in here (Config.Tracer,
	// Config.Qlog, the tls.Config's ClientSessionCache) must run
	// without one of ours.
	c.startRecorders()
	err = publicError(c.startTLS())
	sendsEarly := c.sendsEarly()
	if err != nil {
		c.close.err = err
		c.trace.end(c.close.err)
		c.trace = nil
	}
	c.mu.Lock()
	c.unlockAndDeliver() // run is not going yet
	if err != nil {
		t.removeHandlers(c)
		if c.hs.tls != nil {
			c.hs.tls.Close()
		}
		return nil, err
	}
	t.startConn(c)
	if early && sendsEarly {
		return c, nil
	}
	select {
	case <-c.handshakeDoneCh:
		return c, nil
	case <-c.closedCh:
		c.mu.Lock()
		err := c.close.err
		c.mu.Unlock()
		return nil, err
	case <-ctx.Done():
		c.mu.Lock()
		c.destroyLocked(context.Cause(ctx))
		c.mu.Unlock()
		c.wake()
		<-c.runDone
		// As quic-go: the cause the caller gave its context, not just
		// context.Canceled.
		return nil, context.Cause(ctx)
	}
}
