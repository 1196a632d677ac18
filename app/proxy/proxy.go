package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
)

// Handler is the reverse proxy: it answers each request from the upstream
// its path routes to, or from Config.Files.
type Handler struct {
	cfg      Config
	m        *metrics
	ups      []*upstream // every upstream once, for Close
	routes   []route     // longest prefix first
	fallback http.Handler
	log      *slog.Logger
	health   *healthChecker // nil without Config.HealthPath
}

// route is a path prefix and the upstreams it goes to.
type route struct {
	prefix string
	to     *poolProxy
}

// New checks cfg and returns its Handler. Upstream URLs that name the
// same upstream share its connections and metrics.
func New(cfg Config) (*Handler, error) {
	cfg.fillDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	tlsConf, err := upstreamTLS(&cfg)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, m: m, log: cfg.Logger}
	byName := map[string]*upstream{}
	newPool := func(names []string) (*poolProxy, error) {
		p := &pool{}
		for _, name := range names {
			u := byName[name]
			if u == nil {
				t, err := parseTarget(name)
				if err != nil {
					return nil, err
				}
				u = &upstream{name: name, target: t, transport: newTransport(t, &cfg, tlsConf), m: m.forUpstream(name)}
				byName[name] = u
				h.ups = append(h.ups, u)
			}
			if !slices.Contains(p.ups, u) {
				p.ups = append(p.ups, u)
			}
		}
		return h.newPoolProxy(p), nil
	}

	h.fallback = cfg.Files
	if h.fallback == nil {
		h.fallback = http.NotFoundHandler()
	}
	if len(cfg.Upstreams) > 0 {
		if h.fallback, err = newPool(cfg.Upstreams); err != nil {
			return nil, err
		}
	}
	var prefixes []string
	targets := map[string][]string{}
	for _, r := range cfg.Routes {
		if !strings.HasPrefix(r.Prefix, "/") {
			return nil, fmt.Errorf("route %q: the prefix must start with /", r.Prefix)
		}
		if _, ok := targets[r.Prefix]; !ok {
			prefixes = append(prefixes, r.Prefix)
		}
		targets[r.Prefix] = append(targets[r.Prefix], r.Upstream)
	}
	for _, prefix := range prefixes {
		pp, err := newPool(targets[prefix])
		if err != nil {
			return nil, err
		}
		h.routes = append(h.routes, route{prefix: prefix, to: pp})
	}
	slices.SortStableFunc(h.routes, func(a, b route) int { return len(b.prefix) - len(a.prefix) })
	if cfg.HealthPath != "" {
		ref, err := url.Parse(cfg.HealthPath)
		if err != nil {
			return nil, fmt.Errorf("proxy: health check path: %w", err)
		}
		h.health = &healthChecker{ups: h.ups, ref: ref, interval: cfg.HealthInterval, timeout: cfg.HealthTimeout, h: h}
		h.health.start()
	}
	return h, nil
}

// NewForSite returns a fileserver.Config.Handler that builds a Handler
// from cfg with the site's files, metrics registry and logger.
func NewForSite(cfg Config) func(fileserver.Site) (http.Handler, error) {
	return func(s fileserver.Site) (http.Handler, error) {
		cfg.Files, cfg.Metrics, cfg.Logger = s.Files, s.Metrics, s.Logger
		return New(cfg)
	}
}

// Close stops the health checks and closes the idle upstream
// connections. Requests in flight go on; the server closes Handler after
// its graceful shutdown.
func (h *Handler) Close() error {
	if h.health != nil {
		h.health.close()
	}
	for _, u := range h.ups {
		u.transport.CloseIdleConnections()
	}
	return nil
}

// matches reports whether prefix routes path.
func matches(prefix, path string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || strings.HasSuffix(prefix, "/") || path[len(prefix)] == '/'
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, rt := range h.routes {
		if matches(rt.prefix, r.URL.Path) {
			rt.to.ServeHTTP(w, r)
			return
		}
	}
	h.fallback.ServeHTTP(w, r)
}

// poolProxy forwards requests to one pool with httputil.ReverseProxy.
type poolProxy struct {
	h    *Handler
	pool *pool
	rp   *httputil.ReverseProxy
}

// copyBufferSize is the size of ReverseProxy's response copy buffers, as
// big as the reads from an upstream connection usually are.
const copyBufferSize = 32 << 10

// bufferPool recycles the copy buffers through a channel rather than a
// sync.Pool, which would allocate to hold each slice; it keeps at most
// cap(free) idle buffers (8 MiB).
type bufferPool struct{ free chan []byte }

func (p bufferPool) Get() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return make([]byte, copyBufferSize)
	}
}

func (p bufferPool) Put(b []byte) {
	if cap(b) != copyBufferSize {
		return
	}
	select {
	case p.free <- b[:copyBufferSize]:
	default:
	}
}

var copyBuffers = bufferPool{free: make(chan []byte, 256)}

func (h *Handler) newPoolProxy(p *pool) *poolProxy {
	pp := &poolProxy{h: h, pool: p}
	pp.rp = &httputil.ReverseProxy{
		Rewrite:   pp.rewrite,
		Transport: pp,
		// Responses are flushed as the upstream sends them, by
		// responseFlusher: a read from the upstream is written and flushed
		// before the next, so server-sent events and long polls pass at
		// once, and a slow client slows the reads from the upstream
		// (backpressure). ReverseProxy's own immediate flushing (-1)
		// would also send the header on its own, from a timer, and the
		// last bytes apart from the end of the stream: more packets.
		FlushInterval:  0,
		BufferPool:     copyBuffers,
		ModifyResponse: pp.modifyResponse,
		ErrorHandler:   pp.fail,
		ErrorLog:       slog.NewLogLogger(h.log.Handler(), slog.LevelDebug),
	}
	return pp
}

// exchange is the state of one proxied request, shared by the
// ReverseProxy hooks through the outbound request's context.
type exchange struct {
	w       http.ResponseWriter
	in      *http.Request   // the request as the server handed it (its Trailer is filled in place)
	body    *requestBody    // nil without a body
	trailer http.Header     // the outbound request's trailers
	up      *upstream       // the upstream of the last attempt
	start   time.Time       // of the last attempt
	elapsed time.Duration   // to the response header
	status  int             // the upstream's
	kind    string          // the error kind, if the exchange failed
	early   bool            // forwarded before the client's handshake completed (RFC 8470)
	out     responseFlusher // what ReverseProxy writes the response to
}

// responseFlusher is the client's ResponseWriter as ReverseProxy sees it: each
// write is flushed at once, except the one that completes a body of known
// length, which the server then sends with the end of the stream (a small
// response: header, body and end in one go). With ReverseProxy's
// FlushInterval 0 it also flushes streams of unknown length and
// text/event-stream itself, so those get two flushes per write; the second
// finds nothing to send.
type responseFlusher struct {
	http.ResponseWriter
	flusher http.Flusher // nil when the writer cannot flush
	length  int64        // the response's Content-Length; -1 unknown
	written int64
}

func (w *responseFlusher) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	if err == nil && w.flusher != nil && (w.length < 0 || w.written < w.length) {
		// A failed flush shows in the next write, as with ReverseProxy's
		// own flushing.
		w.flusher.Flush()
	}
	return n, err
}

// Flush sends what was written (ReverseProxy flushes before trailers).
func (w *responseFlusher) Flush() {
	if w.flusher != nil {
		w.flusher.Flush()
	}
}

// Unwrap gives http.ResponseController and fileserver.AddAccessLogAttrs
// the server's writer.
func (w *responseFlusher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type exchangeKey struct{}

func exchangeOf(r *http.Request) *exchange {
	ex, _ := r.Context().Value(exchangeKey{}).(*exchange)
	return ex
}

func (pp *poolProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := pp.h.cfg.MaxBodyBytes
	if limit > 0 && r.ContentLength > limit {
		pp.h.m.tooLarge.Inc()
		fileserver.AddAccessLogAttrs(w, slog.String("upstream_error", kindBodyTooLarge))
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	ex := &exchange{w: w, in: r, out: responseFlusher{ResponseWriter: w, length: -1}}
	ex.out.flusher, _ = w.(http.Flusher)
	if inEarlyData(r) {
		proceed, early := pp.h.admitEarly(w, r)
		if !proceed {
			return
		}
		ex.early = early
	}
	if isWebSocketConnect(r) {
		pp.serveWebSocket(w, r, ex)
		return
	}
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		ex.body = &requestBody{rc: r.Body, limit: limit, ex: ex}
		// In place, as http.MaxBytesReader is used: r stays the
		// server's request, whose Trailer the server fills at the end
		// of the body.
		r.Body = ex.body
	}
	pp.rp.ServeHTTP(&ex.out, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex)))
	if ex.kind == kindAborted && r.Context().Err() == nil {
		// The upstream's response broke off after its header was
		// forwarded: the client must not take what it got for the whole
		// response. ReverseProxy aborts this way itself under net/http's
		// server only.
		panic(http.ErrAbortHandler)
	}
}

// rewrite sets the outbound request's fields (ReverseProxy has removed
// the hop-by-hop fields and the client's forwarding fields, which
// setForwarded puts back for trusted peers). The URL is set per attempt,
// by RoundTrip.
func (pp *poolProxy) rewrite(pr *httputil.ProxyRequest) {
	ex := exchangeOf(pr.Out)
	pr.Out.Host = pr.In.Host // the client's authority, as Caddy and HAProxy forward it
	pp.h.setForwarded(pr)
	pr.Out.Header.Add("Via", viaValue(pr.In.ProtoMajor, pr.In.ProtoMinor))
	if ex.early {
		// RFC 8470 section 5.1: the upstream learns the request may be a
		// replay, and may answer 425, which is passed on.
		pr.Out.Header.Set("Early-Data", "1")
	}
	if ex.body != nil {
		// Trailers announced now are copied, values included, when the
		// body ends (requestBody.Read); so are those that arrive
		// unannounced, which HTTP/1.1 chunked bodies can carry.
		ex.trailer = make(http.Header, len(ex.in.Trailer))
		for k := range ex.in.Trailer {
			ex.trailer[k] = nil
		}
		pr.Out.Trailer = ex.trailer
		if len(ex.trailer) > 0 {
			// Trailers need a chunked HTTP/1.1 body.
			pr.Out.ContentLength = -1
		}
	} else {
		pr.Out.Trailer = nil
	}
}

// viaValue is a Via entry (RFC 9110 section 7.6.3) for a message received
// over HTTP major.minor.
func viaValue(major, minor int) string {
	switch {
	case major == 3:
		return "3 turboretry"
	case major == 2:
		return "2 turboretry"
	case major == 1 && minor == 1:
		return "1.1 turboretry"
	}
	if major >= 2 {
		return fmt.Sprintf("%d turboretry", major)
	}
	return fmt.Sprintf("%d.%d turboretry", major, minor)
}

// RoundTrip sends the request to an upstream of the pool. When one cannot
// be connected to, it is skipped for FailTimeout, and the request, still
// untouched, goes to the next.
func (pp *poolProxy) RoundTrip(out *http.Request) (*http.Response, error) {
	ex := exchangeOf(out)
	base := *out.URL
	var tried uint64
	var lastErr error
	for attempt := 0; attempt < len(pp.pool.ups); attempt++ {
		now := time.Now()
		i := pp.pool.pick(now.UnixNano(), tried, attempt == 0)
		if i < 0 {
			break
		}
		if i < 64 {
			tried |= 1 << i
		}
		u := pp.pool.ups[i]
		ex.up, ex.start = u, now
		out.URL = joinURL(&base, u.target.url)
		u.m.inFlight.Inc()
		var resp *http.Response
		var err error
		var release context.CancelCauseFunc
		if pp.h.cfg.MaxConnsPerUpstream > 0 {
			resp, release, err = u.roundTripQueued(attemptRequest(out), pp.h.cfg.QueueTimeout)
		} else {
			resp, err = u.transport.RoundTrip(attemptRequest(out))
		}
		if err == nil {
			ex.elapsed, ex.status, ex.kind = time.Since(now), resp.StatusCode, ""
			u.markUp()
			u.m.latency.Observe(ex.elapsed.Seconds())
			u.countResponse(resp.StatusCode)
			if resp.StatusCode == http.StatusSwitchingProtocols {
				// The body is the upgraded connection, which
				// ReverseProxy needs as it is: no longer a request (and
				// not to be cancelled with one).
				u.m.inFlight.Dec()
			} else {
				resp.Body = &responseBody{rc: resp.Body, ex: ex, u: u, release: release}
			}
			return resp, nil
		}
		u.m.inFlight.Dec()
		ex.kind = pp.h.classify(err, ex)
		u.m.errors.WithLabelValues(ex.kind).Inc()
		lastErr = err
		if !isConnectFailure(err) {
			break
		}
		u.markDown(now.UnixNano(), pp.h.cfg.FailTimeout)
		pp.h.log.Warn("proxy: upstream unreachable; skipping it for a while", "upstream", u.name, "err", err, "for", pp.h.cfg.FailTimeout)
		if (ex.body != nil && ex.body.touched.Load()) || out.Context().Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// attemptRequest returns out for one attempt: http.Transport closes the
// body of a request it could not send, so each attempt gets its own
// closable view of the one body.
func attemptRequest(out *http.Request) *http.Request {
	if out.Body == nil || out.Body == http.NoBody {
		return out
	}
	a := out.WithContext(out.Context())
	a.Body = &attemptBody{rc: out.Body}
	return a
}

// attemptBody reads the request body until its attempt closes it.
type attemptBody struct {
	rc     io.ReadCloser
	closed atomic.Bool
}

func (b *attemptBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errors.New("proxy: request body read after its attempt ended")
	}
	return b.rc.Read(p)
}

func (b *attemptBody) Close() error {
	b.closed.Store(true)
	return nil
}

// joinURL returns the URL of a request for base (the client's path and
// query) at upstream t: t's scheme and host, t's path followed by base's,
// and both queries.
func joinURL(base, t *url.URL) *url.URL {
	u := *base
	pr := httputil.ProxyRequest{In: &http.Request{}, Out: &http.Request{URL: &u}}
	pr.SetURL(t)
	return pr.Out.URL
}

// modifyResponse adjusts the upstream's response header before it is
// copied: fields that the server sets on every response (Alt-Svc,
// X-Content-Type-Options) replace the upstream's, which describe the
// upstream, and Via gets our entry.
func (pp *poolProxy) modifyResponse(resp *http.Response) error {
	ex := exchangeOf(resp.Request)
	front := ex.w.Header()
	for _, k := range [...]string{"Alt-Svc", "X-Content-Type-Options"} {
		if _, ok := front[k]; ok {
			delete(resp.Header, k)
		}
	}
	resp.Header.Add("Via", viaValue(resp.ProtoMajor, resp.ProtoMinor))
	if resp.StatusCode != http.StatusSwitchingProtocols {
		ex.out.length = resp.ContentLength
	}
	fileserver.AddAccessLogAttrs(ex.w,
		slog.String("upstream", ex.up.name),
		slog.Int("upstream_status", ex.status),
		slog.Duration("upstream_time", ex.elapsed))
	return nil
}

// fail answers a request whose upstream exchange failed before a response
// header came: 502 when no upstream could be connected to or one broke
// the exchange, 504 when one did not answer in time, 413 for a body past
// the limit.
func (pp *poolProxy) fail(w http.ResponseWriter, out *http.Request, err error) {
	ex := exchangeOf(out)
	if ex == nil {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	if ex.kind == "" {
		ex.kind = pp.h.classify(err, ex)
	}
	status := http.StatusBadGateway
	switch ex.kind {
	case kindTimeout:
		status = http.StatusGatewayTimeout
	case kindBodyTooLarge:
		status = http.StatusRequestEntityTooLarge
		pp.h.m.tooLarge.Inc()
	case kindQueueTimeout:
		status = http.StatusServiceUnavailable
	case kindCanceled:
		// Nobody reads the answer; the status is for the access log,
		// as nginx logs it.
		status = statusClientClosed
	}
	attrs := []slog.Attr{slog.String("upstream_error", ex.kind)}
	if ex.up != nil {
		attrs = append(attrs, slog.String("upstream", ex.up.name))
	}
	fileserver.AddAccessLogAttrs(w, attrs...)
	if ex.kind != kindCanceled {
		pp.h.log.Debug("proxy: upstream exchange failed", "upstream", upName(ex.up), "kind", ex.kind, "err", err)
	}
	http.Error(w, http.StatusText(status), status)
}

// statusClientClosed is nginx's code for a request whose client went away
// before the answer.
const statusClientClosed = 499

func upName(u *upstream) string {
	if u == nil {
		return ""
	}
	return u.name
}

// classify returns the kind of an upstream exchange's failure.
func (h *Handler) classify(err error, ex *exchange) string {
	var de *dialError
	var ne interface{ Timeout() bool }
	switch {
	case ex.body != nil && ex.body.tooLarge.Load():
		return kindBodyTooLarge
	case ex.in.Context().Err() != nil:
		return kindCanceled
	case errors.Is(err, errQueueTimeout):
		return kindQueueTimeout
	case errors.As(err, &de):
		switch {
		case errors.As(de.err, &ne) && ne.Timeout(), errors.Is(de.err, context.DeadlineExceeded):
			return kindConnectTimeout
		case de.tls:
			return kindTLS
		case isRefused(de.err):
			return kindRefused
		}
		return kindUnreachable
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return kindTimeout
	}
	return kindBroken
}
