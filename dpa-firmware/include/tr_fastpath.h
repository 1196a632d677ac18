/* Fast-path connection cache: portable C for the XDP program and the
 * BlueField-3 DPA. Bit-for-bit identical to the Go package
 * offload/fastpath; docs/fastpath.md is the normative description.
 *
 * Header-only: every function is static inline (forced), there is no libc, and every
 * loop has a constant trip count, so an eBPF program can include it.
 *
 * Two Bloom filters ("tables") of TR_FP_M bits, each an array of
 * TR_FP_WORDS 64-bit words in host byte order: bit b is bit (b % 64) of
 * word b / 64. A 64-bit generation word selects the roles: table
 * (gen & 1) is ACTIVE, the other is PASSIVE_AGING. Only the control plane
 * (the Go agent) rotates: it clears the PASSIVE table, then increments gen.
 */
#ifndef TR_FASTPATH_H
#define TR_FASTPATH_H

#include "tr_types.h"

#define TR_FP_M_LOG2 23
#define TR_FP_M (1u << TR_FP_M_LOG2) /* bits per table (1 MiB) */
#define TR_FP_K 3                    /* bit indices per CID */
#define TR_FP_WORDS (TR_FP_M / 64u)  /* 64-bit words per table */
#define TR_FP_CID_MAX 20             /* longest QUIC v1 connection ID */
#define TR_FP_TRIES 2                /* bounded retries around a rotation */

/* Memory-access hooks. The defaults suit gcc/clang on the host and on
 * RISC-V (the __sync builtins are full barriers; RV64 "A" extension).
 * BPF has no fence instruction: there the fence is a compiler barrier and
 * the OR is a BPF atomic OR (clang -mcpu=v3 or later, Linux >= 5.12). */
#ifndef TR_LOAD64
#define TR_LOAD64(p) (*(const volatile tr_u64 *)(p))
#endif
#ifndef TR_ATOMIC_OR64
#define TR_ATOMIC_OR64(p, v) ((void)__sync_fetch_and_or((p), (v)))
#endif
#ifndef TR_FENCE
#if defined(__bpf__) || defined(__BPF__)
#define TR_FENCE() __asm__ __volatile__("" ::: "memory")
#else
#define TR_FENCE() __sync_synchronize()
#endif
#endif

/* Everything is forced inline: BPF calls take at most 5 arguments and
 * some helpers here take 6. */
#define TR_FP_INLINE static inline __attribute__((always_inline))

/* SipHash key: k0 = bytes 0..7, k1 = bytes 8..15, little-endian. */
struct tr_fp_key {
	tr_u64 k0;
	tr_u64 k1;
};

TR_FP_INLINE tr_u64 tr_fp_load_le64(const tr_u8 *p)
{
	/* Byte by byte: no alignment or endianness assumption. */
	return (tr_u64)p[0] | (tr_u64)p[1] << 8 | (tr_u64)p[2] << 16 |
	       (tr_u64)p[3] << 24 | (tr_u64)p[4] << 32 | (tr_u64)p[5] << 40 |
	       (tr_u64)p[6] << 48 | (tr_u64)p[7] << 56;
}

TR_FP_INLINE struct tr_fp_key tr_fp_key_from_bytes(const tr_u8 raw[16])
{
	struct tr_fp_key k;

	k.k0 = tr_fp_load_le64(raw);
	k.k1 = tr_fp_load_le64(raw + 8);
	return k;
}

#define TR_FP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define TR_FP_SIPROUND(v0, v1, v2, v3)                                       \
	do {                                                                 \
		v0 += v1; v1 = TR_FP_ROTL(v1, 13); v1 ^= v0;                 \
		v0 = TR_FP_ROTL(v0, 32);                                     \
		v2 += v3; v3 = TR_FP_ROTL(v3, 16); v3 ^= v2;                 \
		v0 += v3; v3 = TR_FP_ROTL(v3, 21); v3 ^= v0;                 \
		v2 += v1; v1 = TR_FP_ROTL(v1, 17); v1 ^= v2;                 \
		v2 = TR_FP_ROTL(v2, 32);                                     \
	} while (0)

struct tr_fp_sip {
	tr_u64 v0, v1, v2, v3;
};

TR_FP_INLINE void tr_fp_sip_init(struct tr_fp_sip *s, const struct tr_fp_key *key)
{
	s->v0 = key->k0 ^ 0x736f6d6570736575ULL;
	s->v1 = key->k1 ^ 0x646f72616e646f6dULL;
	s->v2 = key->k0 ^ 0x6c7967656e657261ULL;
	s->v3 = key->k1 ^ 0x7465646279746573ULL;
}

/* Compress one 64-bit message word with two SipRounds. */
TR_FP_INLINE void tr_fp_sip_word(struct tr_fp_sip *s, tr_u64 m)
{
	tr_u64 v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;

	v3 ^= m;
	TR_FP_SIPROUND(v0, v1, v2, v3);
	TR_FP_SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	s->v0 = v0; s->v1 = v1; s->v2 = v2; s->v3 = v3;
}

TR_FP_INLINE tr_u64 tr_fp_sip_final(struct tr_fp_sip *s)
{
	tr_u64 v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;

	v2 ^= 0xff;
	TR_FP_SIPROUND(v0, v1, v2, v3);
	TR_FP_SIPROUND(v0, v1, v2, v3);
	TR_FP_SIPROUND(v0, v1, v2, v3);
	TR_FP_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* SipHash-2-4 of exactly 8 bytes: straight-line code, the default CID
 * length's fast path. */
TR_FP_INLINE tr_u64 tr_fp_siphash24_8(const struct tr_fp_key *key, const tr_u8 in[8])
{
	struct tr_fp_sip s;

	tr_fp_sip_init(&s, key);
	tr_fp_sip_word(&s, tr_fp_load_le64(in));
	tr_fp_sip_word(&s, (tr_u64)8 << 56);
	return tr_fp_sip_final(&s);
}

/* SipHash-2-4 of len bytes, len <= TR_FP_CID_MAX; in must point to at
 * least TR_FP_CID_MAX readable bytes (e.g. a zero-padded stack copy of the
 * CID: bytes past len are never used in the result). A longer len is
 * clamped to TR_FP_CID_MAX, so the loops below always have constant
 * bounds (2 full words + at most 7 tail bytes). */
TR_FP_INLINE tr_u64 tr_fp_siphash24(const struct tr_fp_key *key, const tr_u8 *in, tr_u32 len)
{
	struct tr_fp_sip s;
	tr_u64 last;
	tr_u32 w, j, full, tail;

	if (len > TR_FP_CID_MAX)
		len = TR_FP_CID_MAX;
	full = len / 8;
	tail = len % 8;
	tr_fp_sip_init(&s, key);
	for (w = 0; w < TR_FP_CID_MAX / 8; w++) {
		if (w < full)
			tr_fp_sip_word(&s, tr_fp_load_le64(in + 8 * w));
	}
	last = (tr_u64)(len & 0xff) << 56;
	for (j = 0; j < 7; j++) {
		if (j < tail)
			last |= (tr_u64)in[8 * full + j] << (8 * j);
	}
	tr_fp_sip_word(&s, last);
	return tr_fp_sip_final(&s);
}

/* Bit indices: (lo + i * hi) mod M with lo, hi the 32-bit halves of h,
 * in wrapping 32-bit arithmetic (M divides 2^32, so 64-bit arithmetic
 * gives the same result). */
TR_FP_INLINE void tr_fp_indices(tr_u64 h, tr_u32 idx[TR_FP_K])
{
	tr_u32 lo = (tr_u32)h, hi = (tr_u32)(h >> 32);

	idx[0] = lo & (TR_FP_M - 1);
	idx[1] = (lo + hi) & (TR_FP_M - 1);
	idx[2] = (lo + 2u * hi) & (TR_FP_M - 1);
}

TR_FP_INLINE int tr_fp_test_bit(const tr_u64 *words, tr_u32 bit)
{
	bit &= TR_FP_M - 1; /* keeps the word index provably in bounds */
	return (TR_LOAD64(&words[bit >> 6]) >> (bit & 63)) & 1;
}

TR_FP_INLINE void tr_fp_set_bit(tr_u64 *words, tr_u32 bit)
{
	tr_u64 mask;

	bit &= TR_FP_M - 1;
	mask = (tr_u64)1 << (bit & 63);
	/* Skip the atomic when the bit is set: live connections then only
	 * read the shared cache line. */
	if (!(TR_LOAD64(&words[bit >> 6]) & mask))
		TR_ATOMIC_OR64(&words[bit >> 6], mask);
}

TR_FP_INLINE int tr_fp_test(const tr_u64 *words, const tr_u32 idx[TR_FP_K])
{
	return tr_fp_test_bit(words, idx[0]) && tr_fp_test_bit(words, idx[1]) &&
	       tr_fp_test_bit(words, idx[2]);
}

TR_FP_INLINE void tr_fp_set(tr_u64 *words, const tr_u32 idx[TR_FP_K])
{
	tr_fp_set_bit(words, idx[0]);
	tr_fp_set_bit(words, idx[1]);
	tr_fp_set_bit(words, idx[2]);
}

/* Insert into ACTIVE, then check that no rotation happened meanwhile; if
 * one did, the bits may have landed in a table being cleared, so set them
 * in the new ACTIVE table too. */
TR_FP_INLINE void tr_fp_insert(tr_u64 *t0, tr_u64 *t1, const tr_u64 *gen,
				const tr_u32 idx[TR_FP_K])
{
	tr_u32 attempt;

	for (attempt = 0; attempt < TR_FP_TRIES; attempt++) {
		tr_u64 g = TR_LOAD64(gen);

		tr_fp_set((g & 1) ? t1 : t0, idx);
		TR_FENCE();
		if (TR_LOAD64(gen) == g)
			return;
	}
}

/* Lookup: 1 when the CID is in ACTIVE or PASSIVE (a PASSIVE hit re-inserts
 * it into ACTIVE), 0 on a miss. A miss is only reported when the generation
 * did not move during the reads: then the table read as ACTIVE was not being
 * cleared, so an entry present in ACTIVE cannot be missed. */
TR_FP_INLINE int tr_fp_lookup(tr_u64 *t0, tr_u64 *t1, const tr_u64 *gen,
			       const tr_u32 idx[TR_FP_K])
{
	tr_u32 attempt;

	for (attempt = 0; attempt < TR_FP_TRIES; attempt++) {
		tr_u64 g = TR_LOAD64(gen);
		tr_u64 *active = (g & 1) ? t1 : t0;
		tr_u64 *passive = (g & 1) ? t0 : t1;

		if (tr_fp_test(active, idx))
			return 1;
		if (tr_fp_test(passive, idx)) {
			tr_fp_insert(t0, t1, gen, idx);
			return 1;
		}
		TR_FENCE();
		if (TR_LOAD64(gen) == g)
			return 0;
	}
	return 0;
}

/* Convenience wrappers taking the CID itself (cid: TR_FP_CID_MAX readable
 * bytes, see tr_fp_siphash24). */
TR_FP_INLINE int tr_fp_lookup_cid(tr_u64 *t0, tr_u64 *t1, const tr_u64 *gen,
				   const struct tr_fp_key *key, const tr_u8 *cid, tr_u32 len)
{
	tr_u32 idx[TR_FP_K];

	tr_fp_indices(len == 8 ? tr_fp_siphash24_8(key, cid) : tr_fp_siphash24(key, cid, len), idx);
	return tr_fp_lookup(t0, t1, gen, idx);
}

TR_FP_INLINE void tr_fp_insert_cid(tr_u64 *t0, tr_u64 *t1, const tr_u64 *gen,
				    const struct tr_fp_key *key, const tr_u8 *cid, tr_u32 len)
{
	tr_u32 idx[TR_FP_K];

	tr_fp_indices(len == 8 ? tr_fp_siphash24_8(key, cid) : tr_fp_siphash24(key, cid, len), idx);
	tr_fp_insert(t0, t1, gen, idx);
}

#endif /* TR_FASTPATH_H */
