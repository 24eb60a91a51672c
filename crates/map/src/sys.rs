//! The raw system calls of this crate.

use std::os::fd::{FromRawFd, OwnedFd};

/// pidfd_open(2); `thread` asks for a thread's pidfd (PIDFD_THREAD, Linux 6.9).
pub fn pidfd_open(tid: u32, thread: bool) -> std::io::Result<OwnedFd> {
    const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;
    let flags = if thread { PIDFD_THREAD } else { 0 };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or −1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid as libc::pid_t, flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The CPUs online (at least 1).
pub fn cpus_online() -> u32 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// The page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// A pipe (read end, write end), close-on-exec.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned these descriptors and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The command that runs `command` held: `/bin/sh` waits for a line on descriptor 3 (the read end
/// of `hold`, moved there between fork and exec), then execs the command under the same pid. Spawning
/// returns once the shell runs, so the caller can register the pid (probes, affinity) and then write
/// a line to the other end; the caller drops `hold` after spawning. The shell's own `read` is all that runs before the program.
pub fn held_command(command: &[String], hold: &OwnedFd) -> std::process::Command {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("read -r _ <&3; exec 3<&-; exec \"$@\"")
        .arg("multios-map")
        .args(command);
    let fd = hold.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec and calls only dup2(2), which is
    // async-signal-safe, or fcntl(2) when the descriptor already is 3; either way descriptor 3 is
    // left without close-on-exec, the original keeps it.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself would keep close-on-exec: clear the flag instead
            let r = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// NETLINK_CONNECTOR, the process events' multicast group and the listen operation
/// (linux/connector.h, linux/cn_proc.h).
const NETLINK_CONNECTOR: libc::c_int = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;

/// A socket subscribed to the kernel's process events (fork, exec, comm changes, exit of every
/// process; root or CAP_NET_ADMIN), with a 4 MiB receive buffer so a burst of other processes'
/// events does not overflow it.
pub fn proc_events() -> std::io::Result<OwnedFd> {
    // SAFETY: socket(2) takes integer arguments and returns a new descriptor or −1.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_CONNECTOR,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    let size: libc::c_int = 4 << 20;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live c_int; a failure (no
    // CAP_NET_ADMIN for the forced size) only leaves the default buffer.
    unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    // SAFETY: sockaddr_nl is plain data; all-zero is a valid value that we then fill in.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = CN_IDX_PROC;
    // SAFETY: bind reads a sockaddr_nl of the size given from a live local.
    let r = unsafe {
        libc::bind(
            raw,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // nlmsghdr (16 bytes) + cn_msg (20 bytes) + the operation (4 bytes)
    let mut msg = Vec::with_capacity(40);
    msg.extend_from_slice(&40u32.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes());
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&std::process::id().to_ne_bytes());
    msg.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    msg.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // ack
    msg.extend_from_slice(&4u16.to_ne_bytes()); // len
    msg.extend_from_slice(&0u16.to_ne_bytes()); // flags
    msg.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    // SAFETY: send reads msg.len() bytes from the live vector.
    let n = unsafe { libc::send(raw, msg.as_ptr().cast(), msg.len(), 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Waits up to `timeout_ms` for any of `fds` to be readable; which ones are.
pub fn poll_readable(fds: &[&OwnedFd], timeout_ms: i32) -> std::io::Result<Vec<bool>> {
    use std::os::fd::AsRawFd;
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: poll reads and writes p.len() pollfd entries of the live vector.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}

/// One datagram from `fd` into `buf` without waiting: its length, 0 when none is queued.
/// ENOBUFS (events were lost) is returned as an error of that kind.
pub fn recv_nowait(fd: &OwnedFd, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: recv writes at most buf.len() bytes into the live buffer.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::WouldBlock {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// CLOCK_MONOTONIC in ns (the clock of the kernel's process events).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the live local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Gives the calling thread the lowest real-time priority (SCHED_FIFO 1, reset in children at
/// fork), so that it handles events as soon as they arrive, ahead of the program it places; `false`
/// restores SCHED_OTHER. Fails without CAP_SYS_NICE (the caller goes on at normal priority).
pub fn realtime(on: bool) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(on),
    };
    let policy = if on {
        libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: sched_setscheduler reads one sched_param from the live local; pid 0 is this thread.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
