package xdp

// The eBPF objects and their Go bindings (fastpath_bpfel.go and .o for
// little-endian CPUs, fastpath_bpfeb.go and .o for big-endian ones) are
// generated and committed, so building needs no clang; with both byte
// orders generated the package builds on every Linux architecture, and the
// files around it need no architecture list. Regenerate after editing
// bpf/fastpath.bpf.c or dpa-firmware/include (needs clang >= 14 and
// llvm-strip): go generate ./offload/xdp. bpf2go is pinned in go.mod's
// tool block.
//
// -mcpu=v3: the cache sets bits with BPF atomic OR (Linux >= 5.12).
// fastpath.sources records the SHA-256 of the C inputs the objects were
// built from; TestObjectUpToDate fails when they changed since.
//go:generate go tool bpf2go -target bpfel,bpfeb -type tr_xdp_config -type tr_xdp_reason -type tr_prefix_key -type tr_attempt_key fastpath bpf/fastpath.bpf.c -- -mcpu=v3 -Wall -Wextra -Werror -I../../dpa-firmware/include
//go:generate sh -c "sha256sum bpf/fastpath.bpf.c ../../dpa-firmware/include/tr_fastpath.h ../../dpa-firmware/include/tr_cid.h ../../dpa-firmware/include/tr_types.h > fastpath.sources"
