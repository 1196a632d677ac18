/* Per-packet verdict of the DPA fast path, portable C (no libc, no SDK):
 * it is what the FlexIO event handler calls for each received UDP payload,
 * and the host test exercises it with gcc.
 *
 * QUIC v1 (RFC 9000 section 17): a long header (first byte bit 0x80) is a
 * handshake packet and always goes to the Arm agent; a short header
 * (bit 0x80 clear, fixed bit 0x40 set) carries the DCID right after the
 * first byte, with the server's fixed CID length, and passes when it is
 * an authenticated server ID whose MAC verifies (tr_cid.h: no state), or
 * on a cache hit (IDs the MAC cannot cover). Everything else goes to the
 * agent, which never drops a benign packet by mistake. */
#ifndef TR_DPA_VERDICT_H
#define TR_DPA_VERDICT_H

#include "tr_cid.h"
#include "tr_fastpath.h"

enum tr_dpa_verdict {
	TR_DPA_TO_AGENT = 0, /* slow path: the Arm agent decides */
	TR_DPA_FAST = 1,     /* 1-RTT packet of a known connection: forward */
};

/* Device-side configuration, written once by the host through the init
 * RPC. Table and generation pointers are DPA addresses of memory the Arm
 * agent also maps (it rotates; the DPA never does). */
struct tr_dpa_cfg {
	tr_u64 *tables[2];
	const tr_u64 *gen;
	struct tr_fp_key key;
	tr_u32 cid_len; /* 1..TR_FP_CID_MAX */
	/* Authenticated IDs (cid.len == cid_len), or cid.len == 0: cache only. */
	struct tr_cid_cfg cid;
};

TR_FP_INLINE int tr_dpa_verdict(const struct tr_dpa_cfg *cfg, const tr_u8 *payload, tr_u32 len)
{
	tr_u8 cid[TR_FP_CID_MAX] = {0};
	tr_u32 i, n = cfg->cid_len;

	if (n < 1 || n > TR_FP_CID_MAX || len < 1 + n)
		return TR_DPA_TO_AGENT;
	if ((payload[0] & 0x80) || !(payload[0] & 0x40))
		return TR_DPA_TO_AGENT;
	for (i = 0; i < TR_FP_CID_MAX; i++) {
		if (i < n)
			cid[i] = payload[1 + i];
	}
	if (cfg->cid.len == n && tr_cid_verify(&cfg->cid, cid))
		return TR_DPA_FAST;
	return tr_fp_lookup_cid(cfg->tables[0], cfg->tables[1], cfg->gen, &cfg->key, cid, n)
		       ? TR_DPA_FAST
		       : TR_DPA_TO_AGENT;
}

#endif /* TR_DPA_VERDICT_H */
