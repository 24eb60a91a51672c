#!/bin/sh
# What a local call costs through the preload library's trampoline (docs/EMULATOR.md "Pass-through
# cost", docs/BENCHMARKS.md): ns per call, native vs the library with the eager interception (SUD
# off) as built, with the trampoline's old `ret` back to the site instead of `jmp *%rcx`, and with
# the lazy interception (SUD on). Policy none (shm), program on CPU 0.
#  - nr N: best of 9 loops of 300 000 inline `syscall`s with rax = N (0 read of fd 0, 110 getppid,
#    500 unassigned: ENOSYS);
#  - rw: best of 9 loops of 200 000 one-byte read(/dev/zero) + write(/dev/null), per call.
# Usage (from the repository root, as root: the trampoline page is at address 0):
#   sh crates/emulate/scripts/trampoline-cost.sh [ROUNDS]
set -eu
src=$(cd "$(dirname "$0")/../csrc" && pwd)
rounds=${1:-3}
w=$(mktemp -d)
cd "$w"
cat > nr.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int c, char **v) {
    long nr = c > 1 ? atol(v[1]) : 110;
    double best = 1e18;
    for (int k = 0; k < 9; k++) {
        double t0 = now();
        for (long i = 0; i < 300000; i++) {
            long r;
            __asm__ volatile("syscall" : "=a"(r) : "a"(nr) : "rcx", "r11", "memory");
        }
        double d = (now() - t0) / 300000;
        if (d < best) best = d;
    }
    printf("%.1f\n", best);
    return 0;
}
C
cat > rw.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(void) {
    int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
    char c;
    double best = 1e18;
    for (int k = 0; k < 9; k++) {
        double t0 = now();
        for (long i = 0; i < 200000; i++) {
            if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1)
                return 1;
        }
        double d = (now() - t0) / 400000;
        if (d < best) best = d;
    }
    printf("%.1f\n", best);
    return 0;
}
C
cc -O2 -o nr nr.c
cc -O2 -o rw rw.c
cp "$src"/preload.h "$src"/x86len.h .
cc -O2 -c -fPIC -o x86len.o "$src/x86len.c"
cc -O2 -c -fPIC -I. -o rewrite.o "$src/rewrite.c"
build() { # $1 name, $2 sed script applied to fast.c
    sed "$2" "$src/fast.c" > fast-$1.c
    cc -O2 -c -fPIC -mgeneral-regs-only -o fast-$1.o fast-$1.c
    cc -O2 -shared -fPIC -fno-delete-null-pointer-checks -o pre-$1.so fast-$1.o x86len.o rewrite.o "$src/preload.c"
}
build as-built 's/^//'
# the fast path's way back as it was: leaq 128(%rsp), %rsp; ret
build ret '/^        "3:\\n"$/,/jmp \*%rcx/{s/"  movq 128(%rsp), %rcx\\n"/"  leaq 128(%rsp), %rsp\\n"/;s/"  leaq 136(%rsp), %rsp\\n"/"  ret\\n"/;s/"  jmp \*%rcx\\n"//}'
printf 'mode shm\nintercept eager\nrewrite 1\ncompute 0\ncontrol 1\n' > eager
printf 'mode shm\nintercept lazy\nrewrite 1\ncompute 0\ncontrol 1\n' > lazy
for r in $(seq "$rounds"); do
    for t in "nr 0" "nr 110" "nr 500" "rw"; do
        set -- $t
        line="$t: native $(taskset -c 0 ./$1 ${2:-})"
        line="$line eager $(MULTIOS_EMU_CONFIG=eager LD_PRELOAD=./pre-as-built.so taskset -c 0 ./$1 ${2:-})"
        line="$line eager-ret $(MULTIOS_EMU_CONFIG=eager LD_PRELOAD=./pre-ret.so taskset -c 0 ./$1 ${2:-})"
        line="$line lazy $(MULTIOS_EMU_CONFIG=lazy LD_PRELOAD=./pre-as-built.so taskset -c 0 ./$1 ${2:-})"
        echo "$line"
    done
done
cd /
rm -rf "$w"
