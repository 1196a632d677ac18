package live

import (
	"strings"

	"github.com/turboretry/turboretry/internal/ethtool"
)

// ReadXmitStats reads ifname's XmitStats in the calling thread's network
// namespace. ok is false for a device without such counters (not a veth).
func ReadXmitStats(ifname string) (st XmitStats, ok bool, err error) {
	names, vals, err := ethtool.Stats(ifname)
	if err != nil {
		return st, false, err
	}
	for i, n := range names {
		if !strings.HasPrefix(n, "tx_queue_") {
			continue
		}
		switch {
		case strings.HasSuffix(n, "_xdp_xmit"):
			st.Xmit += vals[i]
			ok = true
		case strings.HasSuffix(n, "_xdp_xmit_errors"):
			st.Errors += vals[i]
		}
	}
	return st, ok, nil
}
