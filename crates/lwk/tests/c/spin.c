/* Issue #14: a compute loop for `perf record` in the LWK (about 0.2 s). */
#include <stdio.h>

volatile unsigned long sink;

__attribute__((noinline)) static void work(void) {
    for (unsigned long i = 0; i < 200000000ul; i++) sink += i;
}

int main(void) {
    work();
    printf("spin done: %lu\n", sink);
    return 0;
}
