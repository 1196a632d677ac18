package xdp

// The eBPF object and its Go bindings (fastpath_bpfel.go, fastpath_bpfel.o)
// are generated and committed, so building needs no clang. Regenerate after
// editing bpf/fastpath.bpf.c or dpa-firmware/include (needs clang >= 14 and
// llvm-strip): go generate ./offload/xdp
//
// -mcpu=v3: the cache sets bits with BPF atomic OR (Linux >= 5.12).
// fastpath_bpfel.sources records the SHA-256 of the C inputs the object was
// built from; TestObjectUpToDate fails when they changed since.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -type tr_xdp_config -type tr_xdp_reason fastpath bpf/fastpath.bpf.c -- -mcpu=v3 -Wall -Wextra -Werror -I../../dpa-firmware/include
//go:generate sh -c "sha256sum bpf/fastpath.bpf.c ../../dpa-firmware/include/tr_fastpath.h ../../dpa-firmware/include/tr_cid.h ../../dpa-firmware/include/tr_types.h > fastpath_bpfel.sources"
