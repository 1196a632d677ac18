package quic

import (
	"bytes"
	"crypto/rand"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/turboretry/turboretry/internal/stateless"
	"github.com/turboretry/turboretry/internal/wire"
	"github.com/turboretry/turboretry/token"
)

// tokenValidator is the host side of address validation: it checks the
// universal tokens of client Initials, consults the AddressPolicy, mints
// host retry tokens and NEW_TOKEN tokens. The receive goroutine and the
// connections (NEW_TOKEN) share it, hence the lock.
type tokenValidator struct {
	policy    AddressPolicy
	newTokens bool
	replay    *token.ReplayFilter // NEW_TOKEN tokens used so far
	m         *avMetrics
	s         *baseServer

	mu          sync.Mutex
	val         *token.Validator
	retryIssuer *token.Issuer
	newIssuer   *token.Issuer
	cfg         AddressValidationConfig // token lifetimes and rotation, for setSecret
	tok         [token.MaxTokenLen]byte

	// scratch holds *initialScratch: the policy's argument escapes (the
	// policy is a func value), so each decide borrows one instead of
	// allocating it. Pooled, not one per validator: the read loop and
	// Transport.InjectDatagram (the offload agent's goroutine) may decide
	// at the same time.
	scratch sync.Pool
}

// initialScratch is what one decide needs beyond the stack: the policy's
// argument and the token's payload, which the argument's token fields
// point into until the policy returned.
type initialScratch struct {
	info    InitialInfo
	payload [token.MaxPayloadLen]byte
	// remote is info.RemoteAddr, its IP in ip: the datagram's sender
	// came as a netip.AddrPort, and a fresh net.UDPAddr would allocate
	// twice per Initial.
	remote net.UDPAddr
	ip     [16]byte
}

// remoteAddr returns from as a *net.UDPAddr held in sc (valid until sc
// goes back to the pool).
func (sc *initialScratch) remoteAddr(from netip.AddrPort) *net.UDPAddr {
	a := from.Addr()
	var n int
	if a.Is4() {
		b := a.As4()
		n = copy(sc.ip[:], b[:])
	} else if a.IsValid() {
		b := a.As16()
		n = copy(sc.ip[:], b[:])
	}
	sc.remote = net.UDPAddr{IP: sc.ip[:n:n], Port: int(from.Port()), Zone: a.Zone()}
	return &sc.remote
}

func newTokenValidator(cfg *AddressValidationConfig, s *baseServer) (*tokenValidator, error) {
	secret := cfg.TokenSecret
	if secret == nil {
		var err error
		if secret, err = token.GenerateSecret(); err != nil {
			return nil, err
		}
	}
	kr, err := token.NewKeyRing(secret, cfg.TokenRotation)
	if err != nil {
		return nil, err
	}
	v := &tokenValidator{policy: cfg.Policy, newTokens: !cfg.DisableNewTokens, s: s, cfg: *cfg}
	if v.policy == nil {
		v.policy = AutoRetry(DefaultRetryThreshold)
	}
	if v.replay = cfg.NewTokenReplay; v.replay == nil {
		// Remember tokens as long as they validate: their lifetime plus
		// the validator's allowance for clock skew.
		maxAge := cfg.NewTokenMaxAge
		if maxAge <= 0 {
			maxAge = token.DefaultNewTokenMaxAge
		}
		if v.replay, err = token.NewReplayFilter(token.ReplayFilterConfig{Window: maxAge + token.DefaultMaxFuture}); err != nil {
			return nil, err
		}
	}
	if err := v.useKeyRing(kr); err != nil {
		return nil, err
	}
	v.m = newAVMetrics()
	return v, nil
}

// useKeyRing makes kr the source of the validator's and issuers' keys.
// Call it with v.mu held, or before v is shared.
func (v *tokenValidator) useKeyRing(kr *token.KeyRing) error {
	val, err := kr.NewValidator(token.ValidatorConfig{RetryMaxAge: v.cfg.RetryTokenMaxAge, NewTokenMaxAge: v.cfg.NewTokenMaxAge})
	if err != nil {
		return err
	}
	retryIssuer, err := kr.NewIssuer(token.SourceHost)
	if err != nil {
		return err
	}
	newIssuer, err := kr.NewIssuer(token.SourceHost)
	if err != nil {
		return err
	}
	v.val, v.retryIssuer, v.newIssuer = val, retryIssuer, newIssuer
	return nil
}

// setSecret switches to a new root secret: tokens issued under the old
// one are rejected from now on (bad TID MAC), as after an agent's key change.
func (v *tokenValidator) setSecret(secret []byte) error {
	kr, err := token.NewKeyRing(secret, v.cfg.TokenRotation)
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.useKeyRing(kr)
}

// addrPortOf returns the client's address in the form tokens bind.
func addrPortOf(remote net.Addr) netip.AddrPort {
	if ua, ok := remote.(*net.UDPAddr); ok {
		ap := ua.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if ap, err := netip.ParseAddrPort(remote.String()); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// decide is the address-validation verdict on a client Initial. A Retry
// decision's token and SCID are written into room.
// The sender is from, and remote when the socket gave a net.Addr
// (a PacketConn that is no *net.UDPConn), else nil.
func (v *tokenValidator) decide(hdr *wire.LongHeader, from netip.AddrPort, remote net.Addr, room *retryRoom) initialDecision {
	unvalidated, unvalidatedBytes := v.s.unvalidatedLoad()
	sc, _ := v.scratch.Get().(*initialScratch)
	if sc == nil {
		sc = new(initialScratch)
	}
	defer v.scratch.Put(sc)
	if remote == nil {
		remote = sc.remoteAddr(from)
	}
	sc.info = InitialInfo{
		RemoteAddr:         remote,
		RemoteAddrPort:     from,
		DestConnID:         hdr.DestConnID,
		SrcConnID:          hdr.SrcConnID,
		Version:            hdr.Version,
		HandshakesInFlight: unvalidated,
		UnvalidatedBytes:   unvalidatedBytes,
	}
	info := &sc.info
	now := time.Now()
	if len(hdr.Token) > 0 {
		v.mu.Lock()
		v.checkToken(hdr, from, now, &info.Token, sc.payload[:0])
		v.mu.Unlock()
	}
	// The policy is the application's: it runs without our lock (it may
	// call SetTokenSecret, say).
	app := appCalls{t: v.s.t}
	app.enter()
	d := v.policy(info)
	app.exit()
	tk := &info.Token
	switch {
	case d == AddressDrop:
		v.m.dropped.Inc()
		return initialDecision{action: initialDrop}
	case tk.Kind == TokenRetry && !tk.Valid:
		// RFC 9000 section 8.1.3: a bad retry token ends the attempt
		// (the server counts the close once the Initial decrypted).
		return initialDecision{action: initialInvalidToken}
	case tk.Valid && tk.Kind == TokenRetry:
		return initialDecision{
			action: initialAccept, validated: true, validatedBy: tk.Kind,
			odcid: bytes.Clone(tk.OriginalDestConnID), rscid: bytes.Clone(tk.RetrySourceConnID),
		}
	case !stateless.DCIDAcceptable(hdr, false):
		// Only a valid retry token vouches for a DCID under 8 bytes: the
		// server chose it (RFC 9000 section 7.2). The agent drops such an
		// Initial too.
		return initialDecision{action: initialDrop}
	case tk.Valid && d == AddressAccept:
		return initialDecision{action: initialAccept, validated: true, validatedBy: tk.Kind}
	case d == AddressAccept && tk.RejectReason != replayedLabel:
		return initialDecision{action: initialAccept}
	}
	// A Retry, with a fresh SCID that the token binds: for AddressRetry,
	// and for a replayed NEW_TOKEN token, whose sender may be replaying
	// another client's token; the Retry proves the address at the cost of
	// one round trip to a benign client.
	if !from.IsValid() || len(hdr.DestConnID) > token.MaxCIDLen {
		return initialDecision{action: initialDrop}
	}
	scid := v.s.t.appendConnID(room.scid[:0]) // the ConnectionIDGenerator's: without our lock
	if len(scid) == 0 {
		scid = make([]byte, defaultConnIDLength)
		_, _ = rand.Read(scid)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	tok, err := v.retryIssuer.AppendRetry(v.tok[:0], from, hdr.DestConnID, scid, now)
	if err != nil {
		return initialDecision{action: initialDrop}
	}
	v.m.retriesSent.Inc()
	// Copied out of v.tok, which the lock guards; issuing into room.token
	// directly would move room to the heap (sealing the token leaks dst).
	tok = append(room.token[:0], tok...)
	return initialDecision{action: initialRetry, retryToken: tok, retrySCID: scid}
}

// replayedLabel is TokenInfo.RejectReason for a replayed NEW_TOKEN token.
var replayedLabel = rejectLabel(token.ReasonReplayed)

// checkToken validates the Initial's token into ti and counts the result;
// ti's connection IDs point into payload's array. Call with v.mu held.
func (v *tokenValidator) checkToken(hdr *wire.LongHeader, from netip.AddrPort, now time.Time, ti *TokenInfo, payload []byte) {
	res, err := v.val.Validate(hdr.Token, token.TypeAny, from, now, payload)
	src := 0
	if res.Source == token.SourceHost || res.Source == token.SourceAgent {
		src = int(res.Source)
		ti.Source = res.Source.String()
	}
	switch res.Type {
	case token.TypeRetry:
		ti.Kind = TokenRetry
	case token.TypeNewToken:
		ti.Kind = TokenNewToken
	default:
		ti.Kind = TokenUnknown
	}
	if err != nil {
		r := token.ReasonOf(err)
		if r == token.ReasonNone {
			r = token.ReasonMalformed
		}
		v.m.rejected[src][r].Inc()
		ti.RejectReason = rejectLabel(r)
		return
	}
	if ti.Kind == TokenNewToken {
		// Single use (RFC 9000 section 8.1.4). Only Initials that would
		// open a connection get here, and the DCID rule lets the same
		// Initial through again: a client's retransmission, or the
		// Initial an offload agent checked and forwarded.
		if err := v.replay.Use(hdr.Token, hdr.DestConnID, now); err != nil {
			v.m.rejected[src][token.ReasonReplayed].Inc()
			ti.RejectReason = replayedLabel
			return
		}
	}
	if ti.Kind == TokenRetry {
		// The host cooperator checks what the token binds against the
		// packet: the Retry's SCID is the DCID the client now uses, and
		// the original DCID was long enough (RFC 9000 section 7.2).
		if !bytes.Equal(res.RSCID, hdr.DestConnID) || len(res.ODCID) < 8 {
			v.m.rscidMismatch[src].Inc()
			ti.RejectReason = "rscid_mismatch"
			return
		}
		ti.OriginalDestConnID = res.ODCID
		ti.RetrySourceConnID = res.RSCID
	}
	ti.Valid = true
	ti.IssuedAt = time.UnixMilli(int64(res.TimeMs))
	v.m.accepted[src][res.Type].Inc()
}

// mintNewToken returns a NEW_TOKEN token for a client at remote, or nil.
func (v *tokenValidator) mintNewToken(remote net.Addr) []byte {
	if !v.newTokens {
		return nil
	}
	ap := addrPortOf(remote)
	if !ap.IsValid() {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	tok, err := v.newIssuer.AppendNewToken(nil, ap.Addr(), time.Now())
	if err != nil {
		return nil
	}
	return tok
}
