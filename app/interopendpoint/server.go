package interopendpoint

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// handshakeIdleTimeout is the handshake idle timeout of both roles: the
// handshakeloss case drops 30 % of the packets in bursts of up to three,
// and before the first RTT sample three lost Initials back off for 1+2+4
// seconds, past quic's 5 s default.
const handshakeIdleTimeout = 20 * time.Second

// hqErrorCode is the stream error of a request the server cannot answer.
const hqErrorCode = 0x101

// runServer serves cfg.WWW until ctx ends.
func runServer(ctx context.Context, cfg *Config, keyLog *keyLogWriter) error {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("interop: server certificate: %w", err)
	}
	www, err := os.OpenRoot(cfg.WWW)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	defer www.Close()
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{alpnHQ},
		KeyLogWriter: keyLog.writer(),
	}
	qconf := quicConfig(cfg)
	udp, err := listenUDP(cfg)
	if err != nil {
		return err
	}
	t := &quic.Transport{Conn: udp}
	defer udp.Close()
	defer t.Close()
	switch cfg.TestCase {
	case caseRetry:
		t.AddressValidation = &quic.AddressValidationConfig{Policy: quic.AlwaysRetry()}
	case caseZeroRTT:
		qconf.Allow0RTT = true
	case caseV2:
		// Compatible version negotiation: v1 clients that offer v2 move
		// to it in our first flight.
		qconf.Versions = []quic.Version{quic.Version2, quic.Version1}
	case caseConnectionMigration:
		pa, err := preferredAddress(udp.LocalAddr().(*net.UDPAddr).Port)
		if err != nil {
			return err
		}
		cfg.Logger.Info("advertising a preferred address", "ipv4", pa.IPv4, "ipv6", pa.IPv6)
		qconf.PreferredAddress = pa
	}
	if cfg.TestCase == caseHTTP3 {
		return serveHTTP3(ctx, cfg, t, tlsConf, qconf, www)
	}
	ln, err := t.ListenEarly(tlsConf, qconf)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	cfg.Logger.Info("serving hq-interop", "addr", udp.LocalAddr(), "testcase", cfg.TestCase)
	for {
		conn, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("interop: accept: %w", err)
		}
		go serveHQConn(ctx, cfg.Logger, conn, www)
	}
}

// quicConfig is the QUIC configuration both roles start from.
func quicConfig(cfg *Config) *quic.Config {
	c := &quic.Config{HandshakeIdleTimeout: handshakeIdleTimeout}
	if cfg.QlogDir != "" {
		c.Qlog = quic.QlogDir(cfg.QlogDir)
	}
	return c
}

// serveHQConn answers the hq-interop requests of one connection.
func serveHQConn(ctx context.Context, log *slog.Logger, conn *quic.Conn, www *os.Root) {
	st := conn.ConnectionState()
	log.Info("connection", "remote", conn.RemoteAddr(), "version", st.Version,
		"resumed", st.TLS.DidResume, "0rtt", st.Used0RTT)
	for {
		s, err := conn.AcceptStream(ctx)
		if err != nil {
			return
		}
		go serveHQStream(log, s, www)
	}
}

// serveHQStream answers one request: the file's bytes, then FIN; a request
// it cannot answer gets its stream reset.
func serveHQStream(log *slog.Logger, s *quic.Stream, www *os.Root) {
	p, err := readRequest(s)
	if err != nil {
		log.Warn("request", "stream", s.StreamID(), "err", err)
		s.CancelRead(hqErrorCode)
		s.CancelWrite(hqErrorCode)
		return
	}
	f, err := openFile(www, p)
	if err != nil {
		log.Warn("request", "path", p, "err", err)
		s.CancelWrite(hqErrorCode)
		return
	}
	defer f.Close()
	if _, err := io.Copy(s, f); err != nil {
		log.Warn("response", "path", p, "err", err)
		s.CancelWrite(hqErrorCode)
		return
	}
	_ = s.Close()
}

// openFile opens the regular file a request path names under www; os.Root
// refuses paths that leave it.
func openFile(www *os.Root, p string) (*os.File, error) {
	name := strings.TrimPrefix(path.Clean(p), "/")
	if name == "" {
		name = "."
	}
	f, err := www.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("interop: %s: %w", p, fs.ErrNotExist)
	}
	return f, nil
}

// serveHTTP3 serves www over HTTP/3 until ctx ends.
func serveHTTP3(ctx context.Context, cfg *Config, t *quic.Transport, tlsConf *tls.Config, qconf *quic.Config, www *os.Root) error {
	ln, err := t.ListenEarly(http3.ConfigureTLSConfig(tlsConf), qconf)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	srv := &http3.Server{Handler: http.FileServerFS(www.FS()), Logger: cfg.Logger}
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ln) }()
	cfg.Logger.Info("serving HTTP/3", "addr", t.Conn.LocalAddr())
	select {
	case <-ctx.Done():
		_ = srv.Close()
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http3.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("interop: %w", err)
	}
}

// listenUDP returns the server's socket: cfg.Conn, or a new one bound to
// cfg.Addr (DefaultAddr when empty).
func listenUDP(cfg *Config) (*net.UDPConn, error) {
	if cfg.Conn != nil {
		return cfg.Conn, nil
	}
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("interop: listen address: %w", err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	return udp, nil
}
