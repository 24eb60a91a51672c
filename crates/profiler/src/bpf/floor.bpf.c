// SPDX-License-Identifier: GPL-2.0 OR MIT
// Cost floor of the profiler's probes: programs on the same two tracepoints that do less than the real
// one. Built three times by build.rs: VARIANT 0 returns at once, 1 reads the clock, 2 looks up the
// current task's storage (a miss, like an untraced task). `multios bench profiler --floor` times them.

#include <linux/types.h>
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

struct task_struct;
static __attribute__((unused)) __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __attribute__((unused)) void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, __u64 flags) =
	(void *)BPF_FUNC_task_storage_get;
static __attribute__((unused)) struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)BPF_FUNC_get_current_task_btf;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} floor_tasks SEC(".maps");

volatile __u64 sink;

static inline __attribute__((always_inline)) int body(void)
{
#if VARIANT == 1
	sink = bpf_ktime_get_ns();
#elif VARIANT == 2
	sink = (__u64)bpf_task_storage_get(&floor_tasks, bpf_get_current_task_btf(), 0, 0);
#endif
	return 0;
}

#if VARIANT < 3
SEC("tp_btf/sys_enter")
int floor_enter(__u64 *ctx)
{
	return body();
}
#endif

SEC("tp_btf/sys_exit")
int floor_exit(__u64 *ctx)
{
	return body();
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
