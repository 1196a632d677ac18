package quic

import (
	"crypto/tls"
	"net"
	"time"
)

// serverTLSConfig returns the config of one server connection: a clone of
// the application's, TLS 1.3 only, with withClientHelloConn's callbacks.
func serverTLSConfig(app *tls.Config, local, remote net.Addr) *tls.Config {
	tc := app.Clone()
	tc.MinVersion = tls.VersionTLS13
	return withClientHelloConn(tc, local, remote)
}

// withClientHelloConn returns conf, or, when it has callbacks that receive
// a tls.ClientHelloInfo, a clone whose callbacks find the connection's
// addresses in ClientHelloInfo.Conn (crypto/tls leaves it nil for QUIC),
// as quic-go provides. Configs GetConfigForClient returns get the same
// treatment.
func withClientHelloConn(conf *tls.Config, local, remote net.Addr) *tls.Config {
	if conf == nil || (conf.GetConfigForClient == nil && conf.GetCertificate == nil) {
		return conf
	}
	hc := &helloConn{local: local, remote: remote}
	conf = conf.Clone() // GetConfigForClient's configs are the application's
	if f := conf.GetConfigForClient; f != nil {
		conf.GetConfigForClient = func(info *tls.ClientHelloInfo) (*tls.Config, error) {
			info.Conn = hc
			c, err := f(info)
			if c != nil {
				if c.MinVersion < tls.VersionTLS13 {
					c = c.Clone()
					c.MinVersion = tls.VersionTLS13
				}
				c = withClientHelloConn(c, local, remote)
			}
			return c, err
		}
	}
	if f := conf.GetCertificate; f != nil {
		conf.GetCertificate = func(info *tls.ClientHelloInfo) (*tls.Certificate, error) {
			info.Conn = hc
			return f(info)
		}
	}
	return conf
}

// helloConn is the net.Conn of a ClientHelloInfo: only the addresses
// work; reads and writes fail.
type helloConn struct{ local, remote net.Addr }

func (c *helloConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (c *helloConn) Write([]byte) (int, error)        { return 0, net.ErrClosed }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) LocalAddr() net.Addr              { return c.local }
func (c *helloConn) RemoteAddr() net.Addr             { return c.remote }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }
