package reuseport

// The eBPF object and its Go bindings (steer_bpfel.go, steer_bpfel.o) are
// generated and committed, so building needs no clang. Regenerate after
// editing bpf/steer.bpf.c or dpa-firmware/include (needs clang >= 14 and
// llvm-strip): go generate ./offload/reuseport
//
// steer_bpfel.sources records the SHA-256 of the C inputs the object was
// built from; TestObjectUpToDate fails when they changed since.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -type tr_rp_config -type tr_rp_reason steer bpf/steer.bpf.c -- -mcpu=v3 -Wall -Wextra -Werror -I../../dpa-firmware/include
//go:generate sh -c "sha256sum bpf/steer.bpf.c ../../dpa-firmware/include/tr_fastpath.h ../../dpa-firmware/include/tr_cid.h ../../dpa-firmware/include/tr_types.h > steer_bpfel.sources"
