#!/bin/sh
# One-off experiment behind docs/EMULATOR.md "Pass-through cost": what the shm pass-through costs a
# getppid loop (libc syscall()) with the preload library as built (SUD on), without the `lock` on
# the local-call counter, and with SUD turned off in the SIGSYS handler once the loop's site is
# rewritten (so later calls go through the trampoline with SUD off) — the experiment that motivated
# the eager interception (now the default; this script builds the lazy one). Policy none, 10 alternated runs,
# each the best of 7 loops of 1 M calls; prints every run sorted per variant.
# Usage (from the repository root, as root: the trampoline page is at address 0):
#   sh crates/emulate/scripts/sud-off-experiment.sh
set -eu
src=$(cd "$(dirname "$0")/../csrc" && pwd)
w=$(mktemp -d)
cd "$w"
cat > loop.c <<'C'
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(void) {
    double best = 1e18;
    for (int k = 0; k < 7; k++) {
        double t0 = now();
        for (long i = 0; i < 1000000; i++) syscall(SYS_getppid);
        double d = (now() - t0) / 1e6;
        if (d < best) best = d;
    }
    printf("%.1f\n", best);
    return 0;
}
C
cc -O2 -o loop loop.c
cp "$src"/preload.h "$src"/x86len.h .
cc -O2 -c -fPIC -o x86len.o "$src/x86len.c"
cc -O2 -c -fPIC -I. -o rewrite.o "$src/rewrite.c"
build() { # $1 name, $2 fast.c sed, $3 preload.c sed (the lazy interception: no `intercept` line)
    sed "$2" "$src/fast.c" > fast-$1.c
    sed "$3" "$src/preload.c" > preload-$1.c
    cc -O2 -c -fPIC -mgeneral-regs-only -o fast-$1.o fast-$1.c
    cc -O2 -shared -fPIC -fno-delete-null-pointer-checks -o pre-$1.so fast-$1.o x86len.o rewrite.o preload-$1.c
}
off='s|^    if (multios_kind\[nr\] == R_DELEGATED) {|    raw6(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0, 0);\n&|'
build as-built 's/^//' 's/^//'
build no-lock 's/lock incq/incq/' 's/^//'
build sud-off 's/^//' "$off"
build sud-off-no-lock 's/lock incq/incq/' "$off"
printf 'mode shm\nrewrite 1\ncompute 0\ncontrol 1\nidle_ticks 100000000\nlocal 56 435 57 58 59 322 131 130\n' > cfg
for r in 1 2 3 4 5 6 7 8 9 10; do
    echo "native $(taskset -c 0 ./loop)"
    for v in as-built no-lock sud-off sud-off-no-lock; do
        echo "$v $(MULTIOS_EMU_CONFIG=cfg LD_PRELOAD=./pre-$v.so taskset -c 0 ./loop)"
    done
done | sort -k1,1 -k2n | awk '{a[$1] = a[$1] " " $2} END {for (k in a) print k ":" a[k]}' | sort
rm -rf "$w"
