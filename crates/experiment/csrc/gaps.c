/* The `wakeup` term's microbenchmark (issue #15): N iterations of a busy wait of GAP_NS
 * nanoseconds (clock_gettime, answered by the vDSO without a system call), each followed by a
 * getppid when a third argument is given. Run natively and intercepted, with and without the
 * calls, it measures what one delegated call costs when calls come apart, not back to back. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    long n = atol(argv[1]);
    uint64_t gap = (uint64_t)atol(argv[2]);
    int call = argc > 3;
    volatile uint64_t spins = 0;
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        while (now_ns() - t0 < gap)
            spins++;
        if (call)
            (void)getppid();
    }
    return 0;
}
