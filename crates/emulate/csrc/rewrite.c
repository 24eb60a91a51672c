/* Eager rewriting of `syscall` instructions (the SUD-off mode of the preload library, see preload.c
 * and docs/EMULATOR.md "Pass-through cost"): every executable mapping of the process (at start-up,
 * and each new one made by mmap/mprotect with PROT_EXEC) is searched for 0f 05 byte pairs; each is
 * classified with the instruction-length decoder (x86len.c) and rewritten into `call *%rax` (ff d0)
 * only when it is surely a `syscall` instruction:
 *  - the pair lies in an executable ELF section of the mapped file (section headers read from the
 *    file; the vDSO from its in-memory image);
 *  - the function around it is found in .eh_frame (through the .eh_frame_hdr search table, read from
 *    the file), and decoding from the function's first byte lands exactly on the pair with no
 *    undecodable byte on the way (if it steps over the pair, the bytes are inside another
 *    instruction: not a syscall);
 *    The same for a pair at most 64 bytes past the end of a function (decoding on through the gap):
 *    glibc's clone ends its FDE just before the `syscall`;
 *  - a pair farther from every function of .eh_frame: the whole section is swept from its start; the
 *    pair is a syscall if the sweep lands on it and the section decodes without an undecodable
 *    byte (code and data mixed in a section, as OpenSSL's perl-generated assembly does, is not
 *    trusted).
 * Pairs that fail these tests, and pairs in executable memory with no ELF file behind it (JIT code,
 * deleted files), are "unsure": they are left alone and counted (the caller then keeps Syscall User
 * Dispatch on at start-up). Runs single-threaded in the constructor, or in the trampoline's slow
 * path with the program's full register state saved, so it may use ordinary C; it makes its system
 * calls with multios_xsys (not counted, not rewritten).
 * What a mapping of a file was found to hold is kept in the rewrite cache (rwcache.c) when the
 * mapping was fresh; a later mapping with the same key is patched from the entry instead. */
#include "preload.h"
#include "rwcache.h"
#include "x86len.h"
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <emmintrin.h>
#include <sys/syscall.h>

#define MAX_SHDRS 256
#define MAX_SITES 16384

static char maps[1 << 19];
static Elf64_Shdr shdrs[MAX_SHDRS];
static char shstr[16384];
static uint8_t ehhdr[1 << 18];
static uint8_t ehframe[1 << 21];
static uint64_t sure[MAX_SITES], need_sweep[MAX_SITES];

/* The sites of the mapping being classified, as offsets from its start (rec_base), for the rewrite
 * cache; rec_ok drops when they cannot stand for the classification (too many, a failed patch). */
static uint64_t rec[MAX_SITES], nrec, rec_base;
static uint64_t rec_never[MAX_SITES], nrec_never;

/* The sites never to rewrite (uses_red_zone), an open-addressing set of addresses read by the SIGSYS
 * handler (multios_never_rewrite): slots are written once, atomically, under the rewriter's single
 * thread or the trampoline's slow path. Past 3/4 full every site is refused (SUD serves them). */
#define NEVER_SLOTS 8192
static uint64_t never[NEVER_SLOTS];
static uint64_t never_n;
static int never_full;

static uint64_t never_slot(uint64_t a) {
    return (a * 0x9e3779b97f4a7c15ULL) >> 51; /* 13 bits */
}

static void never_add(uint64_t a) {
    if (never_n >= NEVER_SLOTS * 3 / 4) {
        __atomic_store_n(&never_full, 1, __ATOMIC_RELEASE);
        return;
    }
    for (uint64_t i = never_slot(a);; i = (i + 1) % NEVER_SLOTS) {
        uint64_t v = __atomic_load_n(&never[i], __ATOMIC_ACQUIRE);
        if (v == a)
            return;
        if (!v) {
            __atomic_store_n(&never[i], a, __ATOMIC_RELEASE);
            never_n++;
            return;
        }
    }
}

HIDDEN int multios_never_rewrite(uint64_t site) {
    if (__atomic_load_n(&never_full, __ATOMIC_ACQUIRE))
        return 1;
    for (uint64_t i = never_slot(site);; i = (i + 1) % NEVER_SLOTS) {
        uint64_t v = __atomic_load_n(&never[i], __ATOMIC_ACQUIRE);
        if (v == site)
            return 1;
        if (!v)
            return 0;
    }
}
static int recording, rec_ok;

/* Where an ELF image is read from: a file (fd >= 0) or memory (the vDSO). */
struct src {
    int fd;
    const uint8_t *mem;
    uint64_t size;
};

static int rd(const struct src *s, uint64_t off, void *buf, uint64_t len) {
    if (s->fd >= 0) {
        uint64_t got = 0;
        while (got < len) {
            long r = multios_xsys(SYS_pread64, s->fd, (long)((char *)buf + got), (long)(len - got),
                                  (long)(off + got), 0, 0);
            if (r <= 0)
                return 0;
            got += (uint64_t)r;
        }
        return 1;
    }
    if (off > s->size || len > s->size - off)
        return 0;
    memcpy(buf, s->mem + off, len);
    return 1;
}

/* A DWARF EH pointer of encoding `enc` at p (its address `va`); 0 bytes consumed if unsupported. */
static uint64_t enc_ptr(const uint8_t *p, const uint8_t *end, int enc, uint64_t va, uint64_t datarel, int *n) {
    uint64_t v = 0;
    *n = 0;
    if (enc == 0xff)
        return 0;
    switch (enc & 0x0f) {
    case 0x00:
    case 0x04:
    case 0x0c:
        if (end - p < 8)
            return 0;
        memcpy(&v, p, 8);
        *n = 8;
        break;
    case 0x03:
        if (end - p < 4)
            return 0;
        {
            uint32_t x;
            memcpy(&x, p, 4);
            v = x;
        }
        *n = 4;
        break;
    case 0x0b:
        if (end - p < 4)
            return 0;
        {
            int32_t x;
            memcpy(&x, p, 4);
            v = (uint64_t)(int64_t)x;
        }
        *n = 4;
        break;
    case 0x02:
    case 0x0a:
        if (end - p < 2)
            return 0;
        {
            uint16_t x;
            memcpy(&x, p, 2);
            v = (enc & 0x0f) == 0x0a ? (uint64_t)(int64_t)(int16_t)x : x;
        }
        *n = 2;
        break;
    default:
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += va;
        break;
    case 0x30:
        v += datarel;
        break;
    default:
        *n = 0;
    }
    return v;
}

static const uint8_t *uleb(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    int sh = 0;
    while (p < end) {
        uint8_t b = *p++;
        if (sh < 64)
            v |= (uint64_t)(b & 0x7f) << sh;
        sh += 7;
        if (!(b & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

/* The .eh_frame search table of one ELF image, copied from the file (addresses are link-time). */
struct eh {
    int ok;
    uint64_t hdr_va, frame_va, frame_len, count;
    const uint8_t *tab;
};

static void load_eh(const struct src *s, int shnum, struct eh *eh) {
    eh->ok = 0;
    const Elf64_Shdr *h = NULL, *f = NULL;
    for (int i = 0; i < shnum; i++) {
        if (shdrs[i].sh_name >= sizeof shstr)
            continue;
        const char *n = shstr + shdrs[i].sh_name;
        if (!strcmp(n, ".eh_frame_hdr"))
            h = &shdrs[i];
        else if (!strcmp(n, ".eh_frame"))
            f = &shdrs[i];
    }
    if (!h || !f || h->sh_size > sizeof ehhdr || f->sh_size > sizeof ehframe || h->sh_size < 12)
        return;
    if (!rd(s, h->sh_offset, ehhdr, h->sh_size) || !rd(s, f->sh_offset, ehframe, f->sh_size))
        return;
    /* version 1, then the encodings of eh_frame_ptr, fde_count and the table: the table must be
     * datarel sdata4 pairs (what every linker writes), the count udata4. */
    if (ehhdr[0] != 1 || ehhdr[2] != 0x03 || ehhdr[3] != 0x3b)
        return;
    int n;
    enc_ptr(ehhdr + 4, ehhdr + h->sh_size, ehhdr[1], h->sh_addr + 4, h->sh_addr, &n);
    if (!n)
        return;
    uint32_t count;
    memcpy(&count, ehhdr + 4 + n, 4);
    if (4 + (uint64_t)n + 4 + (uint64_t)count * 8 > h->sh_size)
        return;
    eh->tab = ehhdr + 4 + n + 4;
    eh->count = count;
    eh->hdr_va = h->sh_addr;
    eh->frame_va = f->sh_addr;
    eh->frame_len = f->sh_size;
    eh->ok = 1;
}

/* The function [*lo, *hi) (link-time addresses) whose FDE covers `va`: 1; 2 when `va` lies at most
 * 64 bytes past the end of the closest function before it (glibc's clone and clone3 end their FDE
 * just before the `syscall`, so that the child's unwinding stops there); 0 if none. */
static int fde_for(const struct eh *eh, uint64_t va, uint64_t *lo, uint64_t *hi) {
    if (!eh->ok || !eh->count)
        return 0;
    uint64_t a = 0, b = eh->count;
    while (b - a > 1) {
        uint64_t m = (a + b) / 2;
        int32_t loc;
        memcpy(&loc, eh->tab + 8 * m, 4);
        if (eh->hdr_va + (uint64_t)(int64_t)loc <= va)
            a = m;
        else
            b = m;
    }
    int32_t loc, fo;
    memcpy(&loc, eh->tab + 8 * a, 4);
    memcpy(&fo, eh->tab + 8 * a + 4, 4);
    uint64_t fde_va = eh->hdr_va + (uint64_t)(int64_t)fo;
    if (fde_va < eh->frame_va || fde_va - eh->frame_va + 16 > eh->frame_len)
        return 0;
    const uint8_t *fde = ehframe + (fde_va - eh->frame_va), *end = ehframe + eh->frame_len;
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0xffffffff || (uint64_t)(end - fde) < 4 + (uint64_t)len || cie_off > (uint64_t)(fde + 4 - ehframe))
        return 0;
    end = fde + 4 + len;
    const uint8_t *cie = fde + 4 - cie_off, *cend = ehframe + eh->frame_len;
    /* CIE: length, id, version, augmentation, code and data alignment, return register, then the
     * augmentation data, where 'R' gives the FDE pointer encoding. */
    uint32_t clen;
    memcpy(&clen, cie, 4);
    if (clen == 0xffffffff || (uint64_t)(cend - cie) < 4 + (uint64_t)clen)
        return 0;
    cend = cie + 4 + clen;
    const uint8_t *p = cie + 8;
    if (p >= cend)
        return 0;
    int version = *p++;
    const char *aug = (const char *)p;
    while (p < cend && *p)
        p++;
    if (p >= cend)
        return 0;
    p++;
    uint64_t skip;
    if (!(p = uleb(p, cend, &skip)) || !(p = uleb(p, cend, &skip))) /* code align; data align (sleb: same length) */
        return 0;
    if (version == 1)
        p++;
    else if (!(p = uleb(p, cend, &skip)))
        return 0;
    int fenc = 0; /* absptr */
    if (aug[0] == 'z') {
        if (!(p = uleb(p, cend, &skip)))
            return 0;
        for (const char *c = aug + 1; *c && p < cend; c++) {
            if (*c == 'R')
                fenc = *p++;
            else if (*c == 'L')
                p++;
            else if (*c == 'P') {
                int penc = *p++, n;
                enc_ptr(p, cend, penc & 0x0f, 0, 0, &n);
                if (!n)
                    return 0;
                p += n;
            } else if (*c != 'S' && *c != 'B')
                return 0;
        }
    }
    int n1, n2;
    uint64_t begin = enc_ptr(fde + 8, end, fenc, fde_va + 8, eh->hdr_va, &n1);
    if (!n1)
        return 0;
    uint64_t range = enc_ptr(fde + 8 + n1, end, fenc & 0x0f, 0, 0, &n2);
    if (!n2 || va < begin || va - begin >= range + 64)
        return 0;
    *lo = begin;
    *hi = begin + range;
    return va - begin < range ? 1 : 2;
}

/* Writes ff d0 over each of the n sure sites in [lo, hi) (memory addresses), restoring `prot`. */
static uint64_t patch(uint64_t lo, uint64_t hi, int prot, uint64_t n, struct rw_stats *st) {
    if (!n)
        return 0;
    uint64_t a = lo & ~4095UL, b = (hi + 4095) & ~4095UL;
    if (multios_xsys(SYS_mprotect, (long)a, (long)(b - a), prot | PROT_WRITE | PROT_EXEC, 0, 0, 0) != 0) {
        st->unsure += n;
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        volatile uint8_t *s = (volatile uint8_t *)sure[i];
        if (s[0] == 0x0f && s[1] == 0x05) {
            s[1] = 0xd0;
            s[0] = 0xff;
            st->rewritten++;
        }
    }
    multios_xsys(SYS_mprotect, (long)a, (long)(b - a), prot, 0, 0, 0);
    return n;
}

static int exempt(uint64_t a) {
    return (a >= (uint64_t)multios_exempt_begin && a < (uint64_t)multios_fallback_end + 1) || a < 4096;
}

/* The first 0f 05 pair at or after p that ends before `hi`, or NULL: 16 bytes at a time (SSE2;
 * 0x0f is too common a byte for memchr to be quick). */
static uint8_t *next_pair(const uint8_t *p, const uint8_t *hi) {
    const __m128i f = _mm_set1_epi8(0x0f), five = _mm_set1_epi8(0x05);
    while (hi - p >= 17) {
        __m128i a = _mm_loadu_si128((const __m128i *)p), b = _mm_loadu_si128((const __m128i *)(p + 1));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, f), _mm_cmpeq_epi8(b, five)));
        if (m)
            return (uint8_t *)p + __builtin_ctz(m);
        p += 16;
    }
    for (; p + 1 < hi; p++)
        if (p[0] == 0x0f && p[1] == 0x05)
            return (uint8_t *)p;
    return NULL;
}

/* Counts the 0f 05 pairs of [lo, hi) (memory nobody can vouch for). */
static uint64_t count_pairs(const uint8_t *lo, const uint8_t *hi) {
    uint64_t n = 0;
    for (const uint8_t *p = lo; (p = next_pair(p, hi)); p++)
        if (!exempt((uint64_t)p))
            n++;
    return n;
}

/* True when a `call` at the `syscall` at `site` may write over data the function at [f, e) keeps
 * in its red zone (a leaf function uses the bytes under %rsp without moving %rsp; `call *%rax`
 * pushes its return address at -8(%rsp)): an instruction of the function may touch those 8 bytes,
 * an instruction before the site takes the address of memory under %rsp (a buffer the call may
 * read or fill, e.g. `lea -0x18(%rsp),%rsi` for sigaltstack in glibc's __longjmp_chk), or the
 * function cannot be decoded to its end to tell. liburing 2.3 keeps a pointer at -8(%rsp) across
 * io_uring_enter (the program then wrote through the return address: SIGSEGV) and passes the
 * address of a red-zone int to io_uring_register (the eventfd number became half a return
 * address: EBADF). A function's answers are kept for its next site. */
static int uses_red_zone(const uint8_t *f, const uint8_t *site, const uint8_t *e) {
    static const uint8_t *last_f, *last_e, *first_address;
    static int top, whole;
    if (f != last_f || e != last_e) {
        const uint8_t *q = f;
        int use;
        top = 0;
        first_address = NULL;
        while (q < e) {
            int l = multios_x86_red_zone(q, (size_t)(e - q), &use);
            if (l <= 0)
                break;
            if (use == X86_RZ_TOP)
                top = 1;
            else if (use == X86_RZ_ADDRESS && !first_address)
                first_address = q;
            q += l;
        }
        whole = q >= e;
        last_f = f;
        last_e = e;
    }
    return top || !whole || (first_address && first_address < site);
}

/* One executable section at memory [mem, mem+len), linked at `va`. */
static void do_section(uint8_t *mem, uint64_t len, uint64_t va, const struct eh *eh, int prot, struct rw_stats *st) {
    uint64_t ns = 0, nw = 0;
    int64_t bias = (int64_t)((uint64_t)mem - va);
    for (uint8_t *p = mem; (p = next_pair(p, mem + len)); p++) {
        if (exempt((uint64_t)p))
            continue;
        uint64_t lo, hi;
        if (fde_for(eh, (uint64_t)p - (uint64_t)bias, &lo, &hi)) {
            uint8_t *q = (uint8_t *)(lo + (uint64_t)bias), *e = (uint8_t *)(hi + (uint64_t)bias);
            if (e < p + 2)
                e = p + 2; /* past the function's end: decode on through the gap */
            if (q < mem || e > mem + len) {
                st->unsure++;
                continue;
            }
            while (q < p) {
                int l = multios_x86_len(q, (size_t)(e - q));
                if (l <= 0)
                    break;
                q += l;
            }
            if (q == p && uses_red_zone((uint8_t *)(lo + (uint64_t)bias), p, e)) {
                /* The `call` would write over the function's red zone: never rewritten, not even by
                 * the lazy path when the site raises SIGSYS. Not "unsure" (it is a `syscall`): it
                 * does not keep SUD on, which would cost every thread's signal-mask calls a
                 * SIGSYS; where SUD is off, calls made there run natively (the report says so). */
                st->redzone++;
                never_add((uint64_t)p);
                if (recording && nrec_never < MAX_SITES)
                    rec_never[nrec_never++] = (uint64_t)p - rec_base;
                else if (recording)
                    rec_ok = 0;
            } else if (q == p) {
                if (ns < MAX_SITES)
                    sure[ns++] = (uint64_t)p;
                else
                    st->unsure++;
            } else if (q < p) {
                st->unsure++; /* undecodable byte before the pair */
            }
            /* q > p: the pair is inside an instruction */
        } else if (nw < MAX_SITES) {
            need_sweep[nw++] = (uint64_t)p;
        } else {
            st->unsure++;
        }
    }
    if (nw) {
        /* Pairs outside every function: sweep the whole section. */
        uint64_t bad = 0, i = 0, hits = 0;
        static uint64_t hit[MAX_SITES];
        for (uint8_t *q = mem; q < mem + len && i < nw;) {
            while (i < nw && need_sweep[i] < (uint64_t)q)
                i++;
            if (i < nw && need_sweep[i] == (uint64_t)q)
                hit[hits++] = (uint64_t)q;
            int l = multios_x86_len(q, (size_t)(mem + len - q));
            if (l <= 0) {
                bad++;
                l = 1;
            }
            q += l;
        }
        if (!bad) {
            for (uint64_t k = 0; k < hits && ns < MAX_SITES; k++)
                sure[ns++] = hit[k];
        } else {
            st->unsure += hits;
        }
    }
    if (recording) {
        for (uint64_t k = 0; k < ns; k++) {
            if (nrec < MAX_SITES)
                rec[nrec++] = sure[k] - rec_base;
            else
                rec_ok = 0;
        }
    }
    if (ns && !patch((uint64_t)mem, (uint64_t)mem + len, prot, ns, st))
        rec_ok = 0;
}

/* Patches the mapping [start, end) from its rewrite cache entry: 1, or 0 when there is none. */
static int from_cache(const struct rwc_key *k, uint64_t start, uint64_t end, int prot, struct rw_stats *st) {
    uint64_t unsure = 0;
    struct rwc_sites s = {sure, 0, MAX_SITES, rec_never, 0, MAX_SITES};
    long n = multios_rwc_load(k, &s, &unsure);
    if (n < 0)
        return 0;
    for (uint64_t i = 0; i < s.nnever; i++)
        never_add(start + rec_never[i]);
    st->redzone += s.nnever;
    uint64_t m = 0;
    for (long i = 0; i < n; i++)
        if (!exempt(start + sure[i]))
            sure[m++] = start + sure[i];
    patch(start, end, prot, m, st);
    st->unsure += unsure;
    st->cached++;
    return 1;
}

/* One executable mapping [start, end) of file offset `off` (path: a file, "[vdso]" or other). */
static void do_mapping(uint64_t start, uint64_t end, uint64_t off, const char *path, int prot, int fresh,
                       struct rw_stats *st) {
    struct src s = {-1, NULL, 0};
    struct rwc_key key;
    int keyed = 0;
    uint64_t unsure0 = st->unsure;
    if (!strcmp(path, "[vdso]")) {
        s.mem = (const uint8_t *)start;
        s.size = end - start;
        off = 0;
    } else if (path[0] == '/' && !strstr(path, " (deleted)")) {
        s.fd = (int)multios_xsys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
        if (s.fd < 0) {
            st->unsure += count_pairs((const uint8_t *)start, (const uint8_t *)end);
            return;
        }
        keyed = multios_rwc_key(s.fd, off, end - start, &key);
        if (keyed && from_cache(&key, start, end, prot, st)) {
            multios_xsys(SYS_close, s.fd, 0, 0, 0, 0, 0);
            return;
        }
        recording = keyed && fresh;
        rec_ok = 1;
        nrec = 0;
        nrec_never = 0;
        rec_base = start;
    } else {
        if (prot & PROT_READ)
            st->unsure += count_pairs((const uint8_t *)start, (const uint8_t *)end);
        return;
    }
    Elf64_Ehdr e;
    int ok = rd(&s, 0, &e, sizeof e) && !memcmp(e.e_ident, ELFMAG, SELFMAG) && e.e_ident[EI_CLASS] == ELFCLASS64 &&
             e.e_machine == EM_X86_64 && e.e_shentsize == sizeof(Elf64_Shdr) && e.e_shnum > 0 &&
             e.e_shnum <= MAX_SHDRS && rd(&s, e.e_shoff, shdrs, (uint64_t)e.e_shnum * sizeof(Elf64_Shdr));
    if (ok) {
        memset(shstr, 0, sizeof shstr);
        if (e.e_shstrndx < e.e_shnum) {
            uint64_t n = shdrs[e.e_shstrndx].sh_size < sizeof shstr - 1 ? shdrs[e.e_shstrndx].sh_size : sizeof shstr - 1;
            rd(&s, shdrs[e.e_shstrndx].sh_offset, shstr, n);
        }
        struct eh eh = {0, 0, 0, 0, 0, NULL};
        int eh_loaded = 0;
        uint64_t covered = 0;
        for (int i = 0; i < e.e_shnum; i++) {
            const Elf64_Shdr *h = &shdrs[i];
            if (h->sh_type != SHT_PROGBITS || !(h->sh_flags & SHF_EXECINSTR) || !h->sh_size)
                continue;
            if (h->sh_offset < off || h->sh_offset + h->sh_size > off + (end - start))
                continue;
            uint8_t *mem = (uint8_t *)(start + (h->sh_offset - off));
            covered += h->sh_size;
            if (!next_pair(mem, mem + h->sh_size))
                continue;
            if (!eh_loaded) {
                load_eh(&s, e.e_shnum, &eh);
                eh_loaded = 1;
            }
            do_section(mem, h->sh_size, h->sh_addr, &eh, prot, st);
        }
        (void)covered;
    } else {
        st->unsure += count_pairs((const uint8_t *)start, (const uint8_t *)end);
    }
    if (s.fd >= 0)
        multios_xsys(SYS_close, s.fd, 0, 0, 0, 0, 0);
    struct rwc_sites found = {rec, nrec, MAX_SITES, rec_never, nrec_never, MAX_SITES};
    if (recording && rec_ok && multios_rwc_store(&key, &found, st->unsure - unsure0))
        st->stored++;
    recording = 0;
}

static uint64_t hex(const char **p) {
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            return v;
    }
}

HIDDEN void multios_rewrite_range(uint64_t lo, uint64_t hi, int fresh, struct rw_stats *st) {
    int fd = (int)multios_xsys(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0) {
        st->unsure++;
        return;
    }
    uint64_t n = 0;
    for (;;) {
        long r = multios_xsys(SYS_read, fd, (long)(maps + n), (long)(sizeof maps - 1 - n), 0, 0, 0);
        if (r <= 0)
            break;
        n += (uint64_t)r;
        if (n == sizeof maps - 1)
            break;
    }
    multios_xsys(SYS_close, fd, 0, 0, 0, 0, 0);
    maps[n] = 0;
    for (char *line = maps; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl)
            break; /* a truncated last line */
        *nl = 0;
        const char *p = line;
        uint64_t start = hex(&p);
        p++;
        uint64_t end = hex(&p);
        p++;
        int prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) | (p[2] == 'x' ? PROT_EXEC : 0);
        p += 5;
        uint64_t off = hex(&p);
        /* device, inode, then the path after spaces */
        for (int field = 0; field < 2 && *p; field++) {
            while (*p == ' ')
                p++;
            while (*p && *p != ' ')
                p++;
        }
        while (*p == ' ')
            p++;
        if ((prot & PROT_EXEC) && (prot & PROT_READ) && start != 0 && end > lo && start < hi)
            do_mapping(start, end, off, p, prot, fresh, st);
        line = nl + 1;
    }
}
