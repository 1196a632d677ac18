package datapath

import "github.com/turboretry/turboretry/token"

// Admit inserts cid into the fast-path cache, so that packets carrying it
// as destination connection ID pass the program: the integrated mode's
// quic.Transport.ConnectionIDAdded hook, which hands over every connection
// ID the stack routes (handshake SCIDs and NEW_CONNECTION_ID IDs) without
// waiting for egress. Unlike ObserveEgress it admits while the agent is
// paused too, so connections made during a fail-open period still pass
// once filtering resumes. It fails (fastpath.ErrCIDLength) for a cid not
// of Config.CIDLen bytes; such IDs never appear in short headers. Safe
// for concurrent use.
//
// One of the server's authenticated IDs (Config.IDs with a MAC) needs no
// entry: the program passes it on its MAC, so Admit inserts nothing and
// returns nil (Verifies reports which).
func (d *Datapath) Admit(cid []byte) error {
	if d.Verifies(cid) {
		return nil
	}
	return d.prog.Cache().Insert(cid)
}

// Verifies reports whether cid is one of the server's IDs whose MAC the
// program verifies by itself (no cache entry needed).
func (d *Datapath) Verifies(cid []byte) bool {
	ids := d.prog.Config().IDs
	return ids != nil && ids.Verify(cid)
}

// SetKeyRing switches the agent to a new key ring (a reloaded root secret
// that the host switched to as well); its workers pick it up before their
// next datagram. The fast-path cache keeps its SipHash key, derived from
// the secret the datapath started with, so admitted connections keep
// passing; that key changes only with a restart. Safe for concurrent use.
func (d *Datapath) SetKeyRing(kr *token.KeyRing) error {
	return d.engine.SetKeyRing(kr)
}

// Admitted reports whether packets to cid pass now: its MAC verifies, or
// it is in the fast-path cache (a lookup as the program does it). For
// tests and diagnostics.
func (d *Datapath) Admitted(cid []byte) bool {
	return d.Verifies(cid) || d.prog.Cache().Lookup(cid)
}
