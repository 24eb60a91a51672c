// SPDX-License-Identifier: GPL-2.0 OR MIT
// multios map: the interaction graph of one process tree (issue #12).
//
// BTF tracepoints only. A task is traced when it has an entry in `tasks` (task-local storage): user
// space seeds the root through a pidfd; sched_process_fork gives every child of a traced task one.
// Kernel structures are read with CO-RE (the minimal declarations below carry
// preserve_access_index, libbpf relocates their offsets against the running kernel's BTF).
//
// - sys_enter/sys_exit: per (tid, nr) call counts; for read/write/readv/writev on a pipe, the bytes
//   each thread moved through each pipe (its inode number), so user space pairs writers with readers
//   (inode numbers, unlike kernel addresses, are not reused within a run); futex wakes: the tasks
//   woken; sendto/sendmsg: the destination port named in the call (for unconnected UDP sends).
// - sock_send_length/sock_recv_length (every socket send and receive, whatever the system call):
//   the bytes each thread moved through each socket channel. A UNIX socket's channel is the inode
//   number of the receiving socket (the peer's for a send, its own for a receive); a TCP
//   connection's is (receiver's port, sender's port), the same 4-tuple seen from both ends; UDP's is
//   the receiving port (the connected peer's, or the one the call named, for a send; the socket's own
//   for a receive). Ports, not addresses: on one machine's loopback the port pair names the
//   connection.
// - sched_waking: waker -> wakee counts (and the wakees of a futex wake in flight).
// - signal_generate: sender -> target counts.
// - sched_switch: time on a CPU per thread, and time runnable but waiting for a CPU (from its wake-up,
//   its creation or its preemption to its next switch in); and per CPU the time other tasks ran
//   (neither traced nor the recorder nor idle): the load the run shared its CPUs with.
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
#define KIND_TCP 5
#define KIND_UDP 6
/* Not an edge of the graph: wake-ups (from, to) after which `to` first ran on another CPU than the
 * one `from` woke it on; user space folds them into the wake-up edge (`across`). */
#define KIND_WAKEUP_ACROSS 7

#define IO_NONE 0
#define IO_WRITE 1
#define IO_READ 2
#define IO_FUTEX_WAKE 3

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFIFO 0010000
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MSG_PEEK 2

struct pt_regs {
	unsigned long di;
	unsigned long si;
	unsigned long r8;
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
	unsigned short skc_dport; /* network byte order */
	unsigned short skc_num;   /* host byte order */
	unsigned short skc_family;
} CORE;
struct socket;
struct sock {
	struct sock_common __sk_common;
	struct socket *sk_socket;
	unsigned short sk_protocol;
} CORE;
struct user_msghdr {
	void *msg_name;
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
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)BPF_FUNC_get_smp_processor_id;
static void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, __u64 flags) =
	(void *)BPF_FUNC_task_storage_get;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)BPF_FUNC_get_current_task_btf;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) =
	(void *)BPF_FUNC_probe_read_kernel;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)BPF_FUNC_get_current_comm;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)BPF_FUNC_probe_read_user;

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
	__u32 dport_hint;  /* the port a sendto/sendmsg in flight names (host order; 0: none) */
	__u32 pad;
	__u64 queued;      /* runnable, waiting for a CPU, since (0: not waiting) */
	__u64 wait_ns;     /* time runnable but not on a CPU */
	__u32 woken_by;    /* the traced task that woke this one and it has not run since (0: none) */
	__u32 woken_on;    /* the CPU its waker was on then */
};

/* A node. Layout shared with user space. */
struct node_rec {
	__u32 tgid;
	__u32 ptid;
	__u64 start_ns;
	__u64 end_ns;
	__u64 oncpu_ns;
	char comm[16];
	__u64 wait_ns;
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

/* TCP ports by socket (local port << 16 | peer port, host order): the kernel zeroes a socket's
 * ports when the connection closes (the local port is released), possibly before the last bytes
 * are read; inet_sock_set_state saves them at every state change, while they are still set. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u32);
} tcp_ports SEC(".maps");

/* Per CPU: the last switch's time and the time tasks other than the traced ones, the recorder's
 * and the idle task ran since the probes were attached. Layout shared with user space. */
struct cpu_acct {
	__u64 last;
	__u64 others_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_acct);
} cpu_time SEC(".maps");

/* [0]: the recorder's own process (its threads are not "other load"). Set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} config SEC(".maps");

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

/* Adds `bytes` moved by the current thread through channel `chan` of `kind`. */
static inline __attribute__((always_inline)) void add_flow(__u64 chan, __u32 io, __u32 kind, __u64 bytes)
{
	struct flow_key k = {.chan = chan, .tid = (__u32)bpf_get_current_pid_tgid(), .io_kind = (io << 8) | kind};
	struct flow_val *v = bpf_map_lookup_elem(&flows, &k);
	if (v) {
		__sync_fetch_and_add(&v->bytes, bytes);
		__sync_fetch_and_add(&v->calls, 1);
	} else {
		struct flow_val nv = {.bytes = bytes, .calls = 1};
		bpf_map_update_elem(&flows, &k, &nv, BPF_NOEXIST);
	}
}

/* The pipe behind descriptor `fd` of the current task (its inode number), 0 when it is not a pipe.
 * Sockets are seen at sock_send_length/sock_recv_length instead, whatever call moved the bytes. */
static inline __attribute__((always_inline)) __u64 pipe_of(unsigned long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = 0;
	struct fdtable *fdt = 0;
	struct file **fds = 0;
	struct file *f = 0;
	struct inode *ino = 0;
	unsigned int max = 0;
	unsigned short mode = 0;
	unsigned long nr = 0;
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
	if ((mode & S_IFMT) != S_IFIFO)
		return 0;
	RD(nr, ino->i_ino);
	return nr;
}

/* The port (host order) of a user-space sockaddr_in/sockaddr_in6, 0 if it is neither. */
static inline __attribute__((always_inline)) __u32 user_port(const void *addr)
{
	unsigned short family = 0, port = 0;
	if (!addr || bpf_probe_read_user(&family, sizeof(family), addr))
		return 0;
	if (family != AF_INET && family != AF_INET6)
		return 0;
	if (bpf_probe_read_user(&port, sizeof(port), (const char *)addr + 2))
		return 0;
	return __builtin_bswap16(port);
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
	s->dport_hint = 0;
	int sending;
	switch (nr) {
	case 1:  /* write */
	case 20: /* writev */
		sending = 1;
		break;
	case 0:  /* read */
	case 19: /* readv */
		sending = 0;
		break;
	case 44: { /* sendto: the destination, for an unconnected UDP socket */
		void *addr = 0;
		RD(addr, regs->r8);
		s->dport_hint = user_port(addr);
		return 0;
	}
	case 46: { /* sendmsg: msg->msg_name */
		struct user_msghdr *msg = 0;
		void *addr = 0;
		RD(msg, regs->si);
		if (msg && !bpf_probe_read_user(&addr, sizeof(addr), &msg->msg_name))
			s->dport_hint = user_port(addr);
		return 0;
	}
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
	__u64 chan = pipe_of(fd);
	if (!chan)
		return 0;
	s->chan = chan;
	s->kind = KIND_PIPE;
	s->io = sending ? IO_WRITE : IO_READ;
	return 0;
}

/* A socket send or receive of `ret` bytes by the current task on `sk`. */
static inline __attribute__((always_inline)) int sock_io(struct sock *sk, long ret, long flags, int sending)
{
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s || !sk || ret <= 0)
		return 0;
	if (!sending && (flags & MSG_PEEK))
		return 0; /* the bytes stay queued and are counted when read */
	unsigned short family = 0;
	RD(family, sk->__sk_common.skc_family);
	__u64 chan = 0;
	__u32 kind;
	if (family == AF_UNIX) {
		kind = KIND_UNIX;
		if (sending) {
			struct sock *peer = 0;
			RD(peer, ((struct unix_sock *)sk)->peer);
			if (!peer)
				return 0;
			sk = peer;
		}
		chan = sock_ino(sk);
	} else if (family == AF_INET || family == AF_INET6) {
		unsigned short proto = 0, num = 0, dport = 0;
		RD(proto, sk->sk_protocol);
		RD(num, sk->__sk_common.skc_num);
		RD(dport, sk->__sk_common.skc_dport);
		__u64 peer = __builtin_bswap16(dport);
		if (proto == IPPROTO_TCP) {
			kind = KIND_TCP;
			if (!peer || !num) {
				__u64 key = (__u64)sk;
				__u32 *saved = bpf_map_lookup_elem(&tcp_ports, &key);
				if (!saved)
					return 0;
				num = *saved >> 16;
				peer = *saved & 0xffff;
			}
			chan = sending ? (peer << 16 | num) : ((__u64)num << 16 | peer);
		} else if (proto == IPPROTO_UDP) {
			kind = KIND_UDP;
			chan = sending ? (s->dport_hint ? s->dport_hint : peer) : num;
		} else {
			return 0;
		}
	} else {
		return 0;
	}
	if (!chan)
		return 0;
	add_flow(chan, sending ? IO_WRITE : IO_READ, kind, (__u64)ret);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int on_tcp_state(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	unsigned short proto = 0, num = 0, dport = 0;
	RD(proto, sk->sk_protocol);
	if (proto != IPPROTO_TCP)
		return 0;
	RD(num, sk->__sk_common.skc_num);
	RD(dport, sk->__sk_common.skc_dport);
	if (!num || !dport)
		return 0;
	__u64 key = (__u64)sk;
	__u32 ports = (__u32)num << 16 | __builtin_bswap16(dport);
	bpf_map_update_elem(&tcp_ports, &key, &ports, BPF_ANY);
	return 0;
}

SEC("tp_btf/sock_send_length")
int on_sock_send(__u64 *ctx)
{
	return sock_io((struct sock *)ctx[0], (long)(int)ctx[1], (long)(int)ctx[2], 1);
}

SEC("tp_btf/sock_recv_length")
int on_sock_recv(__u64 *ctx)
{
	return sock_io((struct sock *)ctx[0], (long)(int)ctx[1], (long)(int)ctx[2], 0);
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
	add_flow(s->chan, io, s->kind, (__u64)ret);
	return 0;
}

SEC("tp_btf/sched_waking")
int on_waking(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	struct task_state *ps = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!ps)
		return 0;
	if (!ps->queued)
		ps->queued = bpf_ktime_get_ns();
	struct task_state *s = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (!s)
		return 0;
	int wakee = 0;
	RD(wakee, p->pid);
	__u32 waker = (__u32)bpf_get_current_pid_tgid();
	if ((__u32)wakee == waker)
		return 0;
	add_edge(waker, (__u32)wakee, KIND_WAKEUP, 1);
	ps->woken_by = waker;
	ps->woken_on = bpf_get_smp_processor_id();
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

/* sched_switch(bool preempt, prev, next, unsigned int prev_state): a prev still runnable (preempted,
 * or yielding: state 0) waits for a CPU from now on; the next one's wait ends. */
SEC("tp_btf/sched_switch")
int on_switch(__u64 *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	unsigned int prev_state = (unsigned int)ctx[3];
	__u64 now = bpf_ktime_get_ns();
	struct task_state *s = bpf_task_storage_get(&tasks, prev, 0, 0);
	__u32 zero = 0;
	struct cpu_acct *acct = bpf_map_lookup_elem(&cpu_time, &zero);
	if (acct) {
		if (!s && acct->last) {
			int pid = 0, tgid = 0;
			RD(pid, prev->pid);
			RD(tgid, prev->tgid);
			__u32 *recorder = bpf_map_lookup_elem(&config, &zero);
			if (pid != 0 && (!recorder || (__u32)tgid != *recorder))
				acct->others_ns += now - acct->last;
		}
		acct->last = now;
	}
	if (s) {
		if (s->since)
			s->oncpu_ns += now - s->since;
		s->since = 0;
		/* a wake-up that found it still on its CPU (on its way to sleep) is not followed by a
		 * switch-in: forget it, so that a later switch-in after a preemption is not taken for it */
		s->woken_by = 0;
		s->queued = (ctx[0] || prev_state == 0) ? now : 0;
	}
	s = bpf_task_storage_get(&tasks, next, 0, 0);
	if (s) {
		if (s->woken_by) {
			if (bpf_get_smp_processor_id() != s->woken_on) {
				int pid = 0;
				RD(pid, next->pid);
				add_edge(s->woken_by, (__u32)pid, KIND_WAKEUP_ACROSS, 1);
			}
			s->woken_by = 0;
		}
		s->since = now;
		if (s->queued && now > s->queued)
			s->wait_ns += now - s->queued;
		s->queued = 0;
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
	struct task_state *cs = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cs)
		return 0;
	cs->queued = bpf_ktime_get_ns(); /* runnable from its creation */
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
	r->wait_ns = s->wait_ns;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
