/* Host unit test for include/tr_cid.h against the Go-generated vectors
 * (argv[1], default test/cid_vectors.txt): every ID that the Go package
 * quiclb accepts, C accepts with the same worker, and every tampered or
 * foreign one it refuses, C refuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_cid.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int unhex(const char *s, tr_u8 *out, size_t max)
{
	size_t n = strlen(s), i;

	if (n % 2 || n / 2 > max)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (tr_u8)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "test/cid_vectors.txt";
	FILE *f = fopen(path, "r");
	char line[512], keyhex[64], cidhex[64];
	int lines = 0, failures = 0, accepted = 0;

	if (!f) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof line, f)) {
		struct tr_cid_cfg cfg;
		tr_u8 raw[16], cid[TR_FP_CID_MAX] = {0};
		unsigned len, config_id, off;
		int want_ok, want_worker, want_gen, n, ok, worker, gen;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%63s %u %u %u %63s %d %d %d", keyhex, &len, &config_id, &off, cidhex,
			   &want_ok, &want_worker, &want_gen) != 8 ||
		    unhex(keyhex, raw, 16) != 16 || (n = unhex(cidhex, cid, sizeof cid)) < 0) {
			fprintf(stderr, "bad line: %s", line);
			return 1;
		}
		memset(&cfg, 0, sizeof cfg);
		cfg.key = tr_fp_key_from_bytes(raw);
		cfg.len = len;
		cfg.config_id = config_id;
		cfg.worker_off = off;
		/* The data planes read the DCID's first len bytes; a shorter ID
		 * is zero-padded, as in their stack copies. */
		ok = (unsigned)n == len && tr_cid_verify(&cfg, cid);
		/* The worker octet: the generation in its high bit, the worker
		 * index below (docs/cid.md). */
		worker = ok ? tr_cid_worker(&cfg, cid) : -1;
		gen = worker < 0 ? -1 : worker >> 7;
		if (worker >= 0)
			worker &= 0x7f;
		if (ok != want_ok || worker != want_worker || gen != want_gen) {
			failures++;
			fprintf(stderr, "FAIL %s: verify %d worker %d generation %d, want %d %d %d\n", cidhex, ok,
				worker, gen, want_ok, want_worker, want_gen);
		}
		accepted += ok;
		lines++;
	}
	fclose(f);
	if (lines == 0) {
		fprintf(stderr, "no vectors in %s\n", path);
		return 1;
	}
	printf("tr_cid: %d vectors (%d accepted), %d failures\n", lines, accepted, failures);
	return failures != 0;
}
