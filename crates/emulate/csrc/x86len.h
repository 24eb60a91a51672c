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
/* Red-zone use, for the eager rewriter: a `call` at a `syscall` writes its return address into the
 * 8 bytes under %rsp, which a leaf function may be using (it keeps data below %rsp without moving
 * it). The same length as multios_x86_len; *use says what the instruction's memory operand, if
 * it is %rsp with a negative displacement, may do there: */
enum {
    X86_RZ_NONE = 0,
    X86_RZ_TOP = 1,     /* may read or write some of the 8 bytes under %rsp */
    X86_RZ_ADDRESS = 2, /* lea: takes the address of memory under %rsp (a buffer of unknown size) */
};
int multios_x86_red_zone(const uint8_t *p, size_t avail, int *use) __attribute__((visibility("hidden")));
#endif
