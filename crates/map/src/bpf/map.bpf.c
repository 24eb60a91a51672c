// SPDX-License-Identifier: GPL-2.0 OR MIT
// multios map: the interaction graph of one process tree (issue #12).
//
// BTF tracepoints only. A task is traced when it has an entry in `tasks` (task-local storage): user
// space seeds the root through a pidfd; sched_process_fork gives every child of a traced task one.
// Kernel structures are read with CO-RE (the minimal declarations below carry
// preserve_access_index, libbpf relocates their offsets against the running kernel's BTF).
//
// - sys_enter/sys_exit: per (tid, nr) call counts; for read/write/readv/writev/sendto/recvfrom/
//   sendmsg/recvmsg on a pipe or a UNIX socket, the bytes each thread moved through each channel
//   (a pipe: its inode number; a connected UNIX socket: the inode number of the receiving socket,
//   the peer's for a send, its own for a receive), so user space pairs writers with readers (inode
//   numbers, unlike kernel addresses, are not reused within a run); futex wakes: the tasks woken.
// - sched_waking: waker -> wakee counts (and the wakees of a futex wake in flight).
// - signal_generate: sender -> target counts.
// - sched_switch: time on a CPU per thread.
// - sched_process_fork/exit: the nodes (tid, tgid, parent, comm, times).

#include <linux/types.h>
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define CORE __attribute__((preserve_access_index))

#define MAX_ENTRIES 65536

#define KIND_PIPE 0
#define KIND_UNIX 1
#define KIND_WAKEUP 2
#define KIND_FUTEX 3
#define KIND_SIGNAL 4

#define IO_NONE 0
#define IO_WRITE 1
#define IO_READ 2
#define IO_FUTEX_WAKE 3

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFIFO 0010000
#define AF_UNIX 1

struct pt_regs {
	unsigned long di;
	unsigned long si;
} CORE;
struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
} CORE;
struct file {
	struct inode *f_inode;
	void *private_data;
} CORE;
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} CORE;
struct files_struct {
	struct fdtable *fdt;
} CORE;
struct task_struct {
	int pid;
	int tgid;
	struct files_struct *files;
} CORE;
struct sock_common {
	unsigned short skc_family;
} CORE;
struct socket;
struct sock {
	struct sock_common __sk_common;
	struct socket *sk_socket;
} CORE;
struct socket {
	struct sock *sk;
	struct file *file;
} CORE;
struct unix_sock {
	struct sock *peer;
} CORE;

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) =
	(void *)BPF_FUNC_map_update_elem;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)BPF_FUNC_get_current_pid_tgid;
static void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, __u64 flags) =
	(void *)BPF_FUNC_task_storage_get;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)BPF_FUNC_get_current_task_btf;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) =
	(void *)BPF_FUNC_probe_read_kernel;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)BPF_FUNC_get_current_comm;

#define RD(dst, src) bpf_probe_read_kernel(&(dst), sizeof(dst), &(src))

/* Per task. Layout shared with user space (record/bpf.rs). */
struct task_state {
	__u64 chan;        /* channel of the call in flight */
	__u32 io;          /* IO_* of the call in flight */
	__u32 kind;        /* KIND_PIPE or KIND_UNIX */
	__u32 woken_seen;  /* wakees seen during the futex wake in flight */
	__u32 last_wakee;  /* the last task this one woke through a futex */
	__u64 since;       /* on a CPU since (0: off) */
	__u64 oncpu_ns;
};

/* A node. Layout shared with user space. */
struct node_rec {
	__u32 tgid;
	__u32 ptid;
	__u64 start_ns;
	__u64 end_ns;
	__u64 oncpu_ns;
	char comm[16];
};

struct flow_key {
	__u64 chan;
	__u32 tid;
	__u32 io_kind; /* io << 8 | kind */
};

struct flow_val {
	__u64 bytes;
	__u64 calls;
};

struct edge_key {
	__u32 from;
	__u32 to;
	__u32 kind;
	__u32 pad;
};

struct call_key {
	__u32 tid;
	__u32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_state);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, __u32);
	__type(value, struct node_rec);
} nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct edge_key);
	__type(value, __u64);
} edges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct call_key);
	__type(value, __u64);
} calls SEC(".maps");

static inline __attribute__((always_inline)) void add_edge(__u32 from, __u32 to, __u32 kind, __u64 n)
{
	struct edge_key k = {.from = from, .to = to, .kind = kind};
	__u64 *v = bpf_map_lookup_elem(&edges, &k);
	if (v) {
		__sync_fetch_and_add(v, n);
	} else {
		bpf_map_update_elem(&edges, &k, &n, BPF_NOEXIST);
	}
}

/* The inode number of a socket's inode (0 when detached). */
static inline __attribute__((always_inline)) __u64 sock_ino(struct sock *sk)
{
	struct socket *sock = 0;
	struct file *f = 0;
	struct inode *ino = 0;
	unsigned long nr = 0;
	RD(sock, sk->sk_socket);
	if (!sock)
		return 0;
	RD(f, sock->file);
	if (!f)
		return 0;
	RD(ino, f->f_inode);
	if (!ino)
		return 0;
	RD(nr, ino->i_ino);
	return nr;
}

/* The channel of descriptor `fd` of the current task: 0 when it is neither a pipe nor a UNIX socket. */
static inline __attribute__((always_inline)) __u64 channel(unsigned long fd, int sending, __u32 *kind)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = 0;
	struct fdtable *fdt = 0;
	struct file **fds = 0;
	struct file *f = 0;
	struct inode *ino = 0;
	unsigned int max = 0;
	unsigned short mode = 0;
	RD(files, task->files);
	if (!files)
		return 0;
	RD(fdt, files->fdt);
	if (!fdt)
		return 0;
	RD(max, fdt->max_fds);
	if (fd >= max)
		return 0;
	RD(fds, fdt->fd);
	if (!fds)
		return 0;
	bpf_probe_read_kernel(&f, sizeof(f), fds + fd);
	if (!f)
		return 0;
	RD(ino, f->f_inode);
	if (!ino)
		return 0;
	RD(mode, ino->i_mode);
	if ((mode & S_IFMT) == S_IFIFO) {
		unsigned long nr = 0;
		RD(nr, ino->i_ino);
		*kind = KIND_PIPE;
		return nr;
	}
	if ((mode & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *sock = 0;
	struct sock *sk = 0;
	unsigned short family = 0;
	RD(sock, f->private_data);
	if (!sock)
		return 0;
	RD(sk, sock->sk);
	if (!sk)
		return 0;
	RD(family, sk->__sk_common.skc_family);
	if (family != AF_UNIX)
		return 0;
	*kind = KIND_UNIX;
	if (sending) {
		struct sock *peer = 0;
		RD(peer, ((struct unix_sock *)sk)->peer);
		if (!peer)
			return 0;
		sk = peer;
	}
	return sock_ino(sk);
}

SEC("tp_btf/sys_enter")
int on_sys_enter(__u64 *ctx)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx[0];
	__u64 nr = ctx[1];
	struct call_key ck = {.tid = (__u32)bpf_get_current_pid_tgid(), .nr = (__u32)nr};
	__u64 one = 1;
	__u64 *c = bpf_map_lookup_elem(&calls, &ck);
	if (c)
		__sync_fetch_and_add(c, 1);
	else
		bpf_map_update_elem(&calls, &ck, &one, BPF_NOEXIST);
	s->io = IO_NONE;
	int sending;
	switch (nr) {
	case 1:  /* write */
	case 20: /* writev */
	case 44: /* sendto */
	case 46: /* sendmsg */
		sending = 1;
		break;
	case 0:  /* read */
	case 19: /* readv */
	case 45: /* recvfrom */
	case 47: /* recvmsg */
		sending = 0;
		break;
	case 202: { /* futex */
		unsigned long op = 0;
		RD(op, regs->si);
		op &= ~(128UL | 256UL);
		if (op == 1 || op == 10 || op == 5) { /* WAKE, WAKE_BITSET, WAKE_OP */
			s->io = IO_FUTEX_WAKE;
			s->woken_seen = 0;
		}
		return 0;
	}
	case 454: /* futex_wake */
		s->io = IO_FUTEX_WAKE;
		s->woken_seen = 0;
		return 0;
	default:
		return 0;
	}
	unsigned long fd = 0;
	RD(fd, regs->di);
	__u32 kind = 0;
	__u64 chan = channel(fd, sending, &kind);
	if (!chan)
		return 0;
	s->chan = chan;
	s->kind = kind;
	s->io = sending ? IO_WRITE : IO_READ;
	return 0;
}

SEC("tp_btf/sys_exit")
int on_sys_exit(__u64 *ctx)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s || s->io == IO_NONE)
		return 0;
	long ret = (long)ctx[1];
	__u32 io = s->io;
	s->io = IO_NONE;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (ret <= 0)
		return 0;
	if (io == IO_FUTEX_WAKE) {
		/* woken tasks the scheduler did not report (already running) go to the last known wakee */
		if ((__u64)ret > s->woken_seen && s->last_wakee)
			add_edge(tid, s->last_wakee, KIND_FUTEX, (__u64)ret - s->woken_seen);
		return 0;
	}
	struct flow_key k = {.chan = s->chan, .tid = tid, .io_kind = (io << 8) | s->kind};
	struct flow_val *v = bpf_map_lookup_elem(&flows, &k);
	if (v) {
		__sync_fetch_and_add(&v->bytes, (__u64)ret);
		__sync_fetch_and_add(&v->calls, 1);
	} else {
		struct flow_val nv = {.bytes = (__u64)ret, .calls = 1};
		bpf_map_update_elem(&flows, &k, &nv, BPF_NOEXIST);
	}
	return 0;
}

SEC("tp_btf/sched_waking")
int on_waking(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s || !bpf_task_storage_get(&tasks, p, 0, 0))
		return 0;
	int wakee = 0;
	RD(wakee, p->pid);
	__u32 waker = (__u32)bpf_get_current_pid_tgid();
	if ((__u32)wakee == waker)
		return 0;
	add_edge(waker, (__u32)wakee, KIND_WAKEUP, 1);
	if (s->io == IO_FUTEX_WAKE) {
		add_edge(waker, (__u32)wakee, KIND_FUTEX, 1);
		s->woken_seen += 1;
		s->last_wakee = (__u32)wakee;
	}
	return 0;
}

SEC("tp_btf/signal_generate")
int on_signal(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[2];
	if (!bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0) ||
	    !bpf_task_storage_get(&tasks, p, 0, 0))
		return 0;
	int target = 0;
	RD(target, p->pid);
	add_edge((__u32)bpf_get_current_pid_tgid(), (__u32)target, KIND_SIGNAL, 1);
	return 0;
}

SEC("tp_btf/sched_switch")
int on_switch(__u64 *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	__u64 now = 0;
	struct task_state *s = bpf_task_storage_get(&tasks, prev, 0, 0);
	if (s && s->since) {
		now = bpf_ktime_get_ns();
		s->oncpu_ns += now - s->since;
		s->since = 0;
	}
	s = bpf_task_storage_get(&tasks, next, 0, 0);
	if (s) {
		if (!now)
			now = bpf_ktime_get_ns();
		s->since = now;
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int on_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	if (!bpf_task_storage_get(&tasks, parent, 0, 0))
		return 0;
	if (!bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
		return 0;
	int pid = 0, tgid = 0, ppid = 0;
	RD(pid, child->pid);
	RD(tgid, child->tgid);
	RD(ppid, parent->pid);
	struct node_rec r = {.tgid = (__u32)tgid, .ptid = (__u32)ppid, .start_ns = bpf_ktime_get_ns()};
	__u32 key = (__u32)pid;
	bpf_map_update_elem(&nodes, &key, &r, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int on_exit(__u64 *ctx)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	if (s->since) {
		s->oncpu_ns += now - s->since;
		s->since = now;
	}
	struct node_rec *r = bpf_map_lookup_elem(&nodes, &tid);
	struct node_rec fresh = {.tgid = (__u32)(pid_tgid >> 32), .start_ns = now};
	if (!r) {
		bpf_map_update_elem(&nodes, &tid, &fresh, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&nodes, &tid);
		if (!r)
			return 0;
	}
	r->tgid = (__u32)(pid_tgid >> 32);
	r->end_ns = now;
	r->oncpu_ns = s->oncpu_ns;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
