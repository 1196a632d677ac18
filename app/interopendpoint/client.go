package interopendpoint

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"sync"
	"time"

	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/quic"
)

// clientCIDLength is the length of the client's connection IDs. quic's
// DialAddr uses none; the runner's tshark 4.0 cannot tie a packet with a
// zero-length DCID on a new path to its connection, and the migration
// cases check those packets.
const clientCIDLength = 8

// ticketWait bounds the wait for the session ticket of the first
// connection in the resumption and zerortt cases.
const ticketWait = 10 * time.Second

// reservedVersion is the version the versionnegotiation client offers: one
// of RFC 9000's reserved 0x?a?a?a?a versions, which no server speaks.
const reservedVersion quic.Version = 0x1a2a3a4a

type client struct {
	cfg     *Config
	log     *slog.Logger
	tlsConf *tls.Config
	qconf   *quic.Config
	www     *os.Root // cfg.Downloads
}

// runClient downloads cfg.Requests as cfg.TestCase asks.
func runClient(ctx context.Context, cfg *Config, keyLog *keyLogWriter) error {
	urls := make([]*url.URL, 0, len(cfg.Requests))
	for _, r := range cfg.Requests {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("interop: bad request URL %q", r)
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		return errors.New("interop: no requests (REQUESTS is empty)")
	}
	tlsConf := &tls.Config{NextProtos: []string{alpnHQ}, KeyLogWriter: keyLog.writer()}
	if err := trustRoot(tlsConf, cfg.CAFile); err != nil {
		return err
	}
	c := &client{cfg: cfg, log: cfg.Logger, tlsConf: tlsConf, qconf: quicConfig(cfg)}
	// Move to a server's preferred address when it offers one (the
	// connectionmigration case runs the client as "transfer").
	c.qconf.MigrateToPreferredAddress = true
	switch cfg.TestCase {
	case caseVersionNegotiation:
		return c.versionNegotiation(ctx, urls[0])
	case caseChaCha20:
		offerOnlyChaCha20()
	}
	dl, err := os.OpenRoot(cfg.Downloads)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	defer dl.Close()
	c.www = dl
	start := time.Now()
	switch cfg.TestCase {
	case caseHTTP3:
		err = c.http3(ctx, urls)
	case caseMulticonnect:
		err = c.multiconnect(ctx, urls)
	case caseResumption, caseZeroRTT:
		err = c.resume(ctx, urls, cfg.TestCase == caseZeroRTT)
	default:
		err = c.oneConnection(ctx, urls)
	}
	if err != nil {
		return err
	}
	c.log.Info("all downloads complete", "files", len(urls), "seconds", time.Since(start).Seconds())
	return nil
}

// trustRoot makes conf trust the CA in file, or skip verification when
// there is no such file.
func trustRoot(conf *tls.Config, file string) error {
	pem, err := os.ReadFile(file)
	if file == "" || errors.Is(err, fs.ErrNotExist) {
		conf.InsecureSkipVerify = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("interop: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("interop: no certificate in %s", file)
	}
	conf.RootCAs = pool
	return nil
}

// oneConnection fetches every URL over one connection, concurrently.
func (c *client) oneConnection(ctx context.Context, urls []*url.URL) error {
	conn, err := c.dial(ctx, urls[0].Host, c.tlsConf, c.qconf, false)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	if c.cfg.TestCase == caseKeyUpdate {
		// Early in the transfer: as soon as RFC 9001 allows it.
		if err := conn.InitiateKeyUpdate(); err != nil {
			return fmt.Errorf("interop: key update: %w", err)
		}
	}
	return c.getAll(ctx, conn, urls)
}

// multiconnect fetches each URL over a connection of its own, one after
// the other.
func (c *client) multiconnect(ctx context.Context, urls []*url.URL) error {
	for i, u := range urls {
		conn, err := c.dial(ctx, u.Host, c.tlsConf, c.qconf, false)
		if err != nil {
			return fmt.Errorf("interop: connection %d: %w", i+1, err)
		}
		err = c.get(ctx, conn, u)
		_ = conn.CloseWithError(0, "")
		if err != nil {
			return fmt.Errorf("interop: connection %d: %w", i+1, err)
		}
	}
	return nil
}

// resume fetches the first URL, waits for the session ticket, and fetches
// the others over a second connection that resumes the session; with
// early, their requests go out in 0-RTT.
func (c *client) resume(ctx context.Context, urls []*url.URL, early bool) error {
	if len(urls) < 2 {
		return errors.New("interop: resumption needs at least two URLs")
	}
	cache := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), got: make(chan struct{}, 1)}
	tlsConf := c.tlsConf.Clone()
	tlsConf.ClientSessionCache = cache
	conn, err := c.dial(ctx, urls[0].Host, tlsConf, c.qconf, false)
	if err != nil {
		return err
	}
	err = c.get(ctx, conn, urls[0])
	if err == nil {
		select {
		case <-cache.got:
		case <-time.After(ticketWait):
			err = errors.New("interop: no session ticket from the server")
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	_ = conn.CloseWithError(0, "")
	if err != nil {
		return err
	}
	conn, err = c.dial(ctx, urls[1].Host, tlsConf, c.qconf, early)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	if err := c.getAll(ctx, conn, urls[1:]); err != nil {
		return err
	}
	st := conn.ConnectionState()
	c.log.Info("second connection", "resumed", st.TLS.DidResume, "0rtt", st.Used0RTT)
	if !st.TLS.DidResume {
		return errors.New("interop: the second connection did not resume the session")
	}
	if early && !st.Used0RTT {
		return errors.New("interop: the server did not accept 0-RTT")
	}
	return nil
}

// ticketCache tells when a session ticket arrived.
type ticketCache struct {
	tls.ClientSessionCache
	got chan struct{}
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case c.got <- struct{}{}:
		default:
		}
	}
}

// dial connects to authority from a socket of its own, closed with the
// connection.
func (c *client) dial(ctx context.Context, authority string, tlsConf *tls.Config, qconf *quic.Config, early bool) (*quic.Conn, error) {
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	ua, err := net.ResolveUDPAddr("udp", authority)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	laddr := &net.UDPAddr{IP: net.IPv4zero}
	if ua.IP.To4() == nil {
		laddr = &net.UDPAddr{IP: net.IPv6zero}
	}
	udp, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	t := &quic.Transport{Conn: udp, ConnectionIDLength: clientCIDLength}
	tc := tlsConf.Clone()
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	var conn *quic.Conn
	if early {
		conn, err = t.DialEarly(ctx, ua, tc, qconf)
	} else {
		conn, err = t.Dial(ctx, ua, tc, qconf)
	}
	if err != nil {
		_ = t.Close()
		_ = udp.Close()
		return nil, err
	}
	go func() {
		<-conn.Context().Done()
		_ = t.Close()
		_ = udp.Close()
	}()
	return conn, nil
}

// getAll fetches urls over conn: one goroutine sends the requests back to
// back, so that they fill as few packets as possible (in the zerortt case,
// all of them within the 0-RTT packets the congestion window allows), and
// each response is read by a goroutine of its own.
func (c *client) getAll(ctx context.Context, conn *quic.Conn, urls []*url.URL) error {
	var wg sync.WaitGroup
	errs := make([]error, len(urls))
	for i, u := range urls {
		s, err := c.request(ctx, conn, u)
		if err != nil {
			errs[i] = err
			break
		}
		wg.Go(func() { errs[i] = c.saveResponse(u, s) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// concurrently runs get for every URL at once and joins their errors.
func concurrently(urls []*url.URL, get func(*url.URL) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(urls))
	for i, u := range urls {
		wg.Go(func() { errs[i] = get(u) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// get fetches one URL over conn with hq-interop into the downloads
// directory.
func (c *client) get(ctx context.Context, conn *quic.Conn, u *url.URL) error {
	s, err := c.request(ctx, conn, u)
	if err != nil {
		return err
	}
	return c.saveResponse(u, s)
}

// request opens a stream and sends the hq-interop request for u on it.
func (c *client) request(ctx context.Context, conn *quic.Conn, u *url.URL) (*quic.Stream, error) {
	if _, err := fileName(u); err != nil {
		return nil, err
	}
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("interop: %s: %w", u.Path, err)
	}
	if _, err = s.Write(appendRequest(nil, u.Path)); err == nil {
		err = s.Close()
	}
	if err != nil {
		s.CancelRead(0)
		return nil, fmt.Errorf("interop: %s: %w", u.Path, err)
	}
	return s, nil
}

// saveResponse stores the response to u read from s in the downloads
// directory.
func (c *client) saveResponse(u *url.URL, s *quic.Stream) error {
	name, err := fileName(u)
	if err != nil {
		return err
	}
	return c.save(name, s)
}

// save writes r into the downloads directory as name; a partial file is
// removed.
func (c *client) save(name string, r io.Reader) error {
	f, err := c.www.Create(name)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = c.www.Remove(name)
		return fmt.Errorf("interop: %s: %w", name, err)
	}
	return nil
}

// fileName is the name a download of u is stored under.
func fileName(u *url.URL) (string, error) {
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == ".." {
		return "", fmt.Errorf("interop: URL %s names no file", u)
	}
	return name, nil
}

// http3 fetches urls over HTTP/3, concurrently, over one connection.
func (c *client) http3(ctx context.Context, urls []*url.URL) error {
	tr := &http3.Transport{
		TLSClientConfig: c.tlsConf,
		QUICConfig:      c.qconf,
		Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
			return c.dial(ctx, addr, tlsConf, conf, true)
		},
		Logger: c.log,
	}
	defer tr.Close()
	return concurrently(urls, func(u *url.URL) error { return c.getHTTP3(ctx, tr, u) })
}

func (c *client) getHTTP3(ctx context.Context, tr *http3.Transport, u *url.URL) error {
	name, err := fileName(u)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("interop: %s: %w", u.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("interop: %s: %s", u.Path, resp.Status)
	}
	return c.save(name, resp.Body)
}

// versionNegotiation offers only a reserved version, so the server must
// answer with a Version Negotiation packet; the dial failing with
// VersionNegotiationError is the success.
func (c *client) versionNegotiation(ctx context.Context, u *url.URL) error {
	qconf := c.qconf.Clone()
	qconf.Versions = []quic.Version{reservedVersion}
	conn, err := c.dial(ctx, u.Host, c.tlsConf, qconf, false)
	var vn *quic.VersionNegotiationError
	if errors.As(err, &vn) {
		c.log.Info("version negotiation", "ours", vn.Ours, "server offers", vn.Theirs)
		return nil
	}
	if err == nil {
		_ = conn.CloseWithError(0, "")
		return fmt.Errorf("interop: the server accepted version %s", reservedVersion)
	}
	return fmt.Errorf("interop: no Version Negotiation packet: %w", err)
}
