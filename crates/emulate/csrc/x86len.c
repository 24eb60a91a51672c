/* x86-64 instruction-length decoder; see x86len.h. Opcode tables follow the Intel SDM volume 2,
 * appendix A (opcode maps), for 64-bit mode. */
#include "x86len.h"

/* Per-opcode attributes: low nibble = immediate kind, bit 4 = has ModRM, bit 5 = invalid in 64-bit
 * mode, bit 6 = prefix byte (legacy or REX; handled before the tables). */
enum {
    I0 = 0,  /* no immediate */
    IB = 1,  /* 8-bit */
    IW = 2,  /* 16-bit */
    IZ = 3,  /* 16 with 66, else 32 */
    IV = 4,  /* 16 with 66, 64 with REX.W, else 32 (mov r, imm) */
    IWB = 5, /* enter: 16 + 8 */
    IMO = 6, /* moffs: 64, 32 with 67 */
    IG3B = 7, /* group 3 (f6): imm8 when reg is 0 or 1 (test) */
    IG3Z = 8, /* group 3 (f7): immz when reg is 0 or 1 */
    M = 0x10,
    X = 0x20,
};

/* One-byte map. 0x0f, 0x62 (EVEX), 0xc4/0xc5 (VEX), 0x8f (XOP or pop) and prefixes are handled in
 * code before this table is used; their entries here are not read. */
static const uint8_t one[256] = {
    /* 00 */ M, M, M, M, IB, IZ, X, X, M, M, M, M, IB, IZ, X, X,
    /* 10 */ M, M, M, M, IB, IZ, X, X, M, M, M, M, IB, IZ, X, X,
    /* 20 */ M, M, M, M, IB, IZ, X, X, M, M, M, M, IB, IZ, X, X,
    /* 30 */ M, M, M, M, IB, IZ, X, X, M, M, M, M, IB, IZ, X, X,
    /* 40 */ I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0,
    /* 50 */ I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0,
    /* 60 */ X, X, X, M, X, X, X, X, IZ, M | IZ, IB, M | IB, I0, I0, I0, I0,
    /* 70 */ IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB,
    /* 80 */ M | IB, M | IZ, X, M | IB, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 90 */ I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, X, I0, I0, I0, I0, I0,
    /* a0 */ IMO, IMO, IMO, IMO, I0, I0, I0, I0, IB, IZ, I0, I0, I0, I0, I0, I0,
    /* b0 */ IB, IB, IB, IB, IB, IB, IB, IB, IV, IV, IV, IV, IV, IV, IV, IV,
    /* c0 */ M | IB, M | IB, IW, I0, X, X, M | IB, M | IZ, IWB, I0, IW, I0, I0, IB, X, I0,
    /* d0 */ M, M, M, M, X, X, X, I0, M, M, M, M, M, M, M, M,
    /* e0 */ IB, IB, IB, IB, IB, IB, IB, IB, IZ, IZ, X, IB, I0, I0, I0, I0,
    /* f0 */ I0, I0, I0, I0, I0, I0, M | IG3B, M | IG3Z, I0, I0, I0, I0, I0, I0, M, M,
};

/* Two-byte map (0f xx). 0f 38 and 0f 3a are three-byte maps, handled in code. */
static const uint8_t two[256] = {
    /* 00 */ M, M, M, M, X, I0, I0, I0, I0, I0, X, I0, X, M, I0, M | IB,
    /* 10 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 20 */ M, M, M, M, X, X, X, X, M, M, M, M, M, M, M, M,
    /* 30 */ I0, I0, I0, I0, I0, I0, X, I0, X, X, X, X, X, X, X, X,
    /* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 50 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 70 */ M | IB, M | IB, M | IB, M | IB, M, M, M, I0, M, M, X, X, M, M, M, M,
    /* 80 */ IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ, IZ,
    /* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* a0 */ I0, I0, I0, M, M | IB, M, X, X, I0, I0, I0, M, M | IB, M, M, M,
    /* b0 */ M, M, M, M, M, M, M, M, M, M, M | IB, M, M, M, M, M,
    /* c0 */ M, M, M | IB, M, M | IB, M | IB, M | IB, M, I0, I0, I0, I0, I0, I0, I0, I0,
    /* d0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* e0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* f0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
};

/* Where an instruction's ModRM byte is (NULL: none), its base register's extension bit (REX.B, or
 * VEX/EVEX/XOP's inverted B), and a bound on the bytes its memory operand spans (UNBOUNDED: the
 * address is taken, or a state save of CPU-dependent size), for `multios_x86_red_zone`. */
struct x86_mem {
    const uint8_t *modrm;
    int rexb;
    int size;
    int lea;
};
#define UNBOUNDED (-1)

/* Bytes taken by a ModRM byte at q[0] and what it implies (SIB, displacement); 0 if out of bytes. */
static int modrm_len(const uint8_t *q, const uint8_t *end) {
    if (q >= end)
        return 0;
    uint8_t m = q[0];
    int mod = m >> 6, rm = m & 7, n = 1;
    if (mod == 3)
        return 1;
    if (rm == 4) {
        if (q + 1 >= end)
            return 0;
        n++;
        if (mod == 0 && (q[1] & 7) == 5)
            n += 4; /* SIB with no base: disp32 */
    } else if (mod == 0 && rm == 5) {
        n += 4; /* RIP-relative */
    }
    if (mod == 1)
        n += 1;
    else if (mod == 2)
        n += 4;
    return n;
}

/* Immediate size of an opcode in the 0f map of VEX/EVEX/legacy encodings (70-73 shifts and
 * shuffles, c2 cmp, c4-c6 pinsrw/pextrw/shufps). */
static int map1_imm8(uint8_t op) {
    return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6;
}

/* The rest of a VEX/EVEX/XOP instruction: opcode `op` in `map`, then ModRM (always, except the
 * VEX 0f 77 vzeroupper/vzeroall), then an immediate that depends on the map. */
static int vex_tail(const uint8_t *p, const uint8_t *q, const uint8_t *end, int map, int xop,
                    struct x86_mem *mem) {
    if (q >= end)
        return 0;
    uint8_t op = *q++;
    if (!xop && map == 1 && op == 0x77)
        return (int)(q - p);
    mem->modrm = q;
    mem->size = xop ? 32 : 64; /* a ymm (VEX, XOP) or zmm (EVEX) operand at most */
    int n = modrm_len(q, end);
    if (!n)
        return 0;
    q += n;
    int imm = 0;
    if (xop)
        imm = map == 8 ? 1 : map == 0xa ? 4 : 0;
    else if (map == 3)
        imm = 1;
    else if (map == 1)
        imm = map1_imm8(op);
    q += imm;
    if (q > end || q - p > 15)
        return 0;
    return (int)(q - p);
}

static int decode(const uint8_t *p, size_t avail, struct x86_mem *mem) {
    const uint8_t *q = p, *end = p + (avail < 15 ? avail : 15);
    int opsize16 = 0, adsize32 = 0, rexw = 0;
    mem->modrm = NULL;
    mem->rexb = 0;
    mem->size = 8;
    mem->lea = 0;
    /* Legacy prefixes, then at most one REX immediately before the opcode (a REX followed by a
     * legacy prefix is ignored by the CPU: keep scanning). */
    for (;;) {
        if (q >= end)
            return 0;
        uint8_t b = *q;
        if (b == 0x66)
            opsize16 = 1;
        else if (b == 0x67)
            adsize32 = 1;
        else if (b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 ||
                 b == 0x64 || b == 0x65)
            ;
        else if ((b & 0xf0) == 0x40) {
            rexw = (b >> 3) & 1;
            mem->rexb = b & 1;
            q++;
            if (q < end && ((*q & 0xf0) == 0x40 || *q == 0x66 || *q == 0x67 || *q == 0xf0 || *q == 0xf2 ||
                            *q == 0xf3 || *q == 0x2e || *q == 0x36 || *q == 0x3e || *q == 0x26 || *q == 0x64 ||
                            *q == 0x65)) {
                rexw = 0;
                mem->rexb = 0;
                continue;
            }
            break;
        } else
            break;
        q++;
    }
    if (q >= end)
        return 0;
    uint8_t op = *q++;
    uint8_t attr;
    int map0f = 0;
    if (op == 0x9b && q == p + 1 && q + 1 < end) {
        /* fwait followed by fnstcw/fnstenv/fnstsw/fnsave/fnclex/fninit: objdump (like the assembler
         * that wrote it) reads the pair as one instruction (fstcw, fstenv, fstsw, fsave, fclex, finit). */
        uint8_t x = q[0], m = q[1];
        int reg = (m >> 3) & 7, ismem = (m >> 6) != 3;
        if ((x == 0xd9 && ismem && (reg == 6 || reg == 7)) || (x == 0xdd && ismem && (reg == 6 || reg == 7))) {
            mem->modrm = q + 1;
            mem->size = 108; /* fnsave */
            int n = modrm_len(q + 1, end);
            return n ? 2 + n : 0;
        }
        if ((x == 0xdf && m == 0xe0) || (x == 0xdb && (m == 0xe2 || m == 0xe3)))
            return 3;
    }
    int imm;
    switch (op) {
    case 0xc5: /* VEX, 2 bytes: map 0f */
        if (q >= end)
            return 0;
        return vex_tail(p, q + 1, end, 1, 0, mem);
    case 0xc4: /* VEX, 3 bytes */
        if (q + 1 >= end)
            return 0;
        {
            int map = q[0] & 0x1f;
            if (map < 1 || map > 3)
                return 0;
            mem->rexb = !(q[0] & 0x20);
            return vex_tail(p, q + 2, end, map, 0, mem);
        }
    case 0x62: /* EVEX, 4 bytes */
        if (q + 2 >= end)
            return 0;
        {
            int map = q[0] & 7;
            if (map == 0 || map == 4 || map == 7 || !(q[1] & 4))
                return 0;
            mem->rexb = !(q[0] & 0x20);
            return vex_tail(p, q + 3, end, map, 0, mem);
        }
    case 0x8f: /* XOP (AMD) when ModRM.reg != 0, else pop r/m */
        if (q >= end)
            return 0;
        if ((q[0] & 0x38) != 0) {
            int map = q[0] & 0x1f;
            if (map < 8 || map > 0xa || q + 1 >= end)
                return 0;
            mem->rexb = !(q[0] & 0x20);
            return vex_tail(p, q + 2, end, map, 1, mem);
        }
        attr = M;
        break;
    case 0x0f:
        if (q >= end)
            return 0;
        op = *q++;
        if (op == 0x38 || op == 0x3a) {
            if (q >= end)
                return 0;
            q++; /* the third opcode byte */
            mem->modrm = q;
            mem->size = 16;
            int n = modrm_len(q, end);
            if (!n)
                return 0;
            q += n + (op == 0x3a);
            if (q > end)
                return 0;
            return (int)(q - p);
        }
        attr = two[op];
        map0f = 1;
        break;
    default:
        attr = one[op];
        break;
    }
    if (attr & X)
        return 0;
    const uint8_t *modrm = q;
    if (attr & M) {
        mem->modrm = q;
        if (map0f)
            /* fxsave/xsave (0f ae), xsavec/cmpxchg16b (0f c7): the state's size; else an xmm at most */
            mem->size = op == 0xae || op == 0xc7 ? UNBOUNDED : 16;
        else if (op == 0x8d)
            mem->lea = 1; /* the address is kept: what it points to is not known */
        else if (op >= 0xd8 && op <= 0xdf)
            mem->size = 108; /* x87: fnsave/frstor at most */
        else
            mem->size = 8;
        int n = modrm_len(q, end);
        if (!n)
            return 0;
        q += n;
    }
    switch (attr & 0xf) {
    case IB:
        imm = 1;
        break;
    case IW:
        imm = 2;
        break;
    case IZ:
        imm = opsize16 ? 2 : 4;
        break;
    case IV:
        imm = rexw ? 8 : opsize16 ? 2 : 4;
        break;
    case IWB:
        imm = 3;
        break;
    case IMO:
        imm = adsize32 ? 4 : 8;
        break;
    case IG3B:
        imm = ((*modrm >> 3) & 7) < 2 ? 1 : 0;
        break;
    case IG3Z:
        imm = ((*modrm >> 3) & 7) < 2 ? (opsize16 ? 2 : 4) : 0;
        break;
    default:
        imm = 0;
    }
    /* In 64-bit mode near branches keep a 32-bit displacement under 66 (as Intel CPUs and objdump
     * decode them: compilers emit `66 66 48 e8` for the TLS general-dynamic call). */
    if (imm == 2 && (attr & 0xf) == IZ && 
        (map0f ? (op >= 0x80 && op <= 0x8f) : (op == 0xe8 || op == 0xe9)))
        imm = 4;
    q += imm;
    if (q > end)
        return 0;
    return (int)(q - p);
}

int multios_x86_len(const uint8_t *p, size_t avail) {
    struct x86_mem mem;
    return decode(p, avail, &mem);
}

int multios_x86_red_zone(const uint8_t *p, size_t avail, int *use) {
    struct x86_mem mem;
    int n = decode(p, avail, &mem);
    *use = X86_RZ_NONE;
    if (n <= 0 || !mem.modrm)
        return n;
    const uint8_t *m = mem.modrm, *end = p + n;
    int mod = m[0] >> 6;
    /* A base register needs a SIB byte (rm 4); rsp is base 4 without the B extension (r12 with it).
     * Without a displacement (mod 0) the operand starts at the stack pointer or above. */
    if (mod == 3 || mod == 0 || (m[0] & 7) != 4 || m + 1 >= end)
        return n;
    if ((m[1] & 7) != 4 || mem.rexb)
        return n;
    int32_t d = 0;
    if (mod == 1 && m + 2 < end)
        d = (int8_t)m[2];
    else if (mod == 2 && m + 5 < end)
        d = (int32_t)((uint32_t)m[2] | (uint32_t)m[3] << 8 | (uint32_t)m[4] << 16 | (uint32_t)m[5] << 24);
    /* An EVEX disp8 is scaled by the operand's size: its sign is what matters here. */
    if (d >= 0)
        return n;
    if (mem.lea)
        *use = X86_RZ_ADDRESS;
    else if (mem.size == UNBOUNDED || (int64_t)d + mem.size > -8)
        *use = X86_RZ_TOP;
    return n;
}
