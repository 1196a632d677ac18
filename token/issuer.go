package token

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// tidLifetimeMs bounds how long an Issuer keeps one TID (docs/design.md: roll
// at least every second).
const tidLifetimeMs = 1000

var (
	errBadSource  = errors.New("token: source must be host or agent")
	errBadType    = errors.New("token: type must be retry or new_token")
	errBadTime    = errors.New("token: issue time before 1970")
	errCIDsForNew = errors.New("token: a new_token token carries no connection IDs")
)

// Issuer mints tokens for one source. It reuses one TID for many tokens,
// with R counting up from a random start, and rolls to a fresh TID when the
// epoch changes, after one second, or before R would repeat; so the HKDF
// and AES key setup cost is paid about once per second.
//
// An Issuer is not safe for concurrent use: give each goroutine its own,
// made from a shared KeyRing. Issuers never share a TID except by a chance
// collision of the random 32-bit TR, and then the random R start and the
// millisecond T in the nonce keep (T, R) pairs from coinciding.
type Issuer struct {
	ring   *KeyRing
	source Source
	mac    *tidMAC

	has     bool
	epoch   uint64
	tid     [TIDLen]byte
	keys    tokenKeys
	startMs int64
	r0      uint32
	n       uint64 // tokens issued under tid
	maxN    uint64 // roll before n reaches this: 2^32, so R never repeats

	// Scratch, kept here so nothing escapes to the heap per token.
	hdr   [HeaderLen]byte
	nonce [12]byte
	pl    [MaxPayloadLen]byte
	rnd   [8]byte
}

// NewIssuer returns an Issuer that marks its tokens with source src.
func (kr *KeyRing) NewIssuer(src Source) (*Issuer, error) {
	if !src.valid() {
		return nil, errBadSource
	}
	mac, err := newTIDMAC()
	if err != nil {
		return nil, err
	}
	return &Issuer{ring: kr, source: src, mac: mac, maxN: 1 << 32}, nil
}

// AppendRetry appends a retry token for a client at addr, binding the
// original DCID and the Retry packet's SCID, and returns the extended
// slice. It does not allocate when dst has MaxTokenLen bytes to spare.
func (is *Issuer) AppendRetry(dst []byte, client netip.AddrPort, odcid, rscid []byte, now time.Time) ([]byte, error) {
	return is.issue(dst, TypeRetry, client, odcid, rscid, now)
}

// AppendNewToken appends a new_token token (for a NEW_TOKEN frame) for a
// client at addr.
func (is *Issuer) AppendNewToken(dst []byte, client netip.Addr, now time.Time) ([]byte, error) {
	return is.issue(dst, TypeNewToken, netip.AddrPortFrom(client, 0), nil, nil, now)
}

func (is *Issuer) issue(dst []byte, typ Type, client netip.AddrPort, odcid, rscid []byte, now time.Time) ([]byte, error) {
	nowMs := now.UnixMilli()
	if nowMs < 0 {
		return dst, errBadTime
	}
	pl, err := appendPayload(is.pl[:0], typ, client, odcid, rscid)
	if err != nil {
		return dst, err
	}
	e := is.ring.epochOfMs(nowMs)
	if !is.has || e != is.epoch || nowMs-is.startMs >= tidLifetimeMs || nowMs < is.startMs || is.n >= is.maxN {
		if err := is.roll(e, nowMs); err != nil {
			return dst, err
		}
	}
	h := header{source: is.source, typ: typ, keyID: KeyID(e), tid: is.tid, t: uint64(nowMs), r: is.r0 + uint32(is.n)}
	is.n++
	return seal(dst, &is.hdr, &is.nonce, &h, &is.keys, pl), nil
}

// roll starts a new TID in epoch e.
func (is *Issuer) roll(e uint64, nowMs int64) error {
	ek, err := is.ring.keys(e)
	if err != nil {
		return err
	}
	if _, err := rand.Read(is.rnd[:]); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	var tid [TIDLen]byte
	copy(tid[:4], is.rnd[:4])
	tm := is.mac.compute(ek, tid[:4])
	copy(tid[4:], tm[:])
	keys, err := deriveTokenKeys(ek.psk[:], tid[:])
	if err != nil {
		return err
	}
	is.has, is.epoch, is.tid, is.keys, is.startMs = true, e, tid, keys, nowMs
	is.r0 = uint32(is.rnd[4])<<24 | uint32(is.rnd[5])<<16 | uint32(is.rnd[6])<<8 | uint32(is.rnd[7])
	is.n = 0
	return nil
}

// seal writes header || AES-GCM(payload) onto dst.
func seal(dst []byte, hdr *[HeaderLen]byte, n *[12]byte, h *header, k *tokenKeys, pl []byte) []byte {
	putHeader(hdr, h)
	nonce(n, &k.nBase, hdr[9:])
	dst = append(dst, hdr[:]...)
	return k.aead.Seal(dst, n[:], pl, hdr[:])
}

// MintParams fixes every input of a token, for reproducible tokens.
type MintParams struct {
	Source Source
	Type   Type
	TimeMs int64   // T, milliseconds since the Unix epoch; also selects the epoch
	TR     [4]byte // random half of the TID; TM is computed
	R      uint32
	Client netip.AddrPort // the port is ignored for new_token
	ODCID  []byte         // retry only
	RSCID  []byte         // retry only
}

// Mint appends the token that p describes. Unlike an Issuer it derives the
// keys every time; use it for tests and tools, not per packet.
func (kr *KeyRing) Mint(dst []byte, p MintParams) ([]byte, error) {
	if !p.Source.valid() {
		return dst, errBadSource
	}
	if !p.Type.valid() {
		return dst, errBadType
	}
	if p.TimeMs < 0 {
		return dst, errBadTime
	}
	if p.Type == TypeNewToken && (len(p.ODCID) > 0 || len(p.RSCID) > 0) {
		return dst, errCIDsForNew
	}
	var pbuf [MaxPayloadLen]byte
	pl, err := appendPayload(pbuf[:0], p.Type, p.Client, p.ODCID, p.RSCID)
	if err != nil {
		return dst, err
	}
	e := kr.epochOfMs(p.TimeMs)
	ek, err := kr.keys(e)
	if err != nil {
		return dst, err
	}
	mac, err := newTIDMAC()
	if err != nil {
		return dst, err
	}
	h := header{source: p.Source, typ: p.Type, keyID: KeyID(e), t: uint64(p.TimeMs), r: p.R}
	copy(h.tid[:4], p.TR[:])
	tm := mac.compute(ek, p.TR[:])
	copy(h.tid[4:], tm[:])
	keys, err := deriveTokenKeys(ek.psk[:], h.tid[:])
	if err != nil {
		return dst, err
	}
	var hdr [HeaderLen]byte
	var n [12]byte
	return seal(dst, &hdr, &n, &h, &keys, pl), nil
}
