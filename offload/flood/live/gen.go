package live

// The eBPF objects and their Go bindings (live_bpfel.go and .o for
// little-endian CPUs, live_bpfeb.go and .o for big-endian ones) are
// generated and committed, so building needs no clang. Regenerate after
// editing bpf/live.bpf.c (needs clang >= 14 and llvm-strip):
// go generate ./offload/flood/live. bpf2go is pinned in go.mod's tool block.
// live.sources records the SHA-256 of the C input the objects were built
// from; TestObjectUpToDate fails when it changed since.
//go:generate go tool bpf2go -target bpfel,bpfeb -type tr_gen_config -type tr_gen_entry -type tr_gen_mode -type tr_gen_counter -type tr_sink_config -type tr_sink_counter live bpf/live.bpf.c -- -O2 -Wall -Wextra -Werror
//go:generate sh -c "sha256sum bpf/live.bpf.c > live.sources"
