/* multios-x86len FILE: prints the address of every instruction the decoder (x86len.c) finds by
 * linear sweep of each executable section of the ELF file FILE, one hex address a line; an
 * undecodable byte prints "bad ADDR" and the sweep goes on at the next byte (as objdump does).
 * tests/issue_4_decoder.rs compares the addresses with objdump -d. */
#include "x86len.h"
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s ELF-FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: read failed\n", argv[1]);
        return 1;
    }
    Elf64_Ehdr *e = (Elf64_Ehdr *)buf;
    if (size < (long)sizeof *e || memcmp(e->e_ident, ELFMAG, SELFMAG) || e->e_ident[EI_CLASS] != ELFCLASS64 ||
        e->e_shoff + (uint64_t)e->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)size) {
        fprintf(stderr, "%s: not a 64-bit ELF file with section headers\n", argv[1]);
        return 1;
    }
    Elf64_Shdr *sh = (Elf64_Shdr *)(buf + e->e_shoff);
    unsigned long n = 0, bad = 0, sys = 0;
    for (int i = 0; i < e->e_shnum; i++) {
        if (sh[i].sh_type != SHT_PROGBITS || !(sh[i].sh_flags & SHF_EXECINSTR))
            continue;
        if (sh[i].sh_offset + sh[i].sh_size > (uint64_t)size)
            continue;
        const unsigned char *s = buf + sh[i].sh_offset;
        uint64_t len = sh[i].sh_size;
        for (uint64_t off = 0; off < len;) {
            int l = multios_x86_len(s + off, len - off);
            if (l <= 0) {
                printf("bad %lx\n", (unsigned long)(sh[i].sh_addr + off));
                bad++;
                off++;
                continue;
            }
            if (l == 2 && s[off] == 0x0f && s[off + 1] == 0x05)
                sys++;
            printf("%lx\n", (unsigned long)(sh[i].sh_addr + off));
            n++;
            off += (uint64_t)l;
        }
    }
    fprintf(stderr, "%s: %lu instructions, %lu undecodable bytes, %lu syscall instructions\n", argv[1], n, bad,
            sys);
    return 0;
}
