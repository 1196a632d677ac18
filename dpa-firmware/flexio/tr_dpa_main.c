/* FlexIO entry points of the DPA fast path. Builds only with the DOCA SDK
 * (make dpa); UNTESTED here: no SDK and no BlueField-3 in this project's
 * CI. See README.md. The FlexIO names used (__dpa_rpc__, __dpa_global__,
 * flexio_dev_thread_reschedule, the flexio_dev headers) follow the DOCA
 * FlexIO samples and may need adjusting to the installed SDK version. */
#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_queue_access.h>

#include "tr_dpa_verdict.h"

static struct tr_dpa_cfg tr_cfg;
static int tr_cfg_ready;

/* Host -> DPA RPC: arg is the DPA address of a struct tr_dpa_cfg that the
 * host copied into DPA memory (flexio_copy_from_host). */
__dpa_rpc__ uint64_t tr_fp_dpa_init(uint64_t arg)
{
	const struct tr_dpa_cfg *src = (const struct tr_dpa_cfg *)arg;

	if (src->cid_len < 1 || src->cid_len > TR_FP_CID_MAX)
		return 1;
	if (src->cid.len != 0 && src->cid.len != src->cid_len)
		return 1; /* authenticated IDs are the server's IDs */
	tr_cfg = *src;
	tr_cfg_ready = 1;
	return 0;
}

/* Verdict for one received UDP payload; the RX event handler below calls
 * it per completion and steers the packet (forward to the host representor
 * or up to the Arm agent's queue). */
uint32_t tr_fp_dpa_packet(const uint8_t *udp_payload, uint32_t len)
{
	if (!tr_cfg_ready)
		return TR_DPA_TO_AGENT;
	return (uint32_t)tr_dpa_verdict(&tr_cfg, udp_payload, len);
}

/* RX completion handler. The receive/send queue plumbing (CQE polling,
 * WQE posting, doorbells) is the DOCA sample's boilerplate and is not
 * reproduced here; this handler only marks where tr_fp_dpa_packet() sits
 * in it. */
__dpa_global__ void tr_fp_dpa_rx(uint64_t thread_arg)
{
	(void)thread_arg;
	/* for each CQE: parse Ethernet/IP/UDP, v = tr_fp_dpa_packet(...),
	 * steer by v, post the buffer back */
	flexio_dev_thread_reschedule();
}
