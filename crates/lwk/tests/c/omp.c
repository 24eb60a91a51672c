/* OpenMP: a parallel reduction and a parallel for with a critical section. */
#include <omp.h>
#include <stdio.h>

int main(void) {
    omp_set_num_threads(3);
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 1; i <= 3000000; i++) s += 1.0 / ((double)i * i);
    int hits = 0, nthreads = 0;
#pragma omp parallel
    {
#pragma omp critical
        hits++;
#pragma omp single
        nthreads = omp_get_num_threads();
    }
    printf("sum %.9f hits %d threads %d\n", s, hits, nthreads);
    return 0;
}
