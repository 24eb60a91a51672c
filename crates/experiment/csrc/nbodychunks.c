/* The guest's compute rate beside the LWK's proxy (issue #13, n-body's bimodal LWK runs): ROUNDS
 * chunks of STEPS n-body steps (five bodies, doubles: the work of `n-body.rkt` without its
 * allocation), each timed with the TSC, and a getppid after each chunk as Racket's scheduler makes
 * a call every ≈ 1.8 ms of n-body's compute (STEPS = 12000 is ≈ 1.6 ms here). Prints the median,
 * the 10th and the 90th percentile of the chunks' cycles: the 10th percentile is the rate when
 * nothing preempted the chunk, so it compares natively, beside a spinner, in the LWK with the proxy
 * polling and with it parked, even on a loaded machine. Usage: nbodychunks ROUNDS STEPS. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

typedef struct {
    double x, y, z, vx, vy, vz, m;
} body;

static body b[5] = {{0, 0, 0, 0, 0, 0, 39.47},
                    {4.84, -1.16, -0.10, 0.606, 2.81, -0.02, 0.037},
                    {8.34, 4.12, -0.4, -1.01, 1.82, 0.008, 0.011},
                    {12.89, -15.11, -0.22, 1.08, 0.868, -0.01, 0.0017},
                    {15.37, -25.9, 0.179, 0.979, 0.594, -0.034, 0.002}};

static void advance(double dt) {
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++) {
            double dx = b[i].x - b[j].x, dy = b[i].y - b[j].y, dz = b[i].z - b[j].z;
            double d2 = dx * dx + dy * dy + dz * dz, mag = dt / (d2 * sqrt(d2));
            b[i].vx -= dx * b[j].m * mag, b[i].vy -= dy * b[j].m * mag, b[i].vz -= dz * b[j].m * mag;
            b[j].vx += dx * b[i].m * mag, b[j].vy += dy * b[i].m * mag, b[j].vz += dz * b[i].m * mag;
        }
    for (int i = 0; i < 5; i++)
        b[i].x += dt * b[i].vx, b[i].y += dt * b[i].vy, b[i].z += dt * b[i].vz;
}

static int cmp(const void *a, const void *c) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)c;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 600, steps = argc > 2 ? atoi(argv[2]) : 12000;
    if (rounds < 10)
        rounds = 10;
    uint64_t *t = malloc(sizeof *t * rounds);
    pid_t parent = getppid();
    int wrong = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = __rdtsc();
        for (int s = 0; s < steps; s++)
            advance(0.01);
        t[r] = __rdtsc() - t0;
        wrong += getppid() != parent;
    }
    qsort(t, rounds, sizeof *t, cmp);
    printf("median %lu p10 %lu p90 %lu wrong %d x %.6f\n", (unsigned long)t[rounds / 2],
           (unsigned long)t[rounds / 10], (unsigned long)t[rounds * 9 / 10], wrong, b[0].x);
    return 0;
}
