/* Freestanding compile check of tr_fastpath.h (riscv-check, bpf-check):
 * references every entry point so that each one is compiled for the
 * target. Not linked, not run. */
#include "tr_fastpath.h"
#include "tr_cid.h"
#include "tr_dpa_verdict.h"

/* One struct argument: BPF functions take at most 5. */
struct tr_fp_check_args {
	tr_u64 *t0, *t1;
	const tr_u64 *gen;
	const tr_u8 *raw_key;
	const tr_u8 *cid;
	tr_u32 len;
};

int tr_fp_compile_check(const struct tr_fp_check_args *a);

int tr_fp_compile_check(const struct tr_fp_check_args *a)
{
	tr_u64 *t0 = a->t0, *t1 = a->t1;
	const tr_u64 *gen = a->gen;
	const tr_u8 *cid = a->cid;
	tr_u32 len = a->len;
	struct tr_fp_key key = tr_fp_key_from_bytes(a->raw_key);
	tr_u32 idx[TR_FP_K];
	int hit;

	tr_fp_indices(tr_fp_siphash24(&key, cid, len), idx);
	hit = tr_fp_lookup(t0, t1, gen, idx);
	tr_fp_insert(t0, t1, gen, idx);
	hit += tr_fp_lookup_cid(t0, t1, gen, &key, cid, 8);
	tr_fp_insert_cid(t0, t1, gen, &key, cid, len);
	{
		struct tr_cid_cfg cc = {key, 10, 0, 1, 0};
		struct tr_dpa_cfg cfg = {{t0, t1}, gen, key, 8, cc};

		hit += tr_dpa_verdict(&cfg, cid, len);
		if (tr_cid_verify(&cc, cid))
			hit += tr_cid_worker(&cc, cid);
	}
	return hit + tr_fp_test_bit(t0, idx[0]);
}
