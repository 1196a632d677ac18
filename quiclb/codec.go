package quiclb

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/turboretry/turboretry/internal/siphash"
	"github.com/turboretry/turboretry/token"
)

// MACLen is the length of the MAC at the end of an authenticated ID: 32
// bits, so a random ID verifies with probability 2^-32.
const MACLen = 4

// DefaultNonceLen is the nonce length when Config.NonceLen is 0: the
// draft's minimum. With the default empty host ID and a MAC that makes IDs
// of 10 bytes (see Codec.Len and docs/cid.md for the trade-off).
const DefaultNonceLen = MinNonceLen

// MaxWorkers is the number of worker indices an ID holds: the low 7 bits
// of the worker octet. Its high bit is the generation (Generations).
const MaxWorkers = 128

// Generations is the number of server generations the IDs tell apart: the
// high bit of the worker octet. A restarted server issues the other
// generation's IDs, so that the steering program sends the packets of the
// old process's connections to the old process and those of the new one's
// to the new one while both run (docs/operations.md).
const Generations = 2

// generationBit is the generation's bit in the worker octet.
const generationBit = 0x80

// Key is the 128-bit SipHash-2-4 key of the MAC: k0 is bytes 0..7 read
// little-endian, k1 bytes 8..15, as for the fast-path cache.
type Key [16]byte

// keyLabel is the HKDF-Expand-Label label of the MAC key.
const keyLabel = "quic-lb cid mac"

// KeyFromRing derives the MAC key from the deployment's root secret:
// HKDF-Expand-Label(root, "quic-lb cid mac", "", 16) with SHA-256. Every
// server, agent and fast path sharing the root secret verifies every
// other's IDs.
func KeyFromRing(kr *token.KeyRing) Key {
	var k Key
	copy(k[:], kr.ExpandRoot(keyLabel, len(k)))
	return k
}

// Config describes a server's connection IDs.
type Config struct {
	// ConfigID is the config rotation codepoint, 0..6.
	ConfigID uint8
	// HostID is this server's part of the QUIC-LB server ID, 0 to 13
	// bytes; the worker index octet follows it. A QUIC-LB load balancer is
	// configured with a server ID length of len(HostID)+1 and gives a host
	// of W workers the W server IDs HostID||0 .. HostID||W-1.
	HostID []byte
	// NonceLen is the nonce length, at least MinNonceLen; 0 means
	// DefaultNonceLen.
	NonceLen int
	// MACKey, when set, appends a MACLen-byte MAC keyed with it
	// (KeyFromRing) that the fast path verifies; nil makes plain QUIC-LB
	// IDs, which the fast path must look up in its cache instead.
	MACKey *Key
}

// Codec makes and verifies the IDs of one Config. It is immutable and safe
// for concurrent use.
type Codec struct {
	configID uint8
	hostID   []byte
	nonceLen int
	mac      bool
	key      Key
	k0, k1   uint64
	n        int // ID length
}

// NewCodec validates cfg and returns its Codec.
func NewCodec(cfg Config) (*Codec, error) {
	c := &Codec{configID: cfg.ConfigID, hostID: append([]byte(nil), cfg.HostID...), nonceLen: cfg.NonceLen, mac: cfg.MACKey != nil}
	if c.nonceLen == 0 {
		c.nonceLen = DefaultNonceLen
	}
	if c.mac {
		c.key = *cfg.MACKey
		c.k0, c.k1 = siphash.KeyWords((*[16]byte)(&c.key))
	}
	c.n = 1 + len(c.hostID) + 1 + c.nonceLen
	if c.mac {
		c.n += MACLen
	}
	switch {
	case c.configID >= UnroutableConfigID:
		return nil, fmt.Errorf("%w: %d, want 0..6", ErrConfigID, c.configID)
	case c.nonceLen < MinNonceLen:
		return nil, fmt.Errorf("%w: nonce of %d bytes, want at least %d", ErrLength, c.nonceLen, MinNonceLen)
	case c.n > MaxLen: // then server ID and nonce are at most MaxPlaintextLen
		return nil, fmt.Errorf("%w: host ID %d + worker 1 + nonce %d (+ MAC %d) make %d bytes, more than %d",
			ErrLength, len(c.hostID), c.nonceLen, MACLen*btoi(c.mac), c.n, MaxLen)
	}
	return c, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Len returns the length of the IDs: 1 + len(HostID) + 1 + NonceLen, plus
// MACLen with a MAC.
func (c *Codec) Len() int { return c.n }

// ConfigID returns the config rotation codepoint.
func (c *Codec) ConfigID() uint8 { return c.configID }

// ServerIDLen returns the QUIC-LB server ID length a load balancer is
// configured with: the host ID and the worker octet.
func (c *Codec) ServerIDLen() int { return len(c.hostID) + 1 }

// WorkerOffset returns the offset of the worker index octet in an ID.
func (c *Codec) WorkerOffset() int { return 1 + len(c.hostID) }

// HasMAC reports whether the IDs carry a MAC.
func (c *Codec) HasMAC() bool { return c.mac }

// MACKey returns the MAC key, for a loader that hands it to a data plane
// (the XDP program, the DPA); ok is false without a MAC.
func (c *Codec) MACKey() (key Key, ok bool) { return c.key, c.mac }

// macInput is the part of an ID the MAC covers: everything before it.
func (c *Codec) macInput(cid []byte) []byte { return cid[:c.n-MACLen] }

// sum is the MAC of an ID's first n-MACLen bytes: the low 32 bits of the
// SipHash-2-4, stored least significant byte first.
func (c *Codec) sum(cid []byte) [MACLen]byte {
	var m [MACLen]byte
	binary.LittleEndian.PutUint32(m[:], uint32(siphash.Sum64(c.k0, c.k1, c.macInput(cid))))
	return m
}

// Put writes an ID of generation 0 for worker into cid, which must be Len
// bytes long, with a fresh random nonce.
func (c *Codec) Put(cid []byte, worker int) error { return c.PutGeneration(cid, 0, worker) }

// PutGeneration is Put for an ID of generation (0..Generations-1).
func (c *Codec) PutGeneration(cid []byte, generation, worker int) error {
	if len(cid) != c.n {
		return fmt.Errorf("%w: buffer of %d bytes, want %d", ErrLength, len(cid), c.n)
	}
	octet, err := workerOctet(generation, worker)
	if err != nil {
		return err
	}
	off := c.WorkerOffset()
	if _, err := rand.Read(cid[off+1 : off+1+c.nonceLen]); err != nil {
		return err
	}
	c.seal(cid, octet)
	return nil
}

// workerOctet is the worker octet of generation's worker.
func workerOctet(generation, worker int) (byte, error) {
	if worker < 0 || worker >= MaxWorkers {
		return 0, fmt.Errorf("quiclb: worker index %d outside 0..%d", worker, MaxWorkers-1)
	}
	if generation < 0 || generation >= Generations {
		return 0, fmt.Errorf("quiclb: generation %d outside 0..%d", generation, Generations-1)
	}
	return byte(generation<<7 | worker), nil
}

// NonceOffset returns the offset of the nonce in an ID.
func (c *Codec) NonceOffset() int { return c.WorkerOffset() + 1 }

// NonceLen returns the nonce length.
func (c *Codec) NonceLen() int { return c.nonceLen }

// Seal completes an ID around a nonce the caller wrote into cid (Len
// bytes) at NonceOffset: first octet, host ID, worker octet (generation 0)
// and MAC. It is Put for a caller with a random source of its own (the
// Retry agent's ChaCha8); the nonce must be unpredictable and never repeat.
func (c *Codec) Seal(cid []byte, worker int) error {
	if len(cid) != c.n {
		return fmt.Errorf("%w: buffer of %d bytes, want %d", ErrLength, len(cid), c.n)
	}
	octet, err := workerOctet(0, worker)
	if err != nil {
		return err
	}
	c.seal(cid, octet)
	return nil
}

// seal fills in everything of cid but the nonce.
func (c *Codec) seal(cid []byte, octet byte) {
	cid[0] = FirstOctet(c.configID, c.n)
	copy(cid[1:], c.hostID)
	cid[c.WorkerOffset()] = octet
	if c.mac {
		m := c.sum(cid)
		copy(cid[c.n-MACLen:], m[:])
	}
}

// Append appends an ID of generation 0 for worker with a fresh random nonce.
func (c *Codec) Append(dst []byte, worker int) ([]byte, error) {
	return c.AppendGeneration(dst, 0, worker)
}

// AppendGeneration is Append for an ID of generation.
func (c *Codec) AppendGeneration(dst []byte, generation, worker int) ([]byte, error) {
	var b [MaxLen]byte
	if err := c.PutGeneration(b[:c.n], generation, worker); err != nil {
		return dst, err
	}
	return append(dst, b[:c.n]...), nil
}

// ID is a parsed connection ID; its slices alias the ID.
type ID struct {
	ConfigID uint8
	// ServerID is the QUIC-LB server ID: host ID and worker octet.
	ServerID []byte
	// Worker is the worker index (the octet's low 7 bits), Generation
	// the server generation (its high bit).
	Worker, Generation int
	Nonce              []byte
}

// Parse checks that cid is one of the codec's IDs, MAC included, and
// splits it. It does not compare the host ID: every server of a fleet
// sharing the MAC key accepts the others' IDs.
func (c *Codec) Parse(cid []byte) (ID, error) {
	if len(cid) != c.n {
		return ID{}, fmt.Errorf("%w: %d bytes, want %d", ErrLength, len(cid), c.n)
	}
	if cid[0] != FirstOctet(c.configID, c.n) {
		if cid[0]>>5 != c.configID {
			return ID{}, fmt.Errorf("%w: %d, want %d", ErrConfigID, cid[0]>>5, c.configID)
		}
		return ID{}, fmt.Errorf("%w: first octet says %d bytes, want %d", ErrLength, int(cid[0]&0x1f)+1, c.n)
	}
	if c.mac {
		if m := c.sum(cid); string(m[:]) != string(cid[c.n-MACLen:]) {
			return ID{}, ErrMAC
		}
	}
	off := c.WorkerOffset()
	return ID{ConfigID: c.configID, ServerID: cid[1 : off+1], Worker: int(cid[off] &^ generationBit),
		Generation: int(cid[off] >> 7), Nonce: cid[off+1 : off+1+c.nonceLen]}, nil
}

// Worker returns the worker index of one of the codec's IDs, of either
// generation; ok is false when cid is not one (another length or
// configuration, or a MAC that does not verify). It does not allocate.
func (c *Codec) Worker(cid []byte) (worker int, ok bool) {
	octet, ok := c.WorkerOctet(cid)
	return int(octet &^ generationBit), ok
}

// WorkerOctet returns the worker octet of one of the codec's IDs, the
// generation in its high bit and the worker index in the rest; ok as for
// Worker. It does not allocate.
func (c *Codec) WorkerOctet(cid []byte) (octet byte, ok bool) {
	if len(cid) != c.n || cid[0] != FirstOctet(c.configID, c.n) {
		return 0, false
	}
	if c.mac {
		if m := c.sum(cid); string(m[:]) != string(cid[c.n-MACLen:]) {
			return 0, false
		}
	}
	return cid[c.WorkerOffset()], true
}

// Verify reports whether cid is one of the codec's IDs with a valid MAC:
// what the fast path checks. Without a MAC it is always false.
func (c *Codec) Verify(cid []byte) bool {
	if !c.mac {
		return false
	}
	_, ok := c.Worker(cid)
	return ok
}
