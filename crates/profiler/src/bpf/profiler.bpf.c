// SPDX-License-Identifier: GPL-2.0 OR MIT
// multios profiler: per-syscall counts, times and log2 histograms of one process tree.
//
// BTF tracepoints only (kprobes are not available everywhere). A task is traced when it has an
// entry in `tasks` (task-local storage): user space seeds the root task through a pidfd before it
// execs; sched_process_fork gives every child of a traced task its own entry. Untraced tasks pay one
// task-storage lookup per system call.
//
// Per call: sys_enter stamps the entry time and number; sys_exit computes the duration, applies the
// calibrated correction (config[0]: minus the probe bias, plus the untraced kernel entry/exit cost)
// and adds it to the per-CPU per-syscall statistics. Calls that never return (exit, exit_group) are
// closed at sched_process_exit. Per-thread totals are copied into `threads` when the thread exits,
// with the process that forked it and its command name. With config[1] bit 0 set (`--per-process`),
// each call is also added to `proc_calls`, per process (tgid) and number. The lengths the memory
// calls ask for (mmap's and munmap's length, mremap's old and new lengths) are summed per CPU in
// `mem_bytes` at sys_enter, for the projection's `memcalls` term (issue #15): a read or two of the
// caller's saved registers and a per-CPU add, on those three calls only. File-backed mmaps (no
// MAP_ANONYMOUS in the flags) are also counted apart, with their lengths: the LWK maps a file far
// more slowly than anonymous memory.
//
// Refused calls (issue #3): a call refused by the program's own seccomp filter (SECCOMP_RET_ERRNO,
// RET_TRAP, a user-notification answer) never reaches sys_enter, whose tracepoint comes after the
// filter; only sys_exit fires. Such an exit without an entry stamp is counted as a call of the
// number in the caller's saved orig_ax, with its result and time 0 (there is no entry time). The
// first exit of a task that has not entered a call since it was traced (a fork child's return
// from fork, the call a task seeded by `-p` was blocked in: task_state.nr FIRST_EXIT) is not one.
//
// Each exited task's record in `threads` is keyed by its tid and its start (issue #3): a thread
// that calls execve takes the tid of its process's leader, which has just exited and been recorded,
// and a record keyed by tid alone overwrote the leader's (C = 0 and p = 100 % for a program whose
// second thread exec'd). Each record carries the task's wait status as it exits (the group's
// exit code or fatal signal once the process is exiting as a whole, else its own exit code): the
// leader's last one is how a process ended, which `-p` has no other way to learn.
//
// A task's storage is deleted once its exit is recorded in `threads`: an exited task its parent
// has not reaped yet keeps its task_struct, and user space, which reads the live tasks' state in
// place at the end of `-p`, counted it twice.
//
// Images (issue #15): at sched_process_exec of a traced task, the file the kernel ran
// (bprm->interp: the program, or a script's interpreter) is recorded in `execs` with its inode
// and size, keyed by the process and the time; user space reads the ELF's segment sizes back
// (images.rs). With `--per-process`, the executable file mappings (mmap of a file with PROT_EXEC:
// the libraries' text ld.so maps) are counted per process in `proc_code`. The few kernel fields
// read are relocated against the running kernel's BTF (CO-RE: preserve_access_index).
//
// New anonymous memory (issue #15, `--per-process`): at sys_exit, after the call's time is
// taken, each successful mmap of anonymous, private, writable memory that is not a reservation
// or a stack (no MAP_SHARED, MAP_NORESERVE, MAP_STACK, MAP_GROWSDOWN, MAP_HUGETLB) and each
// growth of the break (brk's result less the process's last one, `proc_brk`, forgotten at exec)
// is added to `proc_anon`, per process and log2 bucket of its length: what the LWK populates at
// map time (the filter is the LWK's, crates/lwk/src/syscall/local.rs; ptrace.rs keeps the same).
//
// Gaps (issue #15): at sys_enter, the time since the thread's previous call returned (its first
// call: since its start) is put in a log2 bucket, and at sys_exit the call is counted in that
// bucket of its number's `gaps`: how far apart a program's calls come, which decides whether a
// delegate that idles between calls has gone to sleep (`validate --terms wakeup`). One subtraction
// and one bucket per call, on the state and the statistics already at hand.

#include <linux/types.h>
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

#define MAX_NR 512
#define HIST_BUCKETS 40
#define MAX_THREADS 65536
#define MAX_PROC_CALLS 32768
/* task_state.nr of a task seeded before its exec: ignore it until it calls execve/execveat. */
#define WAIT_EXEC (~0ULL)
/* task_state.nr of a task that has made no call since it was traced (a fork child, a task seeded
 * by `-p`): a sys_exit without an entry is the return of what it was doing then (the child's
 * fork, the call it was blocked in), not a call of its own. The next sys_enter clears it. */
#define FIRST_EXIT (~0ULL - 1)
#define NR_EXECVE 59
#define NR_EXECVEAT 322
#define NR_MMAP 9
#define NR_MUNMAP 11
#define NR_MREMAP 25
#define NR_BRK 12
/* Offset in x86_64's struct pt_regs of orig_ax: the number of the call being made. */
#define PT_REGS_ORIG_AX 120
/* Offsets in x86_64's struct pt_regs of the second and third argument registers (si, dx). */
#define PT_REGS_SI 104
#define PT_REGS_DX 96
/* ... and of the fourth (r10: mmap's flags). */
#define PT_REGS_R10 56
#define MAP_ANONYMOUS_FLAG 0x20
#define PROT_EXEC_FLAG 0x4
#define PROT_WRITE_FLAG 0x2
/* mmap flags that keep a new anonymous range from being populated at map time by the LWK. */
#define NOT_POPULATED_FLAGS (0x01 /* MAP_SHARED */ | 0x100 /* MAP_GROWSDOWN */ | 0x4000 /* MAP_NORESERVE */ | \
			     0x20000 /* MAP_STACK */ | 0x40000 /* MAP_HUGETLB */)
#define ANON_BUCKETS 48
#define MAX_ANON 65536
#define MAX_EXECS 8192
#define MAX_PROCS 16384
#define PATH_LEN 256
/* mem_bytes slots: mmap length, munmap length, mremap old length, mremap new length, file-backed
 * mmap calls, file-backed mmap length. */
#define MEM_SLOTS 6

/* The kernel's task and signal structures, only the fields read for the exit status (CO-RE). */
struct signal_struct {
	unsigned int flags;
	int group_exit_code;
} __attribute__((preserve_access_index));

struct task_struct {
	int exit_code;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

/* signal_struct.flags: the whole thread group is exiting (exit_group, a fatal signal). */
#define SIGNAL_GROUP_EXIT 0x4

/* The kernel's own layouts, only the fields read; libbpf relocates their offsets (CO-RE). */
struct inode {
	unsigned long i_ino;
	long long i_size;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct linux_binprm {
	struct file *file;
	const char *interp;
} __attribute__((preserve_access_index));

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) =
	(void *)BPF_FUNC_map_update_elem;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_delete_elem;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)BPF_FUNC_get_current_pid_tgid;
static void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, __u64 flags) =
	(void *)BPF_FUNC_task_storage_get;
static long (*bpf_task_storage_delete)(void *map, struct task_struct *task) = (void *)BPF_FUNC_task_storage_delete;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)BPF_FUNC_get_current_task_btf;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)BPF_FUNC_get_current_comm;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)BPF_FUNC_probe_read_kernel;
static long (*bpf_probe_read_kernel_str)(void *dst, __u32 size, const void *src) =
	(void *)BPF_FUNC_probe_read_kernel_str;

/* Per task: the call in flight and the thread's totals. Layout shared with user space (bpf.rs). */
struct task_state {
	__u64 entry_ns;   /* 0 when no call is in flight */
	__u64 nr;         /* number of the call in flight; WAIT_EXEC: seeded, not exec'd yet */
	__u64 start_ns;   /* first event of the task (fork, or its first system call) */
	__u64 calls;
	__u64 syscall_ns;
	__u64 ptgid;      /* the process that forked it (its own tgid for a thread); 0: seeded */
	__u64 last_ns;    /* when its previous call returned; 0: none yet */
	__u64 gap;        /* log2 bucket of the time between that return and the call in flight */
};

/* Per system call number, per CPU. Layout shared with user space (bpf.rs). */
struct sc_stats {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 errors;
	__u64 hist[HIST_BUCKETS];
	__u64 gaps[HIST_BUCKETS]; /* log2 buckets of the time since the thread's previous call */
};

/* A thread that exited, keyed by its tid and start. Layouts shared with user space (ebpf.rs). */
struct thread_key {
	__u32 tid;
	__u32 pad;
	__u64 start_ns;
};

struct thread_rec {
	__u32 tgid;
	__u32 ptgid;
	__u64 start_ns;
	__u64 end_ns;
	__u64 calls;
	__u64 syscall_ns;
	char comm[16];
	__s32 status; /* wait(2) status as the task exits (header comment) */
	__u32 pad;
};

/* One process's calls of one number (`--per-process`). Layout shared with user space (bpf.rs). */
struct proc_key {
	__u32 tgid;
	__u32 nr;
};

struct proc_val {
	__u64 count;
	__u64 total_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_NR);
	__type(key, __u32);
	__type(value, struct sc_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, struct thread_key);
	__type(value, struct thread_rec);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_PROC_CALLS);
	__type(key, struct proc_key);
	__type(value, struct proc_val);
} proc_calls SEC(".maps");

/* Σ lengths of the memory calls, per CPU (slots above). Read by user space (ebpf.rs). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MEM_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} mem_bytes SEC(".maps");

/* One exec of a traced process. Layouts shared with user space (ebpf.rs). */
struct exec_key {
	__u32 tgid;
	__u32 pad;
	__u64 ns;
};

struct exec_rec {
	__u64 ino;
	__u64 size;
	char path[PATH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_EXECS);
	__type(key, struct exec_key);
	__type(value, struct exec_rec);
} execs SEC(".maps");

/* Per process (tgid): executable file mappings, [0] calls and [1] Σ length (`--per-process`). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, __u64[2]);
} proc_code SEC(".maps");

/* Per (process, log2 bucket of the length): new anonymous ranges, count and Σ length
 * (`--per-process`); the key and value layouts are proc_calls'. Read by user space (ebpf.rs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ANON);
	__type(key, struct proc_key);
	__type(value, struct proc_val);
} proc_anon SEC(".maps");

/* Per process: its break after its last brk (`--per-process`), to tell a growth's length. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, __u64);
} proc_brk SEC(".maps");

/* config[0]: signed per-call correction in ns (added to every raw duration, result clamped at 0);
 * config[1]: flags, bit 0 = count per process, bit 1 = stopped (count nothing more: user space is
 * reading the statistics and the live tasks' totals, which then agree). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __s64);
} config SEC(".maps");

static inline __attribute__((always_inline)) __u32 log2_bucket(__u64 v)
{
	__u32 r = 0;
	/* floor(log2(v)) for v >= 2, 0 for v <= 1 */
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* The corrected time of the call in flight, stamped at its entry. */
static inline __attribute__((always_inline)) __u64 duration(struct task_state *s, __u64 now)
{
	__u64 raw = now - s->entry_ns;
	__u32 zero = 0;
	__s64 *corr = bpf_map_lookup_elem(&config, &zero);
	__s64 d = (__s64)raw + (corr ? *corr : 0);
	return d > 0 ? (__u64)d : 0;
}

static inline __attribute__((always_inline)) void account(struct task_state *s, __u64 now, __u64 dur, long ret,
							  int returned)
{
	__u32 nr = (__u32)s->nr;
	__u32 one = 1;
	__s64 *flags = bpf_map_lookup_elem(&config, &one);

	s->entry_ns = 0;
	s->last_ns = now;
	/* Stopped (config[1] bit 1): `-p` is reading the counts, which must agree with the tasks'. */
	if (flags && (*flags & 2))
		return;
	s->calls += 1;
	s->syscall_ns += dur;
	if (nr >= MAX_NR)
		return;
	struct sc_stats *st = bpf_map_lookup_elem(&stats, &nr);
	if (!st)
		return;
	if (st->count == 0 || dur < st->min_ns)
		st->min_ns = dur;
	if (dur > st->max_ns)
		st->max_ns = dur;
	st->count += 1;
	st->total_ns += dur;
	if (returned && ret < 0 && ret >= -4095)
		st->errors += 1;
	__u32 b = log2_bucket(dur);
	if (b >= HIST_BUCKETS)
		b = HIST_BUCKETS - 1;
	st->hist[b] += 1;
	__u32 g = (__u32)s->gap;
	if (g >= HIST_BUCKETS)
		g = HIST_BUCKETS - 1;
	st->gaps[g] += 1;
	if (!flags || !(*flags & 1))
		return;
	struct proc_key k = { .tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .nr = nr };
	struct proc_val *v = bpf_map_lookup_elem(&proc_calls, &k);
	if (!v) {
		struct proc_val z = { 0, 0 };
		/* A full table drops the entry; user space notes the miss (count vs the totals). */
		bpf_map_update_elem(&proc_calls, &k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&proc_calls, &k);
		if (!v)
			return;
	}
	v->count += 1;
	v->total_ns += dur;
}

static inline __attribute__((always_inline)) void add_bytes(__u32 slot, const char *regs, __u32 off)
{
	__u64 len = 0;
	if (bpf_probe_read_kernel(&len, sizeof(len), regs + off) != 0)
		return;
	__u64 *b = bpf_map_lookup_elem(&mem_bytes, &slot);
	if (b)
		*b += len;
}

/* An mmap of a file: with PROT_EXEC and `--per-process`, its length is added to the process's
 * executable mappings. */
static inline __attribute__((always_inline)) void add_code(const char *regs)
{
	__u32 one = 1;
	__s64 *flags = bpf_map_lookup_elem(&config, &one);
	__u64 prot = 0, len = 0;
	if (!flags || !(*flags & 1))
		return;
	if (bpf_probe_read_kernel(&prot, sizeof(prot), regs + PT_REGS_DX) != 0 || !(prot & PROT_EXEC_FLAG))
		return;
	if (bpf_probe_read_kernel(&len, sizeof(len), regs + PT_REGS_SI) != 0)
		return;
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 *v = bpf_map_lookup_elem(&proc_code, &tgid);
	if (!v) {
		__u64 z[2] = { 0, 0 };
		bpf_map_update_elem(&proc_code, &tgid, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&proc_code, &tgid);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v[0], 1);
	__sync_fetch_and_add(&v[1], len);
}

static inline __attribute__((always_inline)) void add_anon(__u32 tgid, __u64 len)
{
	__u32 b = log2_bucket(len);
	if (b >= ANON_BUCKETS)
		b = ANON_BUCKETS - 1;
	struct proc_key k = { .tgid = tgid, .nr = b };
	struct proc_val *v = bpf_map_lookup_elem(&proc_anon, &k);
	if (!v) {
		struct proc_val z = { 0, 0 };
		/* A full table drops the range; user space cannot tell, the table is sized for it. */
		bpf_map_update_elem(&proc_anon, &k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&proc_anon, &k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, len);
}

/* After an mmap or brk returned `ret` (header comment: new anonymous memory). */
static inline __attribute__((always_inline)) void note_anon(const char *regs, __u64 nr, long ret)
{
	__u32 one = 1;
	__s64 *flags = bpf_map_lookup_elem(&config, &one);
	if (!flags || !(*flags & 1))
		return;
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	if (nr == NR_BRK) {
		__u64 now_brk = (__u64)ret;
		__u64 *old = bpf_map_lookup_elem(&proc_brk, &tgid);
		if (old) {
			if (now_brk > *old)
				add_anon(tgid, now_brk - *old);
			*old = now_brk;
		} else {
			bpf_map_update_elem(&proc_brk, &tgid, &now_brk, BPF_ANY);
		}
		return;
	}
	if (ret < 0 && ret >= -4095)
		return;
	__u64 len = 0, prot = 0, mflags = 0;
	if (bpf_probe_read_kernel(&len, sizeof(len), regs + PT_REGS_SI) != 0 ||
	    bpf_probe_read_kernel(&prot, sizeof(prot), regs + PT_REGS_DX) != 0 ||
	    bpf_probe_read_kernel(&mflags, sizeof(mflags), regs + PT_REGS_R10) != 0)
		return;
	if (!(mflags & MAP_ANONYMOUS_FLAG) || (mflags & NOT_POPULATED_FLAGS) || !(prot & PROT_WRITE_FLAG))
		return;
	add_anon(tgid, len);
}

SEC("tp_btf/sys_enter")
int on_sys_enter(__u64 *ctx)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	__u64 nr = ctx[1];
	if (s->nr == WAIT_EXEC && nr != NR_EXECVE && nr != NR_EXECVEAT)
		return 0;
	if (nr == NR_MMAP || nr == NR_MUNMAP || nr == NR_MREMAP) {
		/* ctx[0]: the caller's saved registers; the length is the second argument (si).
		 * Read before the entry stamp, so that the call's time does not carry it. */
		const char *regs = (const char *)ctx[0];
		add_bytes(nr == NR_MMAP ? 0 : nr == NR_MUNMAP ? 1 : 2, regs, PT_REGS_SI);
		if (nr == NR_MREMAP)
			add_bytes(3, regs, PT_REGS_DX);
		__u64 flags = MAP_ANONYMOUS_FLAG;
		if (nr == NR_MMAP)
			bpf_probe_read_kernel(&flags, sizeof(flags), regs + PT_REGS_R10);
		if (!(flags & MAP_ANONYMOUS_FLAG)) {
			__u32 calls = 4;
			__u64 *n = bpf_map_lookup_elem(&mem_bytes, &calls);
			if (n)
				*n += 1;
			add_bytes(5, regs, PT_REGS_SI);
			if (nr == NR_MMAP)
				add_code(regs);
		}
	}
	__u64 now = bpf_ktime_get_ns();
	if (!s->start_ns)
		s->start_ns = now;
	__u64 since = s->last_ns ? s->last_ns : s->start_ns;
	s->gap = log2_bucket(now > since ? now - since : 0);
	s->nr = nr;
	s->entry_ns = now;
	return 0;
}

/* A sys_exit without a sys_enter (header comment: refused calls): counted, with time 0. */
static inline __attribute__((always_inline)) void refused(struct task_state *s, const char *regs, long ret)
{
	if (s->nr == WAIT_EXEC)
		return;
	if (s->nr == FIRST_EXIT) {
		s->nr = 0;
		return;
	}
	__u64 nr = 0;
	if (bpf_probe_read_kernel(&nr, sizeof(nr), regs + PT_REGS_ORIG_AX) != 0)
		return;
	__u64 now = bpf_ktime_get_ns();
	if (!s->start_ns)
		s->start_ns = now;
	__u64 since = s->last_ns ? s->last_ns : s->start_ns;
	s->gap = log2_bucket(now > since ? now - since : 0);
	s->nr = nr;
	account(s, now, 0, ret, 1);
}

SEC("tp_btf/sys_exit")
int on_sys_exit(__u64 *ctx)
{
	/* Look up first, so untraced tasks do not pay for the clock; the look-up then falls inside the
	 * measured interval, where the calibrated bias B takes it out again. */
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	if (!s->entry_ns) {
		refused(s, (const char *)ctx[0], (long)ctx[1]);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	account(s, now, duration(s, now), (long)ctx[1], 1);
	/* After the call's time is taken: the arguments are still in the caller's saved registers. */
	if (s->nr == NR_MMAP || s->nr == NR_BRK)
		note_anon((const char *)ctx[0], s->nr, (long)ctx[1]);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int on_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	if (!bpf_task_storage_get(&tasks, parent, 0, 0))
		return 0;
	struct task_state *c = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c) {
		c->start_ns = bpf_ktime_get_ns();
		c->nr = FIRST_EXIT; /* its first sys_exit is its fork's return */
		/* The tracepoint runs in the forking task: its tgid is the child's parent process. */
		c->ptgid = bpf_get_current_pid_tgid() >> 32;
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	/* (struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm); runs in the task that
	 * exec'd, past the point of no return. */
	if (!bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0))
		return 0;
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[2];
	struct exec_key k = {
		.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32),
		.pad = 0,
		.ns = bpf_ktime_get_ns(),
	};
	struct exec_rec r = { 0 };
	const char *interp = 0;
	struct file *f = 0;
	struct inode *ino = 0;
	bpf_probe_read_kernel(&interp, sizeof(interp), &bprm->interp);
	if (interp)
		bpf_probe_read_kernel_str(r.path, sizeof(r.path), interp);
	bpf_probe_read_kernel(&f, sizeof(f), &bprm->file);
	if (f)
		bpf_probe_read_kernel(&ino, sizeof(ino), &f->f_inode);
	if (ino) {
		bpf_probe_read_kernel(&r.ino, sizeof(r.ino), &ino->i_ino);
		bpf_probe_read_kernel(&r.size, sizeof(r.size), &ino->i_size);
	}
	bpf_map_update_elem(&execs, &k, &r, BPF_ANY);
	/* A new image has a new break. */
	bpf_map_delete_elem(&proc_brk, &k.tgid);
	return 0;
}

/* The status wait(2) would give for `t` if it were the last of its process to exit: the group's
 * exit code or fatal signal when the process exits as a whole, else the task's own exit code (the
 * kernel's rule in wait_task_zombie). */
static inline __attribute__((always_inline)) __s32 wait_status(struct task_struct *t)
{
	int code = 0;
	unsigned int flags = 0;
	struct signal_struct *sig = 0;
	bpf_probe_read_kernel(&code, sizeof(code), &t->exit_code);
	bpf_probe_read_kernel(&sig, sizeof(sig), &t->signal);
	if (sig && bpf_probe_read_kernel(&flags, sizeof(flags), &sig->flags) == 0 && (flags & SIGNAL_GROUP_EXIT))
		bpf_probe_read_kernel(&code, sizeof(code), &sig->group_exit_code);
	return code;
}

SEC("tp_btf/sched_process_exit")
int on_exit(__u64 *ctx)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (s->entry_ns)
		account(s, now, duration(s, now), 0, 0); /* exit/exit_group: counted, never returns */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread_rec r = {
		.tgid = (__u32)(pid_tgid >> 32),
		.ptgid = (__u32)s->ptgid,
		.start_ns = s->start_ns ? s->start_ns : now,
		.end_ns = now,
		.calls = s->calls,
		.syscall_ns = s->syscall_ns,
		.status = wait_status(task),
	};
	struct thread_key k = { .tid = (__u32)pid_tgid, .pad = 0, .start_ns = r.start_ns };
	bpf_get_current_comm(r.comm, sizeof(r.comm));
	bpf_map_update_elem(&threads, &k, &r, BPF_ANY);
	/* Recorded: the task is no longer traced. Its storage would otherwise last until it is reaped,
	 * and an exited child its parent had not reaped yet (a zombie) was counted a second time as a
	 * live thread when `-p` ended. */
	bpf_task_storage_delete(&tasks, task);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
