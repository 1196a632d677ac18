// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/* XDP fast path of TurboRetry (docs/design.md, "Address validation architecture"
 * and "Fast-path connection cache"; Go loader: offload/xdp).
 *
 * For UDP datagrams to the server port, parsed from Ethernet + IPv4/IPv6:
 *   - QUIC v1 Initial (>= 1200 bytes of UDP payload) and long headers of
 *     any other version go to the agent's AF_XDP socket for the receive
 *     queue; without a socket they pass to the kernel stack (fail-open);
 *   - Handshake, 0-RTT and short-header packets pass when their DCID is an
 *     authenticated server ID whose MAC verifies (tr_cid.h; no state), or
 *     when it hits the connection cache of tr_fastpath.h (a PASSIVE hit
 *     re-inserts into ACTIVE);
 *   - everything else on the port is dropped.
 * With a prefix rate configured, an Initial carrying a token from a source
 * prefix whose bucket is empty (tr_prefixes, written by the agent, which
 * alone validates tokens and takes them) is dropped, or left to the agent
 * to refuse (the program cannot build the encrypted close), unless it
 * belongs to a connection attempt that took its token already
 * (tr_attempts, also the agent's).
 * Each packet bumps one per-CPU counter (enum tr_xdp_reason). Other
 * traffic, IPv4 fragments and IPv6 packets with extension headers pass
 * untouched. When the agent's heartbeat is unset or older than the
 * configured bound, everything passes (fail-open).
 *
 * Self-contained on purpose: no libbpf or kernel headers, so the object
 * builds from this file and dpa-firmware/include alone, on any host. */

#include "tr_cid.h"
#include "tr_fastpath.h"

/* --- The few kernel ABI constants used (include/uapi/linux/bpf.h). --- */
#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name

#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_XSKMAP 17
#define BPF_F_MMAPABLE (1U << 10)

#define XDP_DROP 1
#define XDP_PASS 2
#define XDP_REDIRECT 4

struct xdp_md {
	tr_u32 data;
	tr_u32 data_end;
	tr_u32 data_meta;
	tr_u32 ingress_ifindex;
	tr_u32 rx_queue_index;
	tr_u32 egress_ifindex;
};

/* Helper IDs from enum bpf_func_id. */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static tr_u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_redirect_map)(void *map, tr_u64 key, tr_u64 flags) = (void *)51;

/* --- Shared with Go (bpf2go generates the Go twins of these types). --- */

/* Why a packet got its verdict: the index into tr_counters. */
enum tr_xdp_reason {
	TR_XDP_PASS_OTHER = 0,        /* not UDP to the server port: untouched */
	TR_XDP_PASS_UNPARSED = 1,     /* IPv4 fragment, IPv6 extension header */
	TR_XDP_PASS_FAIL_OPEN = 2,    /* heartbeat stale/unset, config missing */
	TR_XDP_PASS_HIT = 3,          /* DCID in the cache */
	TR_XDP_AGENT_INITIAL = 4,     /* Initial redirected to the agent */
	TR_XDP_AGENT_VERSION = 5,     /* other version redirected to the agent */
	TR_XDP_PASS_NO_SOCKET = 6,    /* for the agent, but no AF_XDP socket */
	TR_XDP_DROP_MISS = 7,         /* DCID not in the cache */
	TR_XDP_DROP_CID_LEN = 8,      /* long-header DCID shorter than cid_len */
	TR_XDP_DROP_SMALL_INITIAL = 9, /* Initial in < 1200 bytes (RFC 9000 14.1) */
	TR_XDP_DROP_MALFORMED = 10,   /* too short to be QUIC, bad UDP length */
	TR_XDP_DROP_UNEXPECTED = 11,  /* Retry or Version Negotiation to a server */
	TR_XDP_PASS_MAC = 12,         /* DCID an authenticated server ID */
	TR_XDP_DROP_PREFIX_RATE = 13, /* Initial with a token, prefix over its rate */
	TR_XDP_AGENT_PREFIX_RATE = 14, /* the same, to the agent to refuse */
	TR_XDP_NREASONS = 15,
};

/* Written by the loader before attaching; all zero means "pass all". */
struct tr_xdp_config {
	tr_u64 k0;       /* SipHash key, tr_fp_key_from_bytes order */
	tr_u64 k1;
	tr_u64 stale_ns; /* heartbeat older than this: fail-open */
	tr_u32 cid_len;  /* server's fixed CID length, 1..TR_FP_CID_MAX */
	tr_u32 port;     /* server UDP port, host byte order; 0: pass all */
	/* Authenticated server IDs; cid.len == 0 (or != cid_len): cache only. */
	struct tr_cid_cfg cid;
	/* Prefix rate (offload/prefixrate): a bucket refills one token per
	 * interval and holds tolerance/interval + 1; 0 interval: no limit. */
	tr_u64 prefix_interval_ns;
	tr_u64 prefix_tolerance_ns;
	tr_u32 prefix_len4; /* 1..32 */
	tr_u32 prefix_len6; /* 1..128 */
	tr_u32 prefix_drop; /* 1: drop over-rate Initials; 0: to the agent */
	tr_u32 prefix_pad;
};

/* A source prefix: the address masked to its prefix length. */
struct tr_prefix_key {
	tr_u32 family; /* 4 or 6 */
	tr_u8 addr[16];
};

/* A connection attempt the agent admitted (it took its prefix's token):
 * the source prefix and the DCID of its first Initial, zero-padded. */
struct tr_attempt_key {
	struct tr_prefix_key prefix;
	tr_u32 dcid_len;
	tr_u8 dcid[TR_FP_CID_MAX];
};

/* One Bloom table, the value of one tr_fp_tables entry. */
struct tr_xdp_table {
	tr_u64 words[TR_FP_WORDS];
};

/* Entry 0 is table 0, entry 1 table 1; mmapable, so the agent runs
 * fastpath.NewShared over exactly these words. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, tr_u32);
	__type(value, struct tr_xdp_table);
} fp_tables SEC(".maps");

/* The generation word (table gen & 1 is ACTIVE); only the agent writes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, tr_u32);
	__type(value, tr_u64);
} fp_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, struct tr_xdp_config);
} tr_config SEC(".maps");

/* bpf_ktime_get_ns (CLOCK_MONOTONIC) of the agent's last beat; 0: none. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, tr_u64);
} tr_heartbeat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TR_XDP_NREASONS);
	__type(key, enum tr_xdp_reason);
	__type(value, tr_u64);
} tr_counters SEC(".maps");

/* Per source prefix, the GCRA theoretical arrival time of its bucket in
 * the clock of now_ns: no token left while tat > now + tolerance. Only the
 * agent writes it; least recently used entries go first; the loader sizes
 * it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tr_prefix_key);
	__type(value, tr_u64);
} tr_prefixes SEC(".maps");

/* The connection attempts the agent admitted lately: their Initials (the
 * other datagram of a ClientHello, retransmissions) are not shed while
 * their prefix is over, since the attempt was charged already. Only the
 * agent writes it (the value is unused); the loader sizes it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct tr_attempt_key);
	__type(value, tr_u64);
} tr_attempts SEC(".maps");

/* Tests only: a non-zero value replaces bpf_ktime_get_ns for the prefix
 * buckets, so that refill is tested without waiting. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, tr_u64);
} tr_clock SEC(".maps");

/* AF_XDP sockets of the agent, by receive queue; the loader sizes it. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, tr_u32);
	__type(value, tr_u32);
} tr_xsks SEC(".maps");

#define TR_QUIC_V1 0x00000001u
#define TR_QUIC_V2 0x6b3343cfu
#define TR_MIN_INITIAL 1200u /* smallest UDP payload carrying an Initial */
#define TR_ETH_HLEN 14
#define TR_UDP_HLEN 8

static __attribute__((always_inline)) int verdict(int action, enum tr_xdp_reason reason)
{
	tr_u64 *n = bpf_map_lookup_elem(&tr_counters, &reason);

	if (n)
		*n += 1; /* per-CPU: no other writer */
	return action;
}

/* Agent alive: a heartbeat no older than the configured bound. A beat in
 * the future counts as stale, so a bogus value cannot disable fail-open. */
static __attribute__((always_inline)) int agent_alive(const struct tr_xdp_config *cfg)
{
	tr_u32 zero = 0;
	const tr_u64 *beat = bpf_map_lookup_elem(&tr_heartbeat, &zero);
	tr_u64 hb, now;

	if (!beat)
		return 0;
	hb = *(const volatile tr_u64 *)beat;
	now = bpf_ktime_get_ns();
	return hb != 0 && hb <= now && now - hb <= cfg->stale_ns;
}

static __attribute__((always_inline)) int to_agent(struct xdp_md *ctx, enum tr_xdp_reason reason)
{
	/* The low bits of flags are the action when the queue has no socket. */
	long act = bpf_redirect_map(&tr_xsks, ctx->rx_queue_index, XDP_PASS);

	if (act != XDP_REDIRECT)
		return verdict(XDP_PASS, TR_XDP_PASS_NO_SOCKET);
	return verdict(XDP_REDIRECT, reason);
}

/* The Initial at q carries a token: a non-zero first octet of the Token
 * Length varint (a zero length sent in two or more octets counts as a
 * token, which only makes the agent look at it). */
static __attribute__((always_inline)) int has_token(const tr_u8 *q, const tr_u8 *end)
{
	const tr_u8 *p;
	tr_u32 dcil, scil;

	if (q + 6 > end)
		return 0;
	dcil = q[5];
	if (dcil > TR_FP_CID_MAX)
		return 0;
	p = q + 6 + dcil;
	if (p + 1 > end)
		return 0;
	scil = p[0];
	if (scil > TR_FP_CID_MAX)
		return 0;
	p += 1 + scil;
	if (p + 1 > end)
		return 0;
	return p[0] != 0;
}

static __attribute__((always_inline)) tr_u64 now_ns(void)
{
	tr_u32 zero = 0;
	const tr_u64 *c = bpf_map_lookup_elem(&tr_clock, &zero);

	if (c && *c)
		return *c;
	return bpf_ktime_get_ns();
}

/* key (zeroed) becomes the prefix of src (4 or 16 bytes, by v6). */
static __attribute__((always_inline)) void prefix_of(const struct tr_xdp_config *cfg, const tr_u8 *src, int v6,
						     struct tr_prefix_key *key)
{
	int bits = v6 ? (int)cfg->prefix_len6 : (int)cfg->prefix_len4;
	int i;

	key->family = v6 ? 6 : 4;
#pragma unroll
	for (i = 0; i < 16; i++) {
		int left = bits - 8 * i;

		if (i >= 4 && !v6)
			break;
		if (left >= 8)
			key->addr[i] = src[i];
		else if (left > 0)
			key->addr[i] = src[i] & (tr_u8)(0xff << (8 - left));
	}
}

/* The bucket of prefix key is empty. */
static __attribute__((always_inline)) int prefix_over(const struct tr_xdp_config *cfg, const struct tr_prefix_key *key)
{
	const tr_u64 *tat = bpf_map_lookup_elem(&tr_prefixes, key);

	return tat && *tat > now_ns() + cfg->prefix_tolerance_ns;
}

/* The Initial at q (at least TR_MIN_INITIAL bytes) belongs to an attempt
 * the agent admitted: ak holds its prefix, the DCID is filled in here. */
static __attribute__((always_inline)) int attempt_admitted(struct tr_attempt_key *ak, const tr_u8 *q, const tr_u8 *end)
{
	tr_u32 dcil;
	int i;

	if (q + 6 + TR_FP_CID_MAX > end)
		return 0;
	dcil = q[5];
	if (dcil > TR_FP_CID_MAX)
		return 0;
	ak->dcid_len = dcil;
#pragma unroll
	for (i = 0; i < TR_FP_CID_MAX; i++)
		if ((tr_u32)i < dcil)
			ak->dcid[i] = q[6 + i];
	return bpf_map_lookup_elem(&tr_attempts, ak) != 0;
}

/* The Initial at q, with a token, is to be shed: its prefix is over and
 * its attempt was not admitted before. */
static __attribute__((always_inline)) int initial_over(const struct tr_xdp_config *cfg, const tr_u8 *q, const tr_u8 *end,
						       const tr_u8 *src, int v6)
{
	struct tr_attempt_key ak = {0};

	prefix_of(cfg, src, v6, &ak.prefix);
	return prefix_over(cfg, &ak.prefix) && !attempt_admitted(&ak, q, end);
}

/* q: start of the UDP payload of plen bytes (per the UDP header); src the
 * source address (4 bytes, or 16 with v6). */
static __attribute__((always_inline)) int quic(struct xdp_md *ctx, const struct tr_xdp_config *cfg,
						const tr_u8 *q, const tr_u8 *end, tr_u32 plen,
						const tr_u8 *src, int v6)
{
	/* Wider than TR_FP_CID_MAX and zeroed: the verifier does not know that
	 * tr_fp_siphash24's tail index stays below TR_FP_CID_MAX (it sees
	 * 8 * (len / 8) + 6 <= 30), and rejects variable-offset reads of stack
	 * bytes outside the buffer or not initialised. */
	tr_u8 cid[32] = {0};
	struct tr_fp_key key;
	tr_u32 zero = 0, one = 1, off;
	tr_u64 *t0, *t1, *gen;
	const tr_u8 *p;
	int i;

	if (plen < 1 || q + 1 > end)
		return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
	if (q[0] & 0x80) {
		tr_u32 version, type;

		if (plen < 6 || q + 6 > end)
			return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
		version = (tr_u32)q[1] << 24 | (tr_u32)q[2] << 16 | (tr_u32)q[3] << 8 | q[4];
		if (version == 0)
			return verdict(XDP_DROP, TR_XDP_DROP_UNEXPECTED);
		if (version != TR_QUIC_V1 && version != TR_QUIC_V2)
			return to_agent(ctx, TR_XDP_AGENT_VERSION);
		/* v1 numbering: 0 Initial, 1 0-RTT, 2 Handshake, 3 Retry. RFC 9369
		 * rotates the bits for v2 (Initial 1, 0-RTT 2, Handshake 3, Retry 0). */
		type = (q[0] >> 4) & 3;
		if (version == TR_QUIC_V2)
			type = (type + 3) & 3;
		if (type == 0) {
			if (plen < TR_MIN_INITIAL)
				return verdict(XDP_DROP, TR_XDP_DROP_SMALL_INITIAL);
			if (cfg->prefix_interval_ns && has_token(q, end) && initial_over(cfg, q, end, src, v6)) {
				if (cfg->prefix_drop)
					return verdict(XDP_DROP, TR_XDP_DROP_PREFIX_RATE);
				return to_agent(ctx, TR_XDP_AGENT_PREFIX_RATE);
			}
			return to_agent(ctx, TR_XDP_AGENT_INITIAL);
		}
		if (type == 3)
			return verdict(XDP_DROP, TR_XDP_DROP_UNEXPECTED);
		if (q[5] > TR_FP_CID_MAX)
			return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
		/* A longer DCID is a client-chosen one (0-RTT packets carry the
		 * DCID of the client's first Initial, 8..20 bytes): the cache keys
		 * it by its first cid_len bytes, as the agent admits it. */
		if (q[5] < cfg->cid_len)
			return verdict(XDP_DROP, TR_XDP_DROP_CID_LEN);
		off = 6;
	} else {
		off = 1;
	}
	/* A protected packet has at least 4 + 16 bytes (the header-protection
	 * sample) after its DCID, so reading TR_FP_CID_MAX bytes from the DCID
	 * never rejects a valid packet, and the copy has a constant size. */
	if (plen < off + TR_FP_CID_MAX)
		return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
	p = q + off;
	if (p + TR_FP_CID_MAX > end)
		return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
#pragma unroll
	for (i = 0; i < TR_FP_CID_MAX; i++)
		cid[i] = p[i];

	/* Server IDs verify on their MAC: no insert, no aging, nothing to
	 * re-learn after a restart. A long header must carry exactly that
	 * length; client-chosen DCIDs (0-RTT) fall through to the cache. */
	if (cfg->cid.len == cfg->cid_len && (off == 1 || q[5] == cfg->cid_len) &&
	    tr_cid_verify(&cfg->cid, cid))
		return verdict(XDP_PASS, TR_XDP_PASS_MAC);

	t0 = bpf_map_lookup_elem(&fp_tables, &zero);
	t1 = bpf_map_lookup_elem(&fp_tables, &one);
	gen = bpf_map_lookup_elem(&fp_gen, &zero);
	if (!t0 || !t1 || !gen)
		return verdict(XDP_PASS, TR_XDP_PASS_FAIL_OPEN);
	key.k0 = cfg->k0;
	key.k1 = cfg->k1;
	if (tr_fp_lookup_cid(t0, t1, gen, &key, cid, cfg->cid_len))
		return verdict(XDP_PASS, TR_XDP_PASS_HIT);
	return verdict(XDP_DROP, TR_XDP_DROP_MISS);
}

SEC("xdp")
int tr_fastpath(struct xdp_md *ctx)
{
	const tr_u8 *data = (const tr_u8 *)(long)ctx->data;
	const tr_u8 *end = (const tr_u8 *)(long)ctx->data_end;
	const struct tr_xdp_config *cfg;
	const tr_u8 *l4, *src;
	tr_u32 zero = 0, ulen, ethertype;
	int v6;

	if (data + TR_ETH_HLEN > end)
		return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
	ethertype = (tr_u32)data[12] << 8 | data[13];
	if (ethertype == 0x0800) {
		const tr_u8 *ip = data + TR_ETH_HLEN;
		tr_u32 ihl;

		if (ip + 20 > end || (ip[0] >> 4) != 4 || ip[9] != 17)
			return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
		ihl = (tr_u32)(ip[0] & 0x0f) * 4;
		if (ihl < 20)
			return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
		/* MF set or a fragment offset: not a whole datagram here. */
		if ((ip[6] & 0x3f) | ip[7])
			return verdict(XDP_PASS, TR_XDP_PASS_UNPARSED);
		l4 = ip + ihl;
		src = ip + 12;
		v6 = 0;
	} else if (ethertype == 0x86dd) {
		const tr_u8 *ip6 = data + TR_ETH_HLEN;

		if (ip6 + 40 > end || (ip6[0] >> 4) != 6)
			return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
		if (ip6[6] != 17) {
			tr_u8 nh = ip6[6];

			/* Extension headers that may precede UDP: not parsed. */
			if (nh == 0 || nh == 43 || nh == 44 || nh == 60 || nh == 51 || nh == 135)
				return verdict(XDP_PASS, TR_XDP_PASS_UNPARSED);
			return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
		}
		l4 = ip6 + 40;
		src = ip6 + 8;
		v6 = 1;
	} else {
		return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
	}
	if (l4 + TR_UDP_HLEN > end)
		return verdict(XDP_PASS, TR_XDP_PASS_OTHER);

	cfg = bpf_map_lookup_elem(&tr_config, &zero);
	if (!cfg || cfg->port == 0 || ((tr_u32)l4[2] << 8 | l4[3]) != cfg->port)
		return verdict(XDP_PASS, TR_XDP_PASS_OTHER);
	if (cfg->cid_len < 1 || cfg->cid_len > TR_FP_CID_MAX || !agent_alive(cfg))
		return verdict(XDP_PASS, TR_XDP_PASS_FAIL_OPEN);
	ulen = (tr_u32)l4[4] << 8 | l4[5];
	if (ulen < TR_UDP_HLEN)
		return verdict(XDP_DROP, TR_XDP_DROP_MALFORMED);
	return quic(ctx, cfg, l4 + TR_UDP_HLEN, end, ulen - TR_UDP_HLEN, src, v6);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
