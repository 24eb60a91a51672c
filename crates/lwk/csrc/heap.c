/* multios LWK function overrides, `malloc` family ("lwk-heap", issue #13; Multiverse §III-D):
 * a separate preloaded object (libmultios_lwk_heap.so), put in the guest's LD_PRELOAD only when
 * the overrides file names malloc, so that a run without it keeps glibc's malloc untouched.
 *
 * What it gains in the LWK: glibc's malloc talks to the kernel as memory comes and goes — brk to
 * grow and shrink the main arena, mmap/munmap for blocks of 128 KiB and more, madvise(DONTNEED)
 * when it trims — and in the LWK each of those edits the guest page tables and gives pages back
 * to the host, which the next allocation faults in again (a KVM shadow fault plus a host fault
 * per page). This allocator takes memory from the LWK in 64 MiB chunks (2 MiB-aligned by the
 * LWK, so backed by 2 MiB pages) and never gives it back: after warm-up, malloc and free make
 * no system call and take no fault. The price: the heap never shrinks.
 *
 * Design: 40 size classes up to 32 KiB; a class's blocks are carved from 64 KiB spans holding
 * that class only (free finds the class from the span, so blocks have no header and any interior
 * pointer — memalign's — maps to its block); a per-thread cache of up to 64 blocks per class in
 * front of a global list per class (a spinlock each). Larger blocks are runs of 4 KiB pages with
 * a 64-byte header, kept on free lists by span count (no coalescing); an allocation takes the
 * first run long enough from its list or a longer one, and splits off the rest when the run lies
 * in one chunk. realloc grows a run in place when it ends where the span allocator goes on, and
 * else moves it to a run half as large again (a buffer grown step by step, a string builder's,
 * moves O(log n) times and leaves reusable runs behind). A chunk starts with its
 * span table; a bitmap of 64 MiB granules says which chunks are ours, so free() hands pointers
 * it does not own (from ld.so's early allocator) to glibc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lwk_syscall.h"

LWK_SYSCALL(sys_mmap, 9)
LWK_SYSCALL(sys_munmap, 11)

#define CHUNK (64ul << 20)
#define SPAN (64ul << 10)
#define SPANS (CHUNK / SPAN)
#define MAX_SMALL 32768ul
#define NCLASS 40
#define CACHE_MAX 64
#define BATCH 32
#define LARGE_HDR 64ul
#define PAGE 4096ul
#define LARGE_BINS 256 /* runs of up to 16 MiB by span count; longer ones share a list */
#define MAGIC 0x6d756c74696f7348ull

enum { SPAN_FREE, SPAN_HEADER, SPAN_SMALL, SPAN_LARGE };

struct chunk {
    unsigned char kind[SPANS];
    unsigned char cls[SPANS];
};

struct large {
    uint64_t magic;
    size_t pages; /* run length */
    uintptr_t base; /* start of the run */
    int fresh; /* never handed out before: reads as zero */
    struct large *next;
};

struct klass {
    volatile int lock;
    void *head;
    unsigned count;
    uintptr_t carve, carve_end;
};

static size_t class_size[NCLASS];
static struct klass classes[NCLASS];
static volatile int span_lock, large_lock;
static uintptr_t cur_chunk, next_span; /* span allocator: bump in the current chunk */
static struct large *large_bins[LARGE_BINS + 1]; /* [n]: runs of n spans; [LARGE_BINS]: longer */
static unsigned char *owned; /* bitmap of 64 MiB granules */

struct tcache {
    void *head[NCLASS];
    unsigned count[NCLASS];
};
static __thread struct tcache tc __attribute__((tls_model("initial-exec")));
static __thread int registered __attribute__((tls_model("initial-exec")));
static pthread_key_t tc_key;
static int keyed;

static void (*real_free)(void *);
static int ready;

static void lock(volatile int *l) {
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) __builtin_ia32_pause();
}
static void unlock(volatile int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static void *map(size_t len) {
    long r = sys_mmap(0, (long)len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return r < 0 && r > -4096 ? NULL : (void *)r;
}

static int ours(const void *p) {
    uintptr_t g = (uintptr_t)p >> 26;
    return owned && g < (1ul << 21) && (owned[g >> 3] >> (g & 7) & 1);
}

/* A new chunk of `len` bytes (a multiple of CHUNK), CHUNK-aligned, registered as ours. */
static struct chunk *new_chunk(size_t len) {
    char *raw = map(len + CHUNK);
    if (!raw) return NULL;
    uintptr_t base = ((uintptr_t)raw + CHUNK - 1) & ~(CHUNK - 1);
    if (base > (uintptr_t)raw) sys_munmap((long)raw, (long)(base - (uintptr_t)raw), 0, 0, 0, 0);
    uintptr_t end = (uintptr_t)raw + len + CHUNK;
    if (end > base + len) sys_munmap((long)(base + len), (long)(end - base - len), 0, 0, 0, 0);
    uintptr_t g = base >> 26;
    __atomic_or_fetch(&owned[g >> 3], (unsigned char)(1u << (g & 7)), __ATOMIC_RELEASE);
    struct chunk *c = (struct chunk *)base;
    c->kind[0] = SPAN_HEADER;
    return c;
}

/* `n` contiguous spans (call with span_lock held). */
static uintptr_t take_spans(size_t n) {
    if (!cur_chunk || next_span + n * SPAN > cur_chunk + CHUNK) {
        struct chunk *c = new_chunk(CHUNK);
        if (!c) return 0;
        cur_chunk = (uintptr_t)c;
        next_span = cur_chunk + SPAN;
    }
    uintptr_t s = next_span;
    next_span += n * SPAN;
    return s;
}

static struct chunk *chunk_of(const void *p) { return (struct chunk *)((uintptr_t)p & ~(CHUNK - 1)); }
static size_t span_index(const void *p) { return ((uintptr_t)p & (CHUNK - 1)) / SPAN; }

static int class_of(size_t n) {
    if (n <= 128) return n ? (int)((n + 15) / 16) - 1 : 0;
    int octave = 63 - __builtin_clzl(n - 1); /* 2^octave < n <= 2^(octave+1) */
    size_t quarter = (1ul << octave) / 4;
    int step = (int)((n - 1 - (1ul << octave)) / quarter); /* 0..3 */
    return 8 + (octave - 7) * 4 + step;
}

/* Refills the global list of class k with a span's worth of blocks (class lock held). */
static int carve(int k) {
    struct klass *c = &classes[k];
    if (c->carve + class_size[k] > c->carve_end) {
        lock(&span_lock);
        uintptr_t s = take_spans(1);
        if (s) {
            chunk_of((void *)s)->kind[span_index((void *)s)] = SPAN_SMALL;
            chunk_of((void *)s)->cls[span_index((void *)s)] = (unsigned char)k;
        }
        unlock(&span_lock);
        if (!s) return 0;
        c->carve = s;
        c->carve_end = s + SPAN;
    }
    for (int i = 0; i < BATCH && c->carve + class_size[k] <= c->carve_end; i++) {
        void *b = (void *)c->carve;
        c->carve += class_size[k];
        *(void **)b = c->head;
        c->head = b;
        c->count++;
    }
    return 1;
}

static void *small_alloc(int k) {
    if (!tc.head[k]) {
        struct klass *c = &classes[k];
        lock(&c->lock);
        if (!c->head && !carve(k)) {
            unlock(&c->lock);
            return NULL;
        }
        for (int i = 0; i < BATCH && c->head; i++) {
            void *b = c->head;
            c->head = *(void **)b;
            c->count--;
            *(void **)b = tc.head[k];
            tc.head[k] = b;
            tc.count[k]++;
        }
        unlock(&c->lock);
        if (!registered && keyed) {
            /* At thread exit the cache goes back to the global lists (flush_cache). */
            registered = 1;
            pthread_setspecific(tc_key, &tc);
        }
    }
    void *b = tc.head[k];
    tc.head[k] = *(void **)b;
    tc.count[k]--;
    return b;
}

/* Gives back half of the thread's cache of class k. */
static void spill(struct tcache *t, int k, unsigned keep) {
    struct klass *c = &classes[k];
    lock(&c->lock);
    while (t->count[k] > keep) {
        void *b = t->head[k];
        t->head[k] = *(void **)b;
        t->count[k]--;
        *(void **)b = c->head;
        c->head = b;
        c->count++;
    }
    unlock(&c->lock);
}

static void small_free(void *block, int k) {
    *(void **)block = tc.head[k];
    tc.head[k] = block;
    if (++tc.count[k] > CACHE_MAX) spill(&tc, k, CACHE_MAX / 2);
}

/* The free list of runs of `pages` pages (a multiple of a span's pages). */
static struct large **bin_of(size_t pages) {
    size_t spans = pages / (SPAN / PAGE);
    return &large_bins[spans < LARGE_BINS ? spans : LARGE_BINS];
}

/* Puts the free run `l` on its list (large_lock held). */
static void bin_put(struct large *l) {
    struct large **bin = bin_of(l->pages);
    l->next = *bin;
    *bin = l;
}

/* A free run of at least `pages` pages (a multiple of a span's) from the lists, the rest of a
 * longer one split off when the run lies in one chunk (a run spanning chunks — a block of more
 * than 64 MiB — has spans past its first chunk's table, where no other block may start). */
static struct large *reuse_run(size_t pages) {
    lock(&large_lock);
    for (struct large **bin = bin_of(pages); bin <= &large_bins[LARGE_BINS]; bin++) {
        for (struct large **p = bin; *p; p = &(*p)->next) {
            struct large *l = *p;
            if (l->pages < pages) continue;
            *p = l->next;
            uintptr_t end = l->base + l->pages * PAGE;
            if (l->pages > pages && (l->base >> 26) == ((end - 1) >> 26)) {
                struct large *t = (struct large *)(l->base + pages * PAGE);
                t->magic = 0;
                t->base = (uintptr_t)t;
                t->pages = l->pages - pages;
                t->fresh = 0;
                bin_put(t);
                l->pages = pages;
            }
            unlock(&large_lock);
            l->fresh = 0;
            return l;
        }
    }
    unlock(&large_lock);
    return NULL;
}

/* A run of at least `pages` pages with its header at the start. */
static struct large *large_run(size_t pages) {
    pages = (pages + SPAN / PAGE - 1) & ~(SPAN / PAGE - 1);
    struct large *r = reuse_run(pages);
    if (r) return r;
    size_t bytes = pages * PAGE;
    uintptr_t base;
    if (bytes <= CHUNK - SPAN) {
        size_t n = (bytes + SPAN - 1) / SPAN;
        lock(&span_lock);
        base = take_spans(n);
        unlock(&span_lock);
        if (!base) return NULL;
        memset(&chunk_of((void *)base)->kind[span_index((void *)base)], SPAN_LARGE, n);
        pages = n * SPAN / PAGE;
    } else {
        size_t len = (bytes + SPAN + CHUNK - 1) & ~(CHUNK - 1);
        struct chunk *c = new_chunk(len);
        if (!c) return NULL;
        base = (uintptr_t)c + SPAN;
        c->kind[1] = SPAN_LARGE;
        pages = (len - SPAN) / PAGE;
    }
    struct large *l = (struct large *)base;
    l->pages = pages;
    l->base = base;
    l->fresh = 1;
    return l;
}

static void *large_alloc(size_t n, size_t align) {
    if (n > (1ul << 46)) return NULL;
    /* Runs start on a span boundary: an alignment past a span's may need up to `align` more. */
    size_t off = (LARGE_HDR + align - 1) & ~(align - 1);
    size_t pages = ((align > SPAN ? align + LARGE_HDR : off) + n + PAGE - 1) / PAGE;
    struct large *run = large_run(pages);
    if (!run) return NULL;
    off = ((run->base + LARGE_HDR + align - 1) & ~(align - 1)) - run->base;
    struct large *h = (struct large *)(run->base + off - LARGE_HDR);
    if (h != run) *h = *run;
    h->magic = MAGIC;
    return (char *)h + LARGE_HDR;
}

static struct large *large_header(void *p) { return (struct large *)((char *)p - LARGE_HDR); }

static void large_free(void *p) {
    struct large *h = large_header(p), run = *h;
    struct large *l = (struct large *)run.base;
    *l = run;
    l->magic = 0;
    lock(&large_lock);
    bin_put(l);
    unlock(&large_lock);
}

/* Grows the large block `p` in place to `n` bytes when its run ends where the span allocator
 * goes on in the current chunk; 1 when it now holds `n` bytes. */
static int large_grow(void *p, size_t n) {
    struct large *h = large_header(p);
    uintptr_t run_end = h->base + h->pages * PAGE;
    if ((uintptr_t)p + n <= run_end) return 1;
    size_t more = ((uintptr_t)p + n - run_end + SPAN - 1) & ~(SPAN - 1);
    int ok = 0;
    lock(&span_lock);
    if (cur_chunk && run_end == next_span && more <= cur_chunk + CHUNK - next_span) {
        memset(&chunk_of((void *)next_span)->kind[span_index((void *)next_span)], SPAN_LARGE, more / SPAN);
        next_span += more;
        h->pages += more / PAGE;
        ok = 1;
    }
    unlock(&span_lock);
    return ok;
}

/* The block of a small pointer (memalign's may point inside it) and its class. */
static void *small_block(void *p, int *k) {
    struct chunk *c = chunk_of(p);
    size_t i = span_index(p);
    *k = c->cls[i];
    uintptr_t span = (uintptr_t)c + i * SPAN;
    return (void *)(span + ((uintptr_t)p - span) / class_size[*k] * class_size[*k]);
}

static void flush_cache(void *t) {
    struct tcache *c = t;
    for (int k = 0; k < NCLASS; k++)
        if (c->count[k]) spill(c, k, 0);
}

static void before_fork(void) {
    for (int k = 0; k < NCLASS; k++) lock(&classes[k].lock);
    lock(&span_lock);
    lock(&large_lock);
}
static void after_fork(void) {
    unlock(&large_lock);
    unlock(&span_lock);
    for (int k = NCLASS - 1; k >= 0; k--) unlock(&classes[k].lock);
}

static int init(void) {
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) return 1;
    static volatile int init_lock;
    lock(&init_lock);
    if (!ready) {
        owned = map((1ul << 21) / 8);
        for (int k = 0; k < 8; k++) class_size[k] = 16 * (size_t)(k + 1);
        for (int o = 7, k = 8; k < NCLASS; o++)
            for (int s = 1; s <= 4; s++) class_size[k++] = (1ul << o) + s * (1ul << o) / 4;
        __atomic_store_n(&ready, owned != NULL, __ATOMIC_RELEASE);
    }
    unlock(&init_lock);
    return ready;
}

__attribute__((constructor)) static void setup(void) {
    init();
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    keyed = pthread_key_create(&tc_key, flush_cache) == 0;
    pthread_atfork(before_fork, after_fork, after_fork);
}

static void *alloc(size_t n, size_t align) {
    /* No block is that large (64 TiB); it also keeps `n + align` below from wrapping. */
    if (n > (1ul << 46)) return NULL;
    if (!init()) return NULL;
    if (align > (1ul << 20)) {
        /* Alignments past 1 MiB (never seen in practice) are glibc's: free() knows them as
         * not ours by their address. */
        void *(*real_memalign)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
        return real_memalign ? real_memalign(align, n) : NULL;
    }
    if (align <= 16 && n <= MAX_SMALL) return small_alloc(class_of(n));
    if (align > 16 && align <= 4096 && n + align <= MAX_SMALL) {
        char *b = small_alloc(class_of(n + align));
        return b ? (void *)(((uintptr_t)b + align - 1) & ~(align - 1)) : NULL;
    }
    return large_alloc(n, align < 16 ? 16 : align);
}

void *malloc(size_t n) {
    void *p = alloc(n, 16);
    if (!p) errno = ENOMEM;
    return p;
}

void free(void *p) {
    if (!p) return;
    if (!ours(p)) {
        if (real_free) real_free(p);
        return;
    }
    if (chunk_of(p)->kind[span_index(p)] == SPAN_SMALL) {
        int k;
        void *b = small_block(p, &k);
        small_free(b, k);
    } else {
        large_free(p);
    }
}

size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    if (!ours(p)) {
        /* glibc's block (from before this object was loaded, or memalign's past 1 MiB). */
        static size_t (*real_usable)(void *);
        if (!real_usable) real_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
        return real_usable ? real_usable(p) : 0;
    }
    if (chunk_of(p)->kind[span_index(p)] == SPAN_SMALL) {
        int k;
        char *b = small_block(p, &k);
        return (size_t)(b + class_size[k] - (char *)p);
    }
    struct large *h = large_header(p);
    return h->base + h->pages * PAGE - (uintptr_t)p;
}

void *calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = alloc(total, 16);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    /* A large run handed out for the first time is fresh memory from the LWK: already zero, and
     * not touching it keeps its pages unfaulted. */
    if (chunk_of(p)->kind[span_index(p)] != SPAN_SMALL && large_header(p)->fresh) return p;
    memset(p, 0, total);
    return p;
}

void *realloc(void *p, size_t n) {
    if (!p) return malloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    size_t have = ours(p) ? malloc_usable_size(p) : 0;
    if (ours(p) && n <= have) return p;
    void *q = NULL;
    if (ours(p) && chunk_of(p)->kind[span_index(p)] != SPAN_SMALL) {
        if (large_grow(p, n)) return p;
        /* Moving: half as large again, so that a buffer grown in steps moves O(log n) times. */
        if (n < (1ul << 45) && n < have + have / 2) q = malloc(have + have / 2);
    }
    if (!q) q = malloc(n);
    if (!q) return NULL;
    if (ours(p)) {
        memcpy(q, p, have);
        free(p);
    } else {
        /* From glibc's allocator (before this object was loaded): its usable size is unknown
         * here, so ask glibc to move it. */
        void *(*real_realloc)(void *, size_t) = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
        free(q);
        return real_realloc ? real_realloc(p, n) : NULL;
    }
    return q;
}

void *reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

void *memalign(size_t align, size_t n) {
    if (align & (align - 1)) {
        errno = EINVAL;
        return NULL;
    }
    void *p = alloc(n, align < 16 ? 16 : align);
    if (!p) errno = ENOMEM;
    return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = alloc(n, align < 16 ? 16 : align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n) { return memalign(PAGE, n); }

void *pvalloc(size_t n) {
    if (n > SIZE_MAX - PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    return memalign(PAGE, n ? (n + PAGE - 1) & ~(PAGE - 1) : PAGE);
}
