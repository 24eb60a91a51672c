/* The configuration block multios hands to its preload library: the C view of
 * crates/preload-abi/src/lib.rs (the contract; read its documentation there). A block is one
 * struct multios_preload_config followed by the u64 cost samples its costs point into.
 * crates/preload-abi/tests/c_layout.rs compiles a program against this header and checks every
 * offset, size and constant against the Rust definition: change both together and bump the
 * version. */
#ifndef MULTIOS_PRELOAD_ABI_H
#define MULTIOS_PRELOAD_ABI_H
#include <stdint.h>

#define MULTIOS_PRELOAD_MAGIC 0x50534f4du /* "MOSP", little-endian */
#define MULTIOS_PRELOAD_VERSION 3u
#define MULTIOS_PRELOAD_NR_MAX 512
#define MULTIOS_PRELOAD_CPU_WORDS 16
#define MULTIOS_PRELOAD_PATH_MAX 512
#define MULTIOS_PRELOAD_REJECT_EXIT 121
#define MULTIOS_PRELOAD_REJECTED_SUFFIX ".rejected"

#define MULTIOS_PRELOAD_MODE_MIGRATE 0u
#define MULTIOS_PRELOAD_MODE_SHM 1u
#define MULTIOS_PRELOAD_INTERCEPT_LAZY 0u
#define MULTIOS_PRELOAD_INTERCEPT_EAGER 1u
#define MULTIOS_PRELOAD_COST_CONSTANT 0u
#define MULTIOS_PRELOAD_COST_EXPONENTIAL 1u
#define MULTIOS_PRELOAD_COST_SAMPLES 2u

struct multios_preload_cost {
    uint32_t kind;     /* MULTIOS_PRELOAD_COST_* */
    uint32_t reserved; /* 0 */
    uint64_t param;    /* ticks (constant) or mean ticks (exponential) */
    uint64_t samples;  /* samples: byte offset of the first from the block's start */
    uint64_t nsamples; /* samples: how many */
};

struct multios_preload_config {
    uint32_t magic;   /* MULTIOS_PRELOAD_MAGIC */
    uint32_t version; /* MULTIOS_PRELOAD_VERSION */
    uint32_t size;    /* sizeof(struct multios_preload_config) */
    uint32_t mode;    /* MULTIOS_PRELOAD_MODE_* */
    uint64_t total;   /* bytes of the block: this struct and the samples */
    uint32_t intercept; /* MULTIOS_PRELOAD_INTERCEPT_* */
    uint32_t timing;    /* 1: time every local call made through the trampoline */
    uint32_t rewrite;   /* 1: rewrite syscall sites */
    uint32_t realtime;  /* 1: SCHED_FIFO delegate threads */
    uint64_t idle_ticks;     /* an idle shm delegate spins this long before it sleeps */
    uint64_t patience_ticks; /* a caller spins this long on its mailbox before it sleeps */
    uint64_t hv_exit_ticks;  /* an idle shm delegate exits to the hypervisor this often; 0: never (v3) */
    uint64_t compute[MULTIOS_PRELOAD_CPU_WORDS]; /* CPU c: bit c % 64 of word c / 64 (cpu_set_t) */
    uint64_t control[MULTIOS_PRELOAD_CPU_WORDS];
    char stats_dir[MULTIOS_PRELOAD_PATH_MAX]; /* NUL-terminated */
    char rewrite_cache[MULTIOS_PRELOAD_PATH_MAX]; /* NUL-terminated; empty: no rewrite cache (v2) */
    uint8_t local_stub[MULTIOS_PRELOAD_NR_MAX]; /* 1: run at a local stub */
    uint8_t delegated[MULTIOS_PRELOAD_NR_MAX];  /* 1: delegated at costs[nr] */
    struct multios_preload_cost costs[MULTIOS_PRELOAD_NR_MAX];
};

_Static_assert(sizeof(struct multios_preload_cost) == 32, "struct multios_preload_cost has no padding");
_Static_assert(sizeof(struct multios_preload_config) % 8 == 0, "samples follow 8-aligned");
#endif
