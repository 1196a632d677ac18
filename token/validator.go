package token

import (
	"math"
	"net/netip"
	"time"
)

// Defaults for ValidatorConfig (docs/design.md).
const (
	DefaultRetryMaxAge    = 10 * time.Second
	DefaultNewTokenMaxAge = 24 * time.Hour
	DefaultMaxFuture      = 2 * time.Second
)

// ValidatorConfig tunes a Validator; zero fields take the defaults.
type ValidatorConfig struct {
	RetryMaxAge    time.Duration // oldest acceptable retry token
	NewTokenMaxAge time.Duration // oldest acceptable new_token token
	MaxFuture      time.Duration // how far T may be ahead of now (clock skew)
	// Cache holds derived keys; validators may share one. Nil gives the
	// Validator a private cache of DefaultCacheEntries.
	Cache *KeyCache
}

// Result is what a Validator decoded from a token. Fields are filled as far
// as validation got: header fields once the length is right, Epoch once the
// key id resolved, the payload fields only for a token that decrypted.
type Result struct {
	Source Source
	Type   Type
	KeyID  uint8
	Epoch  uint64
	TID    [TIDLen]byte
	TimeMs uint64 // T: issue time, milliseconds since the Unix epoch
	R      uint32
	// Client is the address bound in the token; its port is 0 for
	// new_token tokens.
	Client netip.AddrPort
	// ODCID and RSCID (retry tokens) alias the caller's buffer. The host
	// must still check RSCID against the DCID of the Initial.
	ODCID []byte
	RSCID []byte
}

// Validator checks tokens in docs/design.md's order, cheapest check first, and
// counts results by reason. It is not safe for concurrent use: give each
// goroutine its own (they may share a KeyCache). A validation whose keys
// are cached does not allocate.
type Validator struct {
	ring       *KeyRing
	cache      *KeyCache
	mac        *tidMAC
	retryMaxMs int64
	newMaxMs   int64
	futureMs   int64
	nonce      [12]byte
	counts     [NumReasons]uint64
}

// NewValidator returns a Validator for tokens of this key ring.
func (kr *KeyRing) NewValidator(cfg ValidatorConfig) (*Validator, error) {
	mac, err := newTIDMAC()
	if err != nil {
		return nil, err
	}
	orDefault := func(d, def time.Duration) int64 {
		if d <= 0 {
			d = def
		}
		return d.Milliseconds()
	}
	v := &Validator{
		ring:       kr,
		cache:      cfg.Cache,
		mac:        mac,
		retryMaxMs: orDefault(cfg.RetryMaxAge, DefaultRetryMaxAge),
		newMaxMs:   orDefault(cfg.NewTokenMaxAge, DefaultNewTokenMaxAge),
		futureMs:   orDefault(cfg.MaxFuture, DefaultMaxFuture),
	}
	if v.cache == nil {
		v.cache = NewKeyCache(0)
	}
	return v, nil
}

// Validate checks tok, received from the client at from at time now. want
// is the type the caller expects, or TypeAny. The payload is decrypted into
// buf (give it MaxPayloadLen capacity to avoid an allocation; it must not
// overlap tok) and the CIDs in the Result alias it. A rejected token yields
// a *Error carrying its Reason, and as much of the Result as was decoded.
func (v *Validator) Validate(tok []byte, want Type, from netip.AddrPort, now time.Time, buf []byte) (Result, error) {
	return v.validate(tok, want, from, true, now, buf)
}

// Inspect is Validate without the address check, for diagnostics (the CLI)
// only: a token that passes Inspect may belong to another client.
func (v *Validator) Inspect(tok []byte, want Type, now time.Time, buf []byte) (Result, error) {
	return v.validate(tok, want, netip.AddrPort{}, false, now, buf)
}

// Counts returns how many tokens this Validator accepted (index
// ReasonNone) and rejected, by reason.
func (v *Validator) Counts() [NumReasons]uint64 { return v.counts }

func (v *Validator) reject(res Result, r Reason) (Result, error) {
	v.counts[r]++
	return res, rejectErrs[r]
}

func (v *Validator) validate(tok []byte, want Type, from netip.AddrPort, checkAddr bool, now time.Time, buf []byte) (Result, error) {
	var res Result
	if len(tok) < HeaderLen {
		return v.reject(res, ReasonMalformed)
	}
	h := parseHeader(tok)
	res.Source, res.Type, res.KeyID, res.TID, res.TimeMs, res.R = h.source, h.typ, h.keyID, h.tid, h.t, h.r
	if len(tok) < MinTokenLen || len(tok) > MaxTokenLen {
		return v.reject(res, ReasonMalformed)
	}
	if !h.source.valid() {
		return v.reject(res, ReasonUnknownSource)
	}
	if !h.typ.valid() {
		return v.reject(res, ReasonUnknownType)
	}
	if want != TypeAny && h.typ != want {
		return v.reject(res, ReasonWrongType)
	}

	nowMs := now.UnixMilli()
	epoch, ok := v.ring.resolve(h.keyID, nowMs)
	if !ok {
		return v.reject(res, ReasonUnknownKey)
	}
	ek, err := v.ring.keys(epoch)
	if err != nil {
		return v.reject(res, ReasonUnknownKey)
	}
	res.Epoch = epoch

	if !v.mac.check(ek, tok[1:1+TIDLen]) {
		return v.reject(res, ReasonBadTIDMAC)
	}

	maxAge := v.retryMaxMs
	if h.typ == TypeNewToken {
		maxAge = v.newMaxMs
	}
	if limit := nowMs + v.futureMs; limit < 0 || h.t > uint64(limit) || h.t > math.MaxInt64 {
		return v.reject(res, ReasonFromFuture)
	}
	if nowMs-int64(h.t) > maxAge {
		return v.reject(res, ReasonExpired)
	}

	keys, ok := v.cache.get(epoch, &h.tid)
	if !ok {
		if keys, err = deriveTokenKeys(ek.psk[:], tok[1:1+TIDLen]); err != nil {
			return v.reject(res, ReasonBadTag)
		}
		v.cache.put(epoch, &h.tid, keys)
	}

	nonce(&v.nonce, &keys.nBase, tok[9:HeaderLen])
	pt, err := keys.aead.Open(buf[:0], v.nonce[:], tok[HeaderLen:], tok[:HeaderLen])
	if err != nil {
		return v.reject(res, ReasonBadTag)
	}
	p, ok := parsePayload(pt, h.typ)
	if !ok {
		return v.reject(res, ReasonBadPayload)
	}
	res.Client = netip.AddrPortFrom(p.addr, p.port)
	res.ODCID, res.RSCID = p.odcid, p.rscid

	if checkAddr {
		if p.addr != from.Addr().Unmap().WithZone("") {
			return v.reject(res, ReasonAddrMismatch)
		}
		if h.typ == TypeRetry && p.port != from.Port() {
			return v.reject(res, ReasonPortMismatch)
		}
	}
	v.counts[ReasonNone]++
	return res, nil
}
