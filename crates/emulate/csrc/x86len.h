/* x86-64 instruction-length decoder (64-bit mode only): used by the preload library to find the
 * `syscall` instructions (0f 05) of a code section by linear sweep, without mistaking 0f 05 bytes
 * inside other instructions (displacements, immediates, ModRM/SIB bytes) for one. It knows legacy
 * prefixes, REX, VEX (c4/c5), EVEX (62), XOP (8f), the one-byte map and the 0f, 0f 38 and 0f 3a
 * maps; it computes lengths only (no operands). Pure integer code, no libc: it runs inside the
 * trampoline path (compiled with -mgeneral-regs-only). Checked against objdump by
 * tests/issue_4_decoder.rs. */
#ifndef MULTIOS_X86LEN_H
#define MULTIOS_X86LEN_H
#include <stddef.h>
#include <stdint.h>

/* Length (1..15) of the instruction at p (at most `avail` bytes readable), or 0 when the bytes are
 * not a valid 64-bit-mode instruction or run past `avail`. */
int multios_x86_len(const uint8_t *p, size_t avail) __attribute__((visibility("hidden")));
#endif
