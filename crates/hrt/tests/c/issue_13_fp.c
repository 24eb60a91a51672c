/* The floating-point control state across a split call, compared with a plain call (issue #13,
   found 2026-11-28): the function runs with the caller's rounding modes (SSE and x87), FTZ/DAZ,
   x87 precision and exception flags; what it changes and raises is the caller's afterwards; and
   nothing of it stays on the vCPU for the next caller.

   Usage: issue_13_fp native|split carry|leak. Each line is one check; a plain call (native) and a
   split call must print the same lines. */
#include <multios/hrt.h>
#include <fenv.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

static int split;
static volatile double three = 3.0, tiny = 1e-310, zero = 0.0;
static volatile long double three_l = 3.0L, zero_l = 0.0L;

static long call(hrt_func_t f, void *a) {
    long r;
    if (!split)
        return f(a);
    int e = hrt_call(f, a, &r);
    if (e != HRT_OK) {
        printf("hrt_call: %s\n", hrt_strerror(e));
        exit(2);
    }
    return r;
}

struct thread_call { hrt_func_t f; void *a; long r; };
static void *thread_main(void *p) {
    struct thread_call *c = p;
    c->r = c->f(c->a);
    return NULL;
}

/* hrt_invoke_func + hrt_join, or natively pthread_create + pthread_join. */
static long invoke(hrt_func_t f, void *a) {
    if (split) {
        hrt_thread_t t;
        long r;
        int e = hrt_invoke_func(f, a, &t);
        if (e == HRT_OK)
            e = hrt_join(t, &r);
        if (e != HRT_OK) {
            printf("hrt_invoke_func/hrt_join: %s\n", hrt_strerror(e));
            exit(2);
        }
        return r;
    }
    struct thread_call c = {f, a, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, &c) || pthread_join(t, NULL)) {
        printf("pthread_create failed\n");
        exit(2);
    }
    return c.r;
}

static unsigned x87_cw(void) { uint16_t c; __asm__ volatile("fnstcw %0" : "=m"(c)); return c; }
static unsigned x87_sw(void) { uint16_t s; __asm__ volatile("fnstsw %0" : "=m"(s)); return s; }
static void set_x87_cw(unsigned c) { uint16_t v = (uint16_t)c; __asm__ volatile("fldcw %0" : : "m"(v)); }
static const char *mode(long m) {
    return m == FE_TONEAREST ? "nearest" : m == FE_DOWNWARD ? "down" : m == FE_UPWARD ? "up"
         : m == FE_TOWARDZERO ? "zero" : "?";
}

struct out { uint64_t sse; unsigned char x87[10]; uint64_t denorm; unsigned mxcsr, cw, sw; long flags; };

static void print(const char *what, long r, const struct out *o) {
    printf("%s: ret=%ld sse=%016llx x87=", what, r, (unsigned long long)o->sse);
    for (int i = 9; i >= 0; i--) printf("%02x", o->x87[i]);
    printf(" denorm=%016llx mxcsr=%#x cw=%#x sw_flags=%#x flags=%#lx\n", (unsigned long long)o->denorm,
           o->mxcsr, o->cw, o->sw & 0x7f, o->flags);
}

/* Divides in both units, halves a denormal, and reports what it ran with. */
static long work(void *p) {
    struct out *o = p;
    o->flags = fetestexcept(FE_ALL_EXCEPT); /* the flags it starts with */
    double r = 1.0 / three;
    long double x = 1.0L / three_l;
    double t = tiny * 0.5;
    memcpy(&o->sse, &r, 8);
    memcpy(o->x87, &x, 10);
    memcpy(&o->denorm, &t, 8);
    o->mxcsr = _mm_getcsr();
    o->cw = x87_cw();
    o->sw = x87_sw();
    return fegetround();
}

/* Raises flags in each unit: SSE underflow and inexact, x87 division by zero (all masked). */
static long raise_flags(void *p) {
    (void)p;
    volatile double t = tiny * 0.5;
    volatile long double z = 1.0L / zero_l;
    (void)t; (void)z;
    return 0;
}

/* Changes the rounding mode and FTZ, as a library's set-up function may. */
static long set_up(void *p) {
    (void)p;
    fesetround(FE_UPWARD);
    _mm_setcsr(_mm_getcsr() | 0x8000);
    return fegetround();
}

/* After `work`, the caller's own state, as it now stands. */
static void print_caller(const char *what) {
    printf("%s: caller mode=%s mxcsr=%#x cw=%#x sw_flags=%#x flags=%#x\n", what, mode(fegetround()),
           _mm_getcsr(), x87_cw(), x87_sw() & 0x7f, fetestexcept(FE_ALL_EXCEPT));
}

static void reset(void) {
    fesetenv(FE_DFL_ENV);
    feclearexcept(FE_ALL_EXCEPT);
}

static void carry(void) {
    static const int modes[] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
    struct out o;
    char what[64];
    for (int i = 0; i < 4; i++) {
        reset();
        fesetround(modes[i]);
        memset(&o, 0, sizeof o);
        long r = call(work, &o);
        snprintf(what, sizeof what, "rounding %s", mode(modes[i]));
        print(what, r, &o);
        print_caller(what); /* the flags work raised are the caller's now */
    }
    reset();
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ and DAZ */
    memset(&o, 0, sizeof o);
    print("ftz daz", call(work, &o), &o);
    print_caller("ftz daz");
    reset();
    set_x87_cw((x87_cw() & ~0x300u)); /* x87 precision: 24 bits */
    memset(&o, 0, sizeof o);
    print("x87 single precision", call(work, &o), &o);
    print_caller("x87 single precision");
    reset();
    feraiseexcept(FE_OVERFLOW | FE_DIVBYZERO); /* the caller's flags, seen by the function */
    memset(&o, 0, sizeof o);
    print("caller's flags", call(work, &o), &o);
    reset();
    call(raise_flags, NULL);
    print_caller("flags raised by the function");
    reset();
    fesetround(FE_DOWNWARD); /* an invocation runs as a thread the caller starts would */
    memset(&o, 0, sizeof o);
    print("invocation", invoke(work, &o), &o);
    print_caller("after the invocation");
    reset();
    long r = call(set_up, NULL);
    printf("set_up returned %s\n", mode(r));
    print_caller("after set_up");
    reset();
}

/* Another thread's call, after main's function changed its own state and main reset it. */
static void *other(void *p) {
    struct out *o = p;
    long r = call(work, o);
    print("other thread", r, o);
    print_caller("other thread");
    return NULL;
}

static void leak(void) {
    struct out o;
    reset();
    call(set_up, NULL);
    call(raise_flags, NULL);
    print_caller("main after set_up and raise_flags");
    reset();
    memset(&o, 0, sizeof o);
    pthread_t t;
    if (pthread_create(&t, NULL, other, &o) || pthread_join(t, NULL)) {
        printf("pthread_create failed\n");
        exit(2);
    }
    memset(&o, 0, sizeof o);
    print("main again", call(work, &o), &o);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s native|split carry|leak\n", argv[0]);
        return 2;
    }
    split = strcmp(argv[1], "split") == 0;
    if (split) {
        /* One vCPU: every call of the process runs on it, one after the other. */
        struct hrt_config c = {0};
        c.max_vcpus = 1;
        c.first_cpu = -1;
        int e = hrt_init(&c);
        if (e != HRT_OK) {
            fprintf(stderr, "hrt_init: %s\n", hrt_strerror(e));
            return 2;
        }
    }
    if (strcmp(argv[2], "carry") == 0)
        carry();
    else
        leak();
    fflush(stdout);
    return 0;
}
