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

/// Why [`spawn_held`] did not start the program.
#[derive(Debug)]
pub enum HeldError<E> {
    /// The fork, the child's set-up or the exec failed.
    Spawn(std::io::Error),
    /// `release` failed: the child was let go without running the program.
    Release(E),
}

/// Spawns `cmd` held between fork and exec: the child (already the program's process, pid and
/// all) tells its pid, then waits in a `pre_exec` hook for one byte on a pipe. `release(pid)` runs
/// meanwhile (the caller registers the pid: probes, affinity); when it returns Ok the byte is
/// written and the child execs the program directly, with its arguments and environment
/// unchanged (no shell in between). When `release` fails, the pipe is closed unwritten and the
/// child exits without running the program. `cmd` is spawned once (the hook stays in it).
///
/// std's `spawn` returns only once the child has exec'd, so it runs on a scoped thread while this
/// one reads the pid and releases the child.
pub fn spawn_held<E>(
    cmd: &mut std::process::Command,
    release: impl FnOnce(u32) -> Result<(), E>,
) -> Result<std::process::Child, HeldError<E>> {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (go_r, go_w) = pipe().map_err(HeldError::Spawn)?;
    let (ready_r, ready_w) = pipe().map_err(HeldError::Spawn)?;
    let fds = HeldFds {
        go_r: go_r.as_raw_fd(),
        go_w: go_w.as_raw_fd(),
        ready_w: ready_w.as_raw_fd(),
    };
    // SAFETY: the hook runs in the child between fork and exec and calls only close(2), getpid(2),
    // write(2) and read(2), which are async-signal-safe, on descriptors that were open in this
    // process when it forked (this function holds them until the spawn has returned); it
    // allocates nothing (its errors are raw OS errors).
    unsafe {
        cmd.pre_exec(move || fds.wait());
    }
    std::thread::scope(|s| {
        let spawner = s.spawn(move || {
            let spawned = cmd.spawn();
            // this process's copies: the pid pipe then ends when the child's copy does
            drop(ready_w);
            drop(go_r);
            spawned
        });
        let mut ready = std::fs::File::from(ready_r);
        let mut pid = [0u8; 4];
        // nothing to read: the child failed before the hook (or there is no child)
        let released = ready
            .read_exact(&mut pid)
            .ok()
            .map(|()| release(u32::from_ne_bytes(pid)));
        let mut go = std::fs::File::from(go_w);
        if let Some(Ok(())) = released {
            // a failed write leaves the child without its byte: it exits and the spawn says why
            let _ = go.write_all(b"g");
        }
        drop(go);
        let spawned = spawner
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawning thread panicked")));
        match (released, spawned) {
            (Some(Err(e)), Ok(mut child)) => {
                // not released, so not exec'd: cannot happen, but leave no child behind
                let _ = child.kill();
                let _ = child.wait();
                Err(HeldError::Release(e))
            }
            (Some(Err(e)), Err(_)) => Err(HeldError::Release(e)),
            (_, Err(e)) => Err(HeldError::Spawn(e)),
            (_, Ok(child)) => Ok(child),
        }
    })
}

/// The child's ends of [`spawn_held`]'s pipes, as raw descriptors.
#[derive(Clone, Copy)]
struct HeldFds {
    go_r: libc::c_int,
    go_w: libc::c_int,
    ready_w: libc::c_int,
}

impl HeldFds {
    /// In the child, between fork and exec (async-signal-safe calls only): tells the parent the
    /// pid, then waits for the byte that lets it exec. The read end is closed by the exec
    /// (close-on-exec).
    fn wait(self) -> std::io::Result<()> {
        let interrupted = || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR);
        // SAFETY: closes this child's copy of the write end (the parent keeps its own), so that
        // the read below ends when the parent closes it unwritten.
        unsafe { libc::close(self.go_w) };
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u32;
        let bytes = pid.to_ne_bytes();
        loop {
            // SAFETY: write reads 4 bytes from the live local array; 4 bytes on a pipe are written
            // whole or not at all.
            let n = unsafe { libc::write(self.ready_w, bytes.as_ptr().cast(), bytes.len()) };
            if n == bytes.len() as isize {
                break;
            }
            if n < 0 && interrupted() {
                continue;
            }
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: this child's copy of the pid pipe's write end, not used again.
        unsafe { libc::close(self.ready_w) };
        let mut byte = 0u8;
        loop {
            // SAFETY: read writes at most one byte into the live local.
            let n = unsafe { libc::read(self.go_r, (&mut byte as *mut u8).cast(), 1) };
            match n {
                1 => return Ok(()),
                // the parent closed the pipe unwritten: do not run the program
                0 => return Err(std::io::Error::from_raw_os_error(libc::ECANCELED)),
                _ if interrupted() => continue,
                _ => return Err(std::io::Error::last_os_error()),
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("multios-map-held-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch");
        d
    }

    #[test]
    fn issue_16_a_held_program_runs_only_once_released() {
        let d = scratch("go");
        let mark = d.join("ran");
        let mut cmd = std::process::Command::new("touch");
        cmd.arg(&mark);
        let mut seen = None;
        let child = spawn_held(&mut cmd, |pid| {
            // the process exists, held before its exec
            std::thread::sleep(std::time::Duration::from_millis(200));
            seen = Some((pid, mark.exists()));
            Ok::<(), ()>(())
        })
        .expect("spawn");
        let pid = child.id();
        let status = child.wait_with_output().expect("wait").status;
        assert!(status.success());
        assert_eq!(
            seen,
            Some((pid, false)),
            "released with the program's pid, before it ran"
        );
        assert!(mark.exists(), "it ran once released");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn issue_16_a_held_program_not_released_never_runs() {
        let d = scratch("no");
        let mark = d.join("ran");
        let mut cmd = std::process::Command::new("touch");
        cmd.arg(&mark);
        let e = spawn_held(&mut cmd, |_| Err("not seeded")).expect_err("not released");
        assert!(matches!(e, HeldError::Release("not seeded")), "{e:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!mark.exists(), "the program did not run");
        // a program that cannot be exec'd: the spawn's own error
        let mut cmd = std::process::Command::new("/nonexistent/prog");
        let e = spawn_held(&mut cmd, |_| Ok::<(), ()>(())).expect_err("no program");
        assert!(
            matches!(&e, HeldError::Spawn(io) if io.kind() == std::io::ErrorKind::NotFound),
            "{e:?}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
