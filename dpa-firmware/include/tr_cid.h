/* Authenticated QUIC-LB connection IDs: portable C for the XDP program,
 * the sk_reuseport program and the BlueField-3 DPA. Bit-for-bit identical
 * to the Go package quiclb; docs/cid.md is the normative description.
 *
 * An ID of len bytes:
 *   octet 0          config rotation (3 bits) | len - 1 (5 bits)
 *   1 .. off-1       host ID
 *   off              worker index
 *   off+1 .. len-5   nonce
 *   len-4 .. len-1   MAC: the low 32 bits of SipHash-2-4(key, octets
 *                    0 .. len-5), least significant byte first
 *
 * Header-only and libc-free like tr_fastpath.h, whose SipHash it uses:
 * every loop has a constant trip count. */
#ifndef TR_CID_H
#define TR_CID_H

#include "tr_fastpath.h"

#define TR_CID_MAC_LEN 4
/* Shortest ID: first octet, worker, 4-byte nonce; with the MAC. */
#define TR_CID_MIN_PLAIN_LEN (1 + 1 + 4)
#define TR_CID_MIN_LEN (TR_CID_MIN_PLAIN_LEN + TR_CID_MAC_LEN)

/* The codec of quiclb.Codec as the data planes need it. len == 0 turns
 * MAC checking off (IDs are then looked up in the Bloom cache only). */
struct tr_cid_cfg {
	struct tr_fp_key key; /* MAC key, tr_fp_key_from_bytes order */
	tr_u32 len;           /* ID length, TR_CID_MIN_LEN..TR_FP_CID_MAX, or 0 */
	tr_u32 config_id;     /* config rotation codepoint, 0..6 */
	tr_u32 worker_off;    /* offset of the worker octet, 1..len-9 */
	tr_u32 reserved;      /* zero */
};

/* The first octet of every ID of the configuration. */
TR_FP_INLINE tr_u8 tr_cid_first_octet(const struct tr_cid_cfg *c)
{
	return (tr_u8)(((c->config_id & 7) << 5) | ((c->len - 1) & 0x1f));
}

/* 1 when cid (TR_FP_CID_MAX readable bytes, e.g. a zero-padded copy of
 * the DCID) starts with an ID of the configuration whose MAC verifies. */
TR_FP_INLINE int tr_cid_verify(const struct tr_cid_cfg *c, const tr_u8 *cid)
{
	tr_u32 n = c->len, m;
	tr_u64 h;

	if (n < TR_CID_MIN_LEN || n > TR_FP_CID_MAX)
		return 0;
	if (cid[0] != tr_cid_first_octet(c))
		return 0;
	h = tr_fp_siphash24(&c->key, cid, n - TR_CID_MAC_LEN);
	m = (tr_u32)cid[n - 4] | (tr_u32)cid[n - 3] << 8 | (tr_u32)cid[n - 2] << 16 |
	    (tr_u32)cid[n - 1] << 24;
	return m == (tr_u32)h;
}

/* The worker index of an ID of the configuration; -1 when the
 * configuration has no worker octet followed by a nonce inside the ID. */
TR_FP_INLINE int tr_cid_worker(const struct tr_cid_cfg *c, const tr_u8 *cid)
{
	tr_u32 off = c->worker_off;

	if (off < 1 || off >= TR_FP_CID_MAX || off + 1 + 4 > c->len)
		return -1;
	return cid[off];
}

#endif /* TR_CID_H */
