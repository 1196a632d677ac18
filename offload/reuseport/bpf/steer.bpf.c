// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/* sk_reuseport steering of TurboRetry (docs/reuseport.md; Go loader:
 * offload/reuseport). Attached to a group of SO_REUSEPORT UDP sockets, one
 * per worker, it picks the worker socket for each datagram by its QUIC
 * destination connection ID. The sockets of two server generations (the
 * process before a restart and the one after it) can share the group:
 * socket slot gen << 7 | worker, the ID's worker octet (docs/cid.md).
 *   - a short header, or a long header whose DCID has the server's length,
 *     whose DCID is one of the server's IDs (tr_cid.h: first octet, and the
 *     MAC when configured) -> the generation and worker inside the ID,
 *     Initials too: a client that got our first Initial (an ACK of the
 *     first datagram of its two-datagram ClientHello, say) sends the rest
 *     of its handshake's Initials to our ID, and only the process that
 *     issued it holds that connection;
 *   - any other long header (a client-chosen DCID: first Initials, their
 *     retransmissions, 0-RTT) -> SipHash of the DCID modulo the current
 *     generation's workers, so all packets of one client DCID land
 *     together on the process that takes new connections;
 *   - anything else (not decodable, too short, no socket at that index) ->
 *     the kernel's default choice (the 4-tuple hash).
 * Each datagram bumps one per-CPU counter (enum tr_rp_reason).
 *
 * Self-contained like offload/xdp: no libbpf or kernel headers. */

#include "tr_cid.h"
#include "tr_fastpath.h"

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name

#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_REUSEPORT_SOCKARRAY 20

#define SK_DROP 0
#define SK_PASS 1

/* struct sk_reuseport_md of include/uapi/linux/bpf.h: pointers are padded
 * to 64 bits. Only len is read; ctx goes to the helpers. */
struct sk_reuseport_md {
	tr_u64 data;
	tr_u64 data_end;
	tr_u32 len; /* from the UDP header to the end of the datagram */
	tr_u32 eth_protocol;
	tr_u32 ip_protocol;
	tr_u32 bind_inany;
	tr_u32 hash;
};

/* Helper IDs from enum bpf_func_id. */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_skb_load_bytes)(const void *ctx, tr_u32 offset, void *to, tr_u32 len) = (void *)26;
static long (*bpf_sk_select_reuseport)(void *ctx, void *map, void *key, tr_u64 flags) = (void *)82;

/* --- Shared with Go (bpf2go generates the Go twins). --- */

enum tr_rp_reason {
	TR_RP_STEERED = 0,     /* to the worker in the server's DCID */
	TR_RP_HASHED = 1,      /* client-chosen long-header DCID: by its hash */
	TR_RP_UNDECODABLE = 2, /* short header not carrying a server ID: default */
	TR_RP_TRUNCATED = 3,   /* too short for a QUIC header, or not readable */
	TR_RP_NO_SOCKET = 4,   /* no socket at the chosen index: default */
	TR_RP_NREASONS = 5,
};

#define TR_RP_GENERATIONS 2
#define TR_RP_MAX_WORKERS 128 /* the worker octet's low 7 bits */

/* Written by the loader before attaching, and by a restarted server for
 * its generation before it switches tr_rp_gen to it. A generation with 0
 * workers has no sockets. */
struct tr_rp_config {
	struct tr_fp_key hash_key;             /* SipHash key of client-chosen DCIDs */
	struct tr_cid_cfg cid;                 /* the server's IDs; cid.len 0: none */
	tr_u32 workers[TR_RP_GENERATIONS];     /* sockets of each generation, 0..128 */
	tr_u32 check_mac;                      /* 1: cid carries a MAC that must verify */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, struct tr_rp_config);
} tr_rp_cfg SEC(".maps");

/* The generation that takes new connections: one word of its own, so that
 * the switch is a single aligned store that no reader sees torn. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, tr_u32);
} tr_rp_gen SEC(".maps");

/* Worker sockets by slot: generation << 7 | worker index. */
struct {
	__uint(type, BPF_MAP_TYPE_REUSEPORT_SOCKARRAY);
	__uint(max_entries, 256);
	__type(key, tr_u32);
	__type(value, tr_u64);
} tr_rp_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TR_RP_NREASONS);
	__type(key, enum tr_rp_reason);
	__type(value, tr_u64);
} tr_rp_counters SEC(".maps");

#define TR_UDP_HLEN 8
#define TR_LONG_HLEN 6 /* first byte, version, DCID length */
/* What is read of the UDP payload: a long header's first 6 bytes and a
 * DCID of at most TR_FP_CID_MAX; a short header needs 1 + TR_FP_CID_MAX. */
#define TR_RP_LONG_READ (TR_LONG_HLEN + TR_FP_CID_MAX)
#define TR_RP_SHORT_READ (1 + TR_FP_CID_MAX)

static __attribute__((always_inline)) int count(enum tr_rp_reason reason)
{
	tr_u64 *n = bpf_map_lookup_elem(&tr_rp_counters, &reason);

	if (n)
		*n += 1; /* per-CPU: no other writer */
	return SK_PASS;
}

/* The socket slot (the worker octet: generation and worker) of one of the
 * server's IDs, or -1. */
static __attribute__((always_inline)) int server_slot(const struct tr_rp_config *cfg, const tr_u8 *cid)
{
	int w;

	if (cfg->cid.len < TR_CID_MIN_PLAIN_LEN || cfg->cid.len > TR_FP_CID_MAX)
		return -1;
	if (cfg->check_mac) {
		if (!tr_cid_verify(&cfg->cid, cid))
			return -1;
	} else if (cid[0] != tr_cid_first_octet(&cfg->cid)) {
		return -1;
	}
	w = tr_cid_worker(&cfg->cid, cid);
	if (w < 0 || (tr_u32)(w & 0x7f) >= cfg->workers[(w >> 7) & 1])
		return -1;
	return w;
}

static __attribute__((always_inline)) int select_worker(struct sk_reuseport_md *ctx, tr_u32 index,
						     enum tr_rp_reason reason)
{
	if (bpf_sk_select_reuseport(ctx, &tr_rp_socks, &index, 0) != 0)
		return count(TR_RP_NO_SOCKET);
	return count(reason);
}

SEC("sk_reuseport")
int tr_steer(struct sk_reuseport_md *ctx)
{
	/* Zeroed and wider than any read: tr_fp_siphash24's variable-offset
	 * reads stay inside initialised stack (see offload/xdp). */
	tr_u8 b[TR_RP_LONG_READ + 8] = {0};
	const struct tr_rp_config *cfg;
	const tr_u32 *genp;
	tr_u32 zero = 0, plen, dlen, gen, workers;
	int w;

	cfg = bpf_map_lookup_elem(&tr_rp_cfg, &zero);
	genp = bpf_map_lookup_elem(&tr_rp_gen, &zero);
	if (!cfg || !genp)
		return count(TR_RP_NO_SOCKET);
	gen = *genp & 1;
	workers = cfg->workers[gen];
	if (workers < 1 || workers > TR_RP_MAX_WORKERS)
		return count(TR_RP_NO_SOCKET);
	if (ctx->len < TR_UDP_HLEN + TR_RP_SHORT_READ)
		return count(TR_RP_TRUNCATED);
	plen = ctx->len - TR_UDP_HLEN;
	if (plen >= TR_RP_LONG_READ) {
		if (bpf_skb_load_bytes(ctx, TR_UDP_HLEN, b, TR_RP_LONG_READ) != 0)
			return count(TR_RP_TRUNCATED);
	} else if (bpf_skb_load_bytes(ctx, TR_UDP_HLEN, b, TR_RP_SHORT_READ) != 0) {
		return count(TR_RP_TRUNCATED);
	}

	if (!(b[0] & 0x80)) {
		w = server_slot(cfg, b + 1);
		if (w < 0)
			return count(TR_RP_UNDECODABLE);
		return select_worker(ctx, (tr_u32)w, TR_RP_STEERED);
	}
	dlen = b[5];
	if (dlen > TR_FP_CID_MAX || plen < TR_LONG_HLEN + dlen || plen < TR_RP_LONG_READ)
		return count(TR_RP_TRUNCATED);
	if (dlen == cfg->cid.len) {
		w = server_slot(cfg, b + TR_LONG_HLEN);
		/* An Initial to the draining generation's ID goes there too: it
		 * may be the rest of a handshake in progress there (the current
		 * generation cannot decrypt it: the keys come from the client's
		 * first DCID). A client the draining process sent a Retry
		 * gets its connection there, served going away. */
		if (w >= 0)
			return select_worker(ctx, (tr_u32)w, TR_RP_STEERED);
	}
	/* A client-chosen DCID: a hash keeps an Initial's retransmissions and
	 * its 0-RTT packets on the worker that took the first one. */
	return select_worker(ctx, gen << 7 | (tr_u32)(tr_fp_siphash24(&cfg->hash_key, b + TR_LONG_HLEN, dlen) % workers),
			     TR_RP_HASHED);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
