/* Host unit test for include/tr_fastpath.h (built with gcc, libc allowed
 * here only): SipHash-2-4 reference vectors, the Go-generated cross-check
 * vectors (argv[1]), and the two-table aging semantics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_fastpath.h"
#include "tr_dpa_verdict.h"

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			failures++;                                          \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
		}                                                            \
	} while (0)

/* vectors_sip64 of the SipHash reference implementation: key 00..0f,
 * message i = 00 01 .. (i-1). */
static const tr_u64 sip_vectors[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
	0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
	0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
	0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
	0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
	0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
	0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
	0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
	0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
	0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
	0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
};

static tr_u64 tables[2][TR_FP_WORDS];
static tr_u64 gen;

/* What the Go control plane does in Cache.Rotate. */
static void rotate(void)
{
	memset(tables[(gen & 1) ^ 1], 0, sizeof tables[0]);
	gen++;
}

static void reset(void)
{
	memset(tables, 0, sizeof tables);
	gen = 0;
}

/* Any-length SipHash from the header's building blocks, for the 64
 * reference vectors (the header's own entry points stop at 20 bytes). */
static tr_u64 siphash_any(const struct tr_fp_key *key, const tr_u8 *in, size_t len)
{
	struct tr_fp_sip s;
	tr_u64 last = (tr_u64)(len & 0xff) << 56;
	size_t i;

	tr_fp_sip_init(&s, key);
	for (i = 0; i + 8 <= len; i += 8)
		tr_fp_sip_word(&s, tr_fp_load_le64(in + i));
	for (; i < len; i++)
		last |= (tr_u64)in[i] << (8 * (i % 8));
	tr_fp_sip_word(&s, last);
	return tr_fp_sip_final(&s);
}

static void test_reference_vectors(void)
{
	tr_u8 raw[16], msg[64];
	struct tr_fp_key key;
	int i;

	for (i = 0; i < 16; i++)
		raw[i] = (tr_u8)i;
	for (i = 0; i < 64; i++)
		msg[i] = (tr_u8)i;
	key = tr_fp_key_from_bytes(raw);
	for (i = 0; i < 64; i++) {
		tr_u64 h = siphash_any(&key, msg, (size_t)i);
		CHECK(h == sip_vectors[i], "sip64 vector %d: %016llx", i, (unsigned long long)h);
		if (i <= TR_FP_CID_MAX) {
			h = tr_fp_siphash24(&key, msg, (tr_u32)i);
			CHECK(h == sip_vectors[i], "tr_fp_siphash24 len %d: %016llx", i,
			      (unsigned long long)h);
		}
	}
	CHECK(tr_fp_siphash24_8(&key, msg) == sip_vectors[8], "tr_fp_siphash24_8");
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes hex into out (at most max bytes); returns the length or -1. */
static int unhex(const char *s, tr_u8 *out, int max)
{
	int n = 0;

	while (s[0] && s[1]) {
		int hi = hexval(s[0]), lo = hexval(s[1]);

		if (hi < 0 || lo < 0 || n == max)
			return -1;
		out[n++] = (tr_u8)(hi << 4 | lo);
		s += 2;
	}
	return s[0] ? -1 : n;
}

static int test_cross_check(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256], keyhex[64], cidhex[64];
	unsigned long long want_h;
	unsigned long want_idx[3];
	int lineno = 0, count = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		tr_u8 raw[16], cid[TR_FP_CID_MAX] = {0};
		struct tr_fp_key key;
		tr_u32 idx[TR_FP_K];
		tr_u64 h;
		int len, k;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%63s %63s %llx %lu %lu %lu", keyhex, cidhex, &want_h,
			   &want_idx[0], &want_idx[1], &want_idx[2]) != 6 ||
		    unhex(keyhex, raw, 16) != 16 ||
		    (len = unhex(cidhex, cid, TR_FP_CID_MAX)) < 1) {
			fprintf(stderr, "%s:%d: malformed line\n", path, lineno);
			failures++;
			continue;
		}
		key = tr_fp_key_from_bytes(raw);
		h = tr_fp_siphash24(&key, cid, (tr_u32)len);
		CHECK(h == want_h, "%s:%d: h = %016llx, want %016llx", path, lineno,
		      (unsigned long long)h, want_h);
		if (len == 8)
			CHECK(tr_fp_siphash24_8(&key, cid) == want_h, "%s:%d: 8-byte path", path, lineno);
		tr_fp_indices(h, idx);
		for (k = 0; k < TR_FP_K; k++)
			CHECK(idx[k] == want_idx[k], "%s:%d: index %d = %u, want %lu", path, lineno,
			      k, idx[k], want_idx[k]);

		/* The bits land exactly where Go puts them. */
		reset();
		tr_fp_insert_cid(tables[0], tables[1], &gen, &key, cid, (tr_u32)len);
		for (k = 0; k < TR_FP_K; k++)
			CHECK(tables[0][want_idx[k] / 64] >> (want_idx[k] % 64) & 1,
			      "%s:%d: bit %lu not set", path, lineno, want_idx[k]);
		CHECK(tr_fp_lookup_cid(tables[0], tables[1], &gen, &key, cid, (tr_u32)len),
		      "%s:%d: lookup after insert missed", path, lineno);
		count++;
	}
	fclose(f);
	CHECK(count >= 100, "%s: only %d vectors", path, count);
	return count;
}

static void test_aging(void)
{
	struct tr_fp_key key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
	tr_u8 a[TR_FP_CID_MAX] = {1, 2, 3, 4, 5, 6, 7, 8};
	tr_u8 r[TR_FP_CID_MAX] = {9, 9, 9, 9, 9, 9, 9, 9};
	tr_u32 idx[TR_FP_K];
	int i;

	reset();
	tr_fp_insert_cid(tables[0], tables[1], &gen, &key, a, 8);
	tr_fp_insert_cid(tables[0], tables[1], &gen, &key, r, 8);
	rotate();
	CHECK(tr_fp_lookup_cid(tables[0], tables[1], &gen, &key, r, 8), "r lost after one rotation");
	tr_fp_indices(tr_fp_siphash24_8(&key, r), idx);
	CHECK(tr_fp_test(tables[1], idx), "PASSIVE hit did not re-insert into ACTIVE");
	rotate();
	CHECK(!tr_fp_lookup_cid(tables[0], tables[1], &gen, &key, a, 8),
	      "a survived two rotations without refresh");
	for (i = 0; i < 5; i++) {
		CHECK(tr_fp_lookup_cid(tables[0], tables[1], &gen, &key, r, 8),
		      "r lost although refreshed every window (%d)", i);
		rotate();
	}
	rotate();
	CHECK(!tr_fp_lookup_cid(tables[0], tables[1], &gen, &key, r, 8),
	      "r survived two rotations after its last refresh");
	/* Lengths past the maximum are clamped, never read out of bounds. */
	CHECK(tr_fp_siphash24(&key, r, 200) == tr_fp_siphash24(&key, r, TR_FP_CID_MAX), "clamp");
}

static void test_verdict(void)
{
	struct tr_dpa_cfg cfg;
	/* short header: first byte 0x40 | bits, DCID, then payload */
	tr_u8 pkt[32] = {0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb};
	tr_u8 other[32] = {0x41, 8, 7, 6, 5, 4, 3, 2, 1, 0xaa, 0xbb};

	reset();
	memset(&cfg, 0, sizeof cfg);
	cfg.tables[0] = tables[0];
	cfg.tables[1] = tables[1];
	cfg.gen = &gen;
	cfg.key.k0 = 1;
	cfg.key.k1 = 2;
	cfg.cid_len = 8;
	CHECK(tr_dpa_verdict(&cfg, pkt, 20) == TR_DPA_TO_AGENT, "unknown CID passed");
	tr_fp_insert_cid(tables[0], tables[1], &gen, &cfg.key, pkt + 1, 8);
	CHECK(tr_dpa_verdict(&cfg, pkt, 20) == TR_DPA_FAST, "known CID not passed");
	CHECK(tr_dpa_verdict(&cfg, other, 20) == TR_DPA_TO_AGENT, "other CID passed");
	CHECK(tr_dpa_verdict(&cfg, pkt, 8) == TR_DPA_TO_AGENT, "truncated packet passed");
	pkt[0] = 0xc1; /* long header */
	CHECK(tr_dpa_verdict(&cfg, pkt, 20) == TR_DPA_TO_AGENT, "long header passed");
	pkt[0] = 0x01; /* fixed bit clear */
	CHECK(tr_dpa_verdict(&cfg, pkt, 20) == TR_DPA_TO_AGENT, "fixed bit clear passed");
	pkt[0] = 0x41;
	cfg.cid_len = 0;
	CHECK(tr_dpa_verdict(&cfg, pkt, 20) == TR_DPA_TO_AGENT, "cid_len 0 passed");
	cfg.cid_len = 21;
	CHECK(tr_dpa_verdict(&cfg, pkt, 32) == TR_DPA_TO_AGENT, "cid_len 21 passed");
}

/* An authenticated ID passes with no cache entry: the first accepted line
 * of test/cid_vectors.txt (made by Go's quiclb), key 00112233..ff. */
static void test_verdict_mac(void)
{
	static const tr_u8 raw[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
				      0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
	tr_u8 pkt[40] = {0x41, 0x09, 0x00, 0xb7, 0xf4, 0x8f, 0xac, 0xec, 0x3e, 0x83, 0x5a, 0xaa};
	struct tr_dpa_cfg cfg;

	reset();
	memset(&cfg, 0, sizeof cfg);
	cfg.tables[0] = tables[0];
	cfg.tables[1] = tables[1];
	cfg.gen = &gen;
	cfg.key.k0 = 1;
	cfg.key.k1 = 2;
	cfg.cid_len = 10;
	CHECK(tr_dpa_verdict(&cfg, pkt, 30) == TR_DPA_TO_AGENT, "MAC checking off, not cached: passed");
	cfg.cid.key = tr_fp_key_from_bytes(raw);
	cfg.cid.len = 10;
	cfg.cid.worker_off = 1;
	CHECK(tr_dpa_verdict(&cfg, pkt, 30) == TR_DPA_FAST, "authenticated ID not passed");
	pkt[5] ^= 0x10; /* a nonce bit */
	CHECK(tr_dpa_verdict(&cfg, pkt, 30) == TR_DPA_TO_AGENT, "tampered ID passed");
	tr_fp_insert_cid(tables[0], tables[1], &gen, &cfg.key, pkt + 1, 10);
	CHECK(tr_dpa_verdict(&cfg, pkt, 30) == TR_DPA_FAST, "cached ID not passed");
}

int main(int argc, char **argv)
{
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s vectors.txt\n", argv[0]);
		return 2;
	}
	test_reference_vectors();
	n = test_cross_check(argv[1]);
	test_aging();
	test_verdict();
	test_verdict_mac();
	if (failures || n < 0) {
		fprintf(stderr, "tr_fastpath: %d failures\n", failures);
		return 1;
	}
	printf("tr_fastpath: ok (64 SipHash reference vectors, %d Go cross-check vectors, aging, DPA verdict with and without MAC)\n", n);
	return 0;
}
