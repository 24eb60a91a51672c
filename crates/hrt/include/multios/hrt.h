/* multios/hrt.h — split execution (Multiverse's accelerator model) for ordinary Linux processes.
 *
 * A process links against libmultios_hrt.so (or dlopen()s it), calls hrt_init() once, and runs
 * chosen functions on LWK vCPUs in its own address space: the function sees every mapping of the
 * process at its own address, including memory mapped after hrt_init(), from any thread. System
 * calls it makes are served by the thread waiting for it (the caller of hrt_call(), or the partner
 * thread of hrt_invoke_func()). See docs/MULTIVERSE.md in the multios repository.
 */
#ifndef MULTIOS_HRT_H
#define MULTIOS_HRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    HRT_OK = 0,
    HRT_ENOTINIT = -1, /* hrt_init was not called */
    HRT_EINIT = -2,    /* the VM could not start (no /dev/kvm…): see stderr */
    HRT_ESRCH = -3,    /* no such invocation: never made, or already joined */
    HRT_EFAULTED = -4, /* the function faulted; hrt_last_fault() says how */
    HRT_EBUSY = -5,    /* hrt_init was already called */
    HRT_EINVAL = -6,
    HRT_EAGAIN = -7,   /* no thread or vCPU could be started */
    HRT_EFORKED = -8,  /* called in a child of fork(): the VM stayed with the parent */
    HRT_ENESTED = -9,  /* hrt_invoke_func inside a split-executed function */
};

typedef long (*hrt_func_t)(void *arg);
typedef uint64_t hrt_thread_t;

struct hrt_config {
    unsigned int max_vcpus;    /* 0: 8 */
    unsigned int idle_spin_us; /* 0: 2000; an idle vCPU's thread sleeps after this */
    int first_cpu;             /* CPU of vCPU 0; -1: the last CPU the process may use */
    unsigned int quiet;        /* 1: do not print a function's fault on stderr */
    unsigned int keep_affinity;/* 1: leave the calling thread's CPU affinity alone; 0: hrt_init
                                  restricts it to the CPUs no vCPU is pinned to (if any) */
};

struct hrt_fault {
    uint64_t vector;  /* x86 vector: 14 page fault, 13 #GP, 6 #UD, 0 #DE; 0x100 bus error */
    uint64_t error;   /* the exception's error code */
    uint64_t rip;
    uint64_t addr;    /* faulting address (page faults, bus errors) */
    uint64_t mapped;  /* 1: a mapping is there but forbids the access; 0: none is */
};

/* Starts split execution (cfg may be NULL). */
int hrt_init(const struct hrt_config *cfg);
/* Stops the vCPUs. */
int hrt_fini(void);
/* Runs fn(arg) on a vCPU with a partner thread; *t is the handle to join. HRT_ENESTED inside a
   split-executed function (it cannot start threads). */
int hrt_invoke_func(hrt_func_t fn, void *arg, hrt_thread_t *t);
/* Waits for an invocation: its return value in *ret (may be NULL). Each handle joins once. */
int hrt_join(hrt_thread_t t, long *ret);
/* Runs fn(arg) on a resident vCPU and waits for it (a synchronous call). Inside a function that
   split execution runs, fn(arg) is called directly (the caller is on a vCPU already). */
int hrt_call(hrt_func_t fn, void *arg, long *ret);
/* The fault behind this thread's last HRT_EFAULTED. */
int hrt_last_fault(struct hrt_fault *out);
/* Re-reads the process's mappings into the guest's page tables (done lazily anyway). */
int hrt_merge(void);
const char *hrt_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
