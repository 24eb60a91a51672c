/* The cost of a local process CPU-clock read, a thread CPU-clock read and getrusage(RUSAGE_SELF),
 * ns per call (docs/BENCHMARKS.md, "The process CPU clock under shm"). Build: gcc -O2 -o pclk
 * pclk.c; run natively and under `multios emulate --mechanism shm --policy list:FILE --fc 0ns`
 * with FILE naming getppid only (the clock calls local). */
#include <stdio.h>
#include <time.h>
#include <sys/resource.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){ struct timespec ts; struct rusage ru; int n=200000;
 double a=now(); for(int i=0;i<n;i++) clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&ts); double b=now();
 for(int i=0;i<n;i++) clock_gettime(CLOCK_THREAD_CPUTIME_ID,&ts); double c=now();
 for(int i=0;i<n/4;i++) getrusage(RUSAGE_SELF,&ru); double d=now();
 printf("process clock %.0f ns, thread clock %.0f ns, getrusage %.0f ns\n",(b-a)/n*1e9,(c-b)/n*1e9,(d-c)/(n/4)*1e9); return 0;}
