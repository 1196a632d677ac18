package reuseport

// The eBPF objects and their Go bindings (steer_bpfel.go and .o for
// little-endian CPUs, steer_bpfeb.go and .o for big-endian ones) are
// generated and committed, so building needs no clang. Regenerate after
// editing bpf/steer.bpf.c or dpa-firmware/include (needs clang >= 14 and
// llvm-strip): go generate ./offload/reuseport. bpf2go is pinned in go.mod's
// tool block.
//
// steer.sources records the SHA-256 of the C inputs the objects were built
// from; TestObjectUpToDate fails when they changed since.
//go:generate go tool bpf2go -target bpfel,bpfeb -type tr_rp_config -type tr_rp_reason steer bpf/steer.bpf.c -- -mcpu=v3 -Wall -Wextra -Werror -I../../dpa-firmware/include
//go:generate sh -c "sha256sum bpf/steer.bpf.c ../../dpa-firmware/include/tr_fastpath.h ../../dpa-firmware/include/tr_cid.h ../../dpa-firmware/include/tr_types.h > steer.sources"
