// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/* Flood generator run by BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES
 * (Linux >= 5.18; Go loader: offload/flood/live).
 *
 * The kernel hands the program one copy of the template frame per run (a
 * 1242-byte Ethernet + IPv4 + UDP frame carrying a 1200-byte QUIC client
 * Initial) and sends whatever it redirects. The frames come from a page
 * pool that is NOT reset between runs, and a receiver may have written to
 * them, so every run rewrites the whole 42-byte header from the
 * configuration and then the randomized fields, and computes both
 * checksums from the configuration's precomputed sums: nothing is read
 * back from the frame.
 *
 * Per frame: a random source address inside the configured prefix (the Go
 * loader only accepts prefixes inside 198.18.0.0/15), a random source port
 * (1024-65535), and
 *   - TR_GEN_RANDOM_CIDS: random 8-byte DCID and SCID; the rest of the
 *     Initial stays the template's, so the packet is no longer decryptable
 *     (the paper's flood: payload sampled from a real Initial);
 *   - TR_GEN_POOL: the UDP payload of a random entry of tr_gen_pool, each
 *     a complete, decryptable Initial built in Go, with its payload sum.
 *
 * The program also stays attached (generic XDP on the namespace's lo) so
 * that BPF_PROG_RUN does not add and remove it from the XDP dispatcher on
 * every call. On that real attachment it passes everything: it acts only
 * when the run's ingress interface is the configured one, which BPF_PROG_RUN
 * sets through the context and lo never matches.
 *
 * Self-contained on purpose, like offload/xdp's program: no libbpf or
 * kernel headers. */

typedef unsigned char tr_u8;
typedef unsigned short tr_u16;
typedef unsigned int tr_u32;
typedef unsigned long long tr_u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name

#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6

#define XDP_DROP 1
#define XDP_PASS 2

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
static tr_u32 (*bpf_get_prandom_u32)(void) = (void *)7;
static long (*bpf_redirect)(tr_u32 ifindex, tr_u64 flags) = (void *)23;
static long (*bpf_xdp_store_bytes)(struct xdp_md *ctx, tr_u32 offset, void *buf, tr_u32 len) = (void *)190;
static tr_u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_loop)(tr_u32 nr_loops, void *callback_fn, void *callback_ctx, tr_u64 flags) = (void *)181;

/* Frame layout: fixed, the paper's 1242-byte Initial with 8-byte CIDs. */
#define TR_GEN_HDR_LEN 42      /* Ethernet 14 + IPv4 20 + UDP 8 */
#define TR_GEN_PAYLOAD_LEN 1200
#define TR_GEN_FRAME_LEN (TR_GEN_HDR_LEN + TR_GEN_PAYLOAD_LEN)
#define TR_GEN_IP 14
#define TR_GEN_UDP 34
#define TR_GEN_DCID (TR_GEN_HDR_LEN + 6)  /* first byte, version, DCID length */
#define TR_GEN_SCID (TR_GEN_DCID + 8 + 1) /* DCID, SCID length */
#define TR_GEN_POOL_MAX 65536

/* --- Shared with Go (bpf2go generates the Go twins of these types). --- */

enum tr_gen_mode {
	TR_GEN_RANDOM_CIDS = 0,
	TR_GEN_POOL = 1,
};

enum tr_gen_counter {
	TR_GEN_SENT = 0,    /* frames built and handed to bpf_redirect */
	TR_GEN_BAD = 1,     /* a run on the configured interface that could not build a frame */
	TR_GEN_NCOUNTERS = 2,
};

/* Written by the loader; ifindex 0 means "not armed": pass everything. */
struct tr_gen_config {
	tr_u32 ifindex;   /* run ingress and redirect target, in the caller's namespace */
	tr_u32 src_base;  /* first address of the spoof prefix, host order */
	tr_u32 src_mask;  /* host bits of the prefix */
	enum tr_gen_mode mode;
	tr_u32 pool_size; /* entries of tr_gen_pool in use, 1..TR_GEN_POOL_MAX */
	tr_u32 ip_sum;    /* unfolded ones' complement sum of the IPv4 header, source and checksum zero */
	tr_u32 udp_sum;   /* of the pseudo-header and UDP header without source and checksum,
			   * plus (random-CID mode) the payload with both CIDs zero */
	tr_u32 pad;
	tr_u8 hdr[TR_GEN_HDR_LEN + 6]; /* the template's headers; 6 bytes of padding */
	tr_u64 interval_ns; /* pacing: time between two frames of one CPU; 0: none */
	tr_u64 catch_up_ns; /* pacing: how late a frame may be before the schedule restarts */
};

/* One pool entry: a complete Initial and its unfolded payload sum. */
struct tr_gen_entry {
	tr_u32 sum;
	tr_u32 pad;
	tr_u8 payload[TR_GEN_PAYLOAD_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, struct tr_gen_config);
} tr_gen_cfg SEC(".maps");

/* The loader sizes it to the pool (1 entry in random-CID mode). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, struct tr_gen_entry);
} tr_gen_pool SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TR_GEN_NCOUNTERS);
	__type(key, enum tr_gen_counter);
	__type(value, tr_u64);
} tr_gen_counters SEC(".maps");

/* Per CPU: when the next paced frame is due (bpf_ktime_get_ns). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, tr_u64);
} tr_gen_pace SEC(".maps");

#define TR_GEN_SPIN_MAX (1u << 16) /* about 2 ms of bpf_ktime_get_ns calls */

struct tr_spin {
	tr_u64 until;
};

static long spin_step(tr_u32 i, void *ctx)
{
	struct tr_spin *s = ctx;

	(void)i;
	return bpf_ktime_get_ns() >= s->until; /* 1 ends the loop */
}

/* pace waits until this CPU's next frame is due and schedules the one
 * after: it spaces the frames of one BPF_PROG_RUN call in time, because a
 * veth's receive ring holds 256 frames and a burst at the generator's own
 * speed would overflow it at any rate the receiver could sustain. */
static __attribute__((always_inline)) void pace(const struct tr_gen_config *cfg)
{
	tr_u32 zero = 0;
	tr_u64 *next = bpf_map_lookup_elem(&tr_gen_pace, &zero);
	tr_u64 now;

	if (!next || cfg->interval_ns == 0)
		return;
	now = bpf_ktime_get_ns();
	/* A sender that lost the CPU catches up with at most catch_up_ns of
	 * frames at once (the loader keeps that below the receiver's ring),
	 * then restarts the schedule from now. */
	if (*next + cfg->catch_up_ns < now || *next > now + cfg->interval_ns + cfg->catch_up_ns) {
		*next = now; /* behind, or a stale schedule: restart */
	} else if (now < *next) {
		struct tr_spin s = { .until = *next };

		bpf_loop(TR_GEN_SPIN_MAX, spin_step, &s, 0);
	}
	*next += cfg->interval_ns;
}

static __attribute__((always_inline)) void count(enum tr_gen_counter c)
{
	tr_u64 *n = bpf_map_lookup_elem(&tr_gen_counters, &c);

	if (n)
		*n += 1; /* per-CPU: no other writer */
}

/* Sum of the two 16-bit halves of v, as a checksum adds a 32-bit field. */
static __attribute__((always_inline)) tr_u32 halves(tr_u32 v)
{
	return (v >> 16) + (v & 0xffff);
}

static __attribute__((always_inline)) tr_u32 fold(tr_u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (tr_u32)s;
}

static __attribute__((always_inline)) void put32(tr_u8 *p, tr_u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

SEC("xdp")
int tr_flood(struct xdp_md *ctx)
{
	tr_u8 *data = (tr_u8 *)(long)ctx->data;
	tr_u8 *end = (tr_u8 *)(long)ctx->data_end;
	const struct tr_gen_config *cfg;
	tr_u32 zero = 0, src, sport, c;
	tr_u64 udp;
	int i;

	cfg = bpf_map_lookup_elem(&tr_gen_cfg, &zero);
	if (!cfg || cfg->ifindex == 0 || ctx->ingress_ifindex != cfg->ifindex)
		return XDP_PASS; /* the lo attachment, or not armed */
	if (data + TR_GEN_FRAME_LEN > end) {
		count(TR_GEN_BAD);
		return XDP_DROP;
	}

	if (cfg->mode == TR_GEN_POOL) {
		tr_u32 n = cfg->pool_size, idx;
		struct tr_gen_entry *e;

		if (n == 0 || n > TR_GEN_POOL_MAX) {
			count(TR_GEN_BAD);
			return XDP_DROP;
		}
		idx = bpf_get_prandom_u32() % n;
		e = bpf_map_lookup_elem(&tr_gen_pool, &idx);
		if (!e || bpf_xdp_store_bytes(ctx, TR_GEN_HDR_LEN, e->payload, TR_GEN_PAYLOAD_LEN) != 0) {
			count(TR_GEN_BAD);
			return XDP_DROP;
		}
		udp = (tr_u64)cfg->udp_sum + e->sum;
		/* store_bytes invalidates packet pointers: reload and recheck. */
		data = (tr_u8 *)(long)ctx->data;
		end = (tr_u8 *)(long)ctx->data_end;
		if (data + TR_GEN_FRAME_LEN > end) {
			count(TR_GEN_BAD);
			return XDP_DROP;
		}
	} else {
		tr_u32 d0 = bpf_get_prandom_u32(), d1 = bpf_get_prandom_u32();
		tr_u32 s0 = bpf_get_prandom_u32(), s1 = bpf_get_prandom_u32();

		put32(data + TR_GEN_DCID, d0);
		put32(data + TR_GEN_DCID + 4, d1);
		put32(data + TR_GEN_SCID, s0);
		put32(data + TR_GEN_SCID + 4, s1);
		/* The DCID starts at an even offset of the UDP header, so its
		 * bytes pair up as big-endian words; the SCID starts at an odd
		 * one, where the same bytes add byte-swapped (RFC 1071). */
		c = fold((tr_u64)halves(s0) + halves(s1));
		c = ((c & 0xff) << 8) | (c >> 8);
		udp = (tr_u64)cfg->udp_sum + halves(d0) + halves(d1) + c;
	}

#pragma unroll
	for (i = 0; i < TR_GEN_HDR_LEN; i++)
		data[i] = cfg->hdr[i];

	src = cfg->src_base | (bpf_get_prandom_u32() & cfg->src_mask);
	sport = bpf_get_prandom_u32() & 0xffff;
	if (sport < 1024)
		sport += 1024;
	put32(data + TR_GEN_IP + 12, src);
	c = ~fold((tr_u64)cfg->ip_sum + halves(src)) & 0xffff;
	data[TR_GEN_IP + 10] = c >> 8;
	data[TR_GEN_IP + 11] = c;
	data[TR_GEN_UDP] = sport >> 8;
	data[TR_GEN_UDP + 1] = sport;
	c = ~fold(udp + halves(src) + sport) & 0xffff;
	if (c == 0)
		c = 0xffff; /* 0 means "no checksum" */
	data[TR_GEN_UDP + 6] = c >> 8;
	data[TR_GEN_UDP + 7] = c;
	pace(cfg);
	count(TR_GEN_SENT);
	return bpf_redirect(cfg->ifindex, 0);
}

/* --- The generator's return path: tr_reply_sink. --- */

/* Replies to spoofed sources arrive at the generator's veth; the sink
 * counts them by kind and drops them, so that they cost the attacker's
 * side as little as a real attacker's NIC would. */
enum tr_sink_counter {
	TR_SINK_RETRY = 0, /* a QUIC Retry (v1 or v2 long header) */
	TR_SINK_OTHER = 1, /* anything else from the port to the prefix */
	TR_SINK_NCOUNTERS = 2,
};

struct tr_sink_config {
	tr_u32 dst_base; /* the spoof prefix, host order */
	tr_u32 dst_mask; /* its host bits */
	tr_u32 port;     /* the server's UDP port, host order; 0: pass all */
	tr_u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, tr_u32);
	__type(value, struct tr_sink_config);
} tr_sink_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TR_SINK_NCOUNTERS);
	__type(key, enum tr_sink_counter);
	__type(value, tr_u64);
} tr_sink_counters SEC(".maps");

#define TR_QUIC_V2 0x6b3343cfu

SEC("xdp")
int tr_reply_sink(struct xdp_md *ctx)
{
	const tr_u8 *data = (const tr_u8 *)(long)ctx->data;
	const tr_u8 *end = (const tr_u8 *)(long)ctx->data_end;
	const struct tr_sink_config *cfg;
	const tr_u8 *ip, *udp, *q;
	tr_u32 zero = 0, dst, version, type, ihl;
	enum tr_sink_counter c = TR_SINK_OTHER;
	tr_u64 *n;

	if (data + TR_GEN_IP + 20 > end || data[12] != 0x08 || data[13] != 0x00)
		return XDP_PASS;
	ip = data + TR_GEN_IP;
	if ((ip[0] >> 4) != 4 || ip[9] != 17)
		return XDP_PASS;
	ihl = (tr_u32)(ip[0] & 0x0f) * 4;
	if (ihl < 20 || ihl > 60)
		return XDP_PASS;
	udp = ip + ihl;
	if (udp + 8 + 5 > end)
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&tr_sink_cfg, &zero);
	if (!cfg || cfg->port == 0 || ((tr_u32)udp[0] << 8 | udp[1]) != cfg->port)
		return XDP_PASS;
	dst = (tr_u32)ip[16] << 24 | (tr_u32)ip[17] << 16 | (tr_u32)ip[18] << 8 | ip[19];
	if ((dst & ~cfg->dst_mask) != cfg->dst_base)
		return XDP_PASS;
	q = udp + 8;
	version = (tr_u32)q[1] << 24 | (tr_u32)q[2] << 16 | (tr_u32)q[3] << 8 | q[4];
	type = (q[0] >> 4) & 3;
	/* Retry is long-header type 3 in v1, 0 in v2 (RFC 9369). */
	if ((q[0] & 0x80) && ((version == 1 && type == 3) || (version == TR_QUIC_V2 && type == 0)))
		c = TR_SINK_RETRY;
	n = bpf_map_lookup_elem(&tr_sink_counters, &c);
	if (n)
		*n += 1;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
