/* Fixed-width types for tr_fastpath.h without any libc header.
 *
 * gcc and clang predefine __UINT8_TYPE__ ... __UINT64_TYPE__ on every
 * target we build for (x86-64 and arm64 hosts, bpf, riscv64-unknown-elf),
 * so the shim works where <stdint.h> is missing (BPF objects, the DPA's
 * freestanding toolchain). */
#ifndef TR_TYPES_H
#define TR_TYPES_H

#if !defined(__UINT8_TYPE__) || !defined(__UINT32_TYPE__) || !defined(__UINT64_TYPE__)
#error "tr_types.h needs a compiler that predefines __UINTn_TYPE__ (gcc or clang)"
#endif

typedef __UINT8_TYPE__ tr_u8;
typedef __UINT32_TYPE__ tr_u32;
typedef __UINT64_TYPE__ tr_u64;

#endif /* TR_TYPES_H */
