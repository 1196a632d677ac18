package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/turboretry/turboretry/app/fileserver"
)

// byteSize is a flag value in bytes: a whole number with an optional
// suffix KiB, MiB or GiB (powers of 1024).
type byteSize uint64

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}}

// parseByteSize parses "16MiB", "64KiB", "4096".
func parseByteSize(s string) (uint64, error) {
	num, shift := s, uint(0)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want a whole number of bytes, optionally with KiB, MiB or GiB", s)
	}
	if v > math.MaxUint64>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return v << shift, nil
}

// String formats the size with the largest unit that divides it.
func (b *byteSize) String() string {
	v := uint64(*b)
	for _, u := range sizeUnits {
		if v != 0 && v%(1<<u.shift) == 0 {
			return strconv.FormatUint(v>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatUint(v, 10)
}

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

// sizeFlag registers a byteSize flag.
func sizeFlag(fs *flag.FlagSet, name string, def uint64, usage string) *byteSize {
	b := byteSize(def)
	fs.Var(&b, name, usage)
	return &b
}

// limitFlags registers serve's limit flags, with fileserver.DefaultLimits
// as their defaults, and returns a function that reads them back once the
// flags are parsed.
func limitFlags(fs *flag.FlagSet) func() (fileserver.Limits, error) {
	d := fileserver.DefaultLimits()
	maxConns := fs.Int("max-conns", d.MaxConnections, "most QUIC connections at once; past it new ones are refused (CONNECTION_REFUSED) before any state exists; 0: no limit")
	maxHandshakes := fs.Int("max-handshakes", d.MaxHandshakes, "most QUIC handshakes in progress at once; past it new connections are refused; 0: no limit")
	backlog := fs.Int("accept-backlog", d.AcceptBacklog, "QUIC connections waiting for the HTTP/3 server; while full, new ones are refused before their handshake")
	streams := fs.Int("max-streams", d.MaxStreams, "concurrent requests (bidirectional streams) per QUIC connection")
	uniStreams := fs.Int("max-uni-streams", d.MaxUniStreams, "unidirectional streams a client may open per connection (HTTP/3 needs 3)")
	handshakeTimeout := fs.Duration("handshake-timeout", d.HandshakeTimeout, "time a QUIC handshake may take")
	idleTimeout := fs.Duration("idle-timeout", d.IdleTimeout, "an established QUIC connection that hears nothing for this long ends (the max_idle_timeout announced; the peer's, when smaller, applies)")
	connSend := sizeFlag(fs, "conn-send-buffer", d.ConnSendBuffer, "one connection holds at most `SIZE` of response data unacknowledged; a handler's write waits past it")
	send := sizeFlag(fs, "send-buffer", d.SendBuffer, "all QUIC connections together hold at most `SIZE` of response data unacknowledged")
	recv := sizeFlag(fs, "recv-buffer", d.ReceiveBuffer, "while the QUIC connections hold more than `SIZE` of received, unread request data, no receive window grows")
	retryThreshold := fs.Int("retry-threshold", d.RetryThreshold, "--retry auto sends Retries while more connections than this are not address-validated")
	retryBudget := sizeFlag(fs, "retry-budget", uint64(d.UnvalidatedBudget), "--retry auto also sends Retries while connections not address-validated hold more than `SIZE` of memory")
	prefixAdmission := fs.Bool("prefix-admission", d.PrefixAdmission, "share the QUIC limits fairly between client source prefixes under pressure, rate limit new connections per prefix and keep part of the limits for returning clients (docs/abuse.md)")
	prefixLen4 := fs.Int("prefix-len4", d.PrefixLen4, "group IPv4 clients by this prefix length for --prefix-admission")
	prefixLen6 := fs.Int("prefix-len6", d.PrefixLen6, "group IPv6 clients by this prefix length for --prefix-admission")
	prefixRate := fs.Float64("prefix-rate", d.PrefixRate, "new QUIC connections per second one source prefix may open; past it they are refused (CONNECTION_REFUSED); 0: no limit")
	prefixBurst := fs.Int("prefix-burst", d.PrefixBurst, "new QUIC connections one source prefix may open at once before --prefix-rate applies; 0: twice the rate")
	returningReserve := fs.Float64("returning-reserve", d.ReturningReserve, "fraction of --max-conns and --max-handshakes kept for returning clients (a valid NEW_TOKEN token); 0: none")
	maxPrefixes := fs.Int("max-prefixes", d.MaxPrefixes, "most source prefixes --prefix-admission tracks at once (about 140 bytes each)")
	headerBytes := sizeFlag(fs, "max-header-bytes", uint64(d.MaxHeaderBytes), "largest request header section in `SIZE`, HTTP/3 and HTTPS; larger ones get 431")
	connHeader := sizeFlag(fs, "conn-header-bytes", uint64(d.ConnHeaderBytes), "header sections being read on one HTTP/3 connection hold at most `SIZE` at once; at least --max-header-bytes")
	headerTimeout := fs.Duration("header-timeout", d.HeaderTimeout, "time a client has to send a request's headers, HTTP/3 and HTTPS; 0: no limit")
	uniTimeout := fs.Duration("uni-stream-timeout", d.UniStreamTimeout, "time an HTTP/3 client has to name a unidirectional stream's type and send its SETTINGS; 0: no limit")
	stallTimeout := fs.Duration("write-stall-timeout", d.WriteStallTimeout, "time an HTTP/3 response write may wait for a client that does not read before the request is reset; 0: no limit")
	return func() (fileserver.Limits, error) {
		l := fileserver.Limits{
			MaxConnections:    *maxConns,
			MaxHandshakes:     *maxHandshakes,
			AcceptBacklog:     *backlog,
			MaxStreams:        *streams,
			MaxUniStreams:     *uniStreams,
			HandshakeTimeout:  *handshakeTimeout,
			IdleTimeout:       *idleTimeout,
			ConnSendBuffer:    uint64(*connSend),
			SendBuffer:        uint64(*send),
			ReceiveBuffer:     uint64(*recv),
			RetryThreshold:    *retryThreshold,
			UnvalidatedBudget: int64(min(uint64(*retryBudget), math.MaxInt64)),
			PrefixAdmission:   *prefixAdmission,
			PrefixLen4:        *prefixLen4,
			PrefixLen6:        *prefixLen6,
			PrefixRate:        *prefixRate,
			PrefixBurst:       *prefixBurst,
			ReturningReserve:  *returningReserve,
			MaxPrefixes:       *maxPrefixes,
			MaxHeaderBytes:    int(min(uint64(*headerBytes), math.MaxInt32)),
			ConnHeaderBytes:   int(min(uint64(*connHeader), math.MaxInt32)),
			HeaderTimeout:     *headerTimeout,
			UniStreamTimeout:  *uniTimeout,
			WriteStallTimeout: *stallTimeout,
		}
		if uint64(*headerBytes) > math.MaxInt32 || uint64(*connHeader) > math.MaxInt32 {
			return l, errors.New("header sizes above 2 GiB make no sense")
		}
		return l, l.Check()
	}
}
