#include <multios/hrt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

static long add_one(void *arg) { long *p = arg; *p += 1; return *p * 2; }
static long sum(void *arg) { unsigned char *b = arg; long s = 0; for (long i = 0; i < (64l << 20); i += 4096) { b[i] = 1; s += b[i]; } return s; }
static long hello(void *arg) { (void)arg; printf("hello from the LWK, pid %d\n", getpid()); fflush(stdout); return 7; }

int main(void) {
    int r = hrt_init(NULL);
    if (r) { fprintf(stderr, "init: %s\n", hrt_strerror(r)); return 1; }
    long x = 41, ret = 0;
    r = hrt_call(add_one, &x, &ret);
    printf("call: r=%d x=%ld ret=%ld\n", r, x, ret);
    unsigned char *big = malloc(64 << 20);
    r = hrt_call(sum, big, &ret);
    printf("big: r=%d ret=%ld\n", r, ret);
    r = hrt_call(hello, NULL, &ret);
    printf("hello: r=%d ret=%ld\n", r, ret);
    hrt_thread_t t;
    r = hrt_invoke_func(add_one, &x, &t);
    r = hrt_join(t, &ret);
    printf("invoke: r=%d x=%ld ret=%ld\n", r, x, ret);
    r = hrt_join(t, &ret);
    printf("join twice: %d\n", r);
    r = hrt_call((hrt_func_t)add_one, (void *)8, &ret);
    struct hrt_fault f; hrt_last_fault(&f);
    printf("fault: r=%d vector=%lu addr=%#lx\n", r, f.vector, f.addr);
    r = hrt_call(add_one, &x, &ret);
    printf("after fault: r=%d ret=%ld\n", r, ret);
    hrt_fini();
    return 0;
}
