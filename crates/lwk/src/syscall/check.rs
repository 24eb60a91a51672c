//! Checks every pointer and length of a delegated call against the application window before the
//! proxy performs it: a pointer outside gets EFAULT, never VMM memory.

use super::layout::{Arg, Len};
use crate::memory::GuestMemory;

pub const EFAULT: i64 = -(libc::EFAULT as i64);
pub const EBADF: i64 = -(libc::EBADF as i64);
pub const EACCES: i64 = -(libc::EACCES as i64);

/// The largest path read from the guest.
const PATH_MAX: usize = 4096;

/// Paths the guest may not open through the proxy: they would reach VMM memory or VMM fds. The
/// name check catches the obvious spellings; [`opened_file_is_forbidden`] checks what an open
/// really reached (symlinks, relative paths).
pub fn forbidden_path(path: &[u8], _vmm_pid: i32) -> bool {
    let p = String::from_utf8_lossy(path);
    let Some(rest) = p.strip_prefix("/proc/").or_else(|| p.strip_prefix("/dev/fd/")) else {
        return false;
    };
    if p.starts_with("/dev/fd/") {
        return rest
            .split('/')
            .next()
            .and_then(|n| n.parse::<i32>().ok())
            .is_none_or(|fd| fd >= 1000);
    }
    // /proc/<self|thread-self|N>/…/{mem,fd,task,map_files,root,cwd}: any task's (the VMM's threads
    // are tasks too, and their ids are not known to the guest's filter).
    let mut parts = rest.split('/').filter(|c| !c.is_empty());
    let Some(task) = parts.next() else { return false };
    if !(task == "self" || task == "thread-self" || task.chars().all(|c| c.is_ascii_digit())) {
        return false;
    }
    parts.any(|c| matches!(c, "mem" | "fd" | "task" | "map_files" | "root" | "cwd" | ".."))
}

/// After an open: true when the new file descriptor reaches something `forbidden_path` forbids
/// (e.g. through a symlink to /proc/<vmm>/mem).
pub fn opened_file_is_forbidden(fd: i64) -> bool {
    match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
        Ok(target) => {
            use std::os::unix::ffi::OsStrExt;
            let t = target.as_os_str().as_bytes();
            t.starts_with(b"/proc/") && forbidden_path(t, 0)
        }
        Err(_) => false,
    }
}

/// Resolves a length specification.
fn length(mem: &GuestMemory, a: &[u64; 6], len: Len) -> Result<u64, i64> {
    Ok(match len {
        Len::Arg(i) => a[i],
        Len::Fixed(n) => n,
        Len::ArgTimes(i, n) => a[i].checked_mul(n).ok_or(EFAULT)?,
        Len::DerefU32(i) => {
            if a[i] == 0 {
                0
            } else if mem.in_app(a[i], 4) {
                let mut b = [0u8; 4];
                mem.read(a[i], &mut b);
                u32::from_le_bytes(b) as u64
            } else {
                return Err(EFAULT);
            }
        }
    })
}

fn buf(mem: &GuestMemory, addr: u64, len: u64, optional: bool) -> Result<(), i64> {
    if addr == 0 && (optional || len == 0) {
        return Ok(());
    }
    if len == 0 {
        // A zero-length buffer is never dereferenced, but an address outside stays suspicious.
        return if mem.in_app(addr, 1) || addr == 0 {
            Ok(())
        } else {
            Err(EFAULT)
        };
    }
    if mem.in_app(addr, len) {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

fn path(mem: &GuestMemory, addr: u64, optional: bool, vmm_pid: i32) -> Result<(), i64> {
    if addr == 0 && optional {
        return Ok(());
    }
    let p = mem.read_cstr(addr, PATH_MAX).ok_or(EFAULT)?;
    if forbidden_path(&p, vmm_pid) {
        return Err(EACCES);
    }
    Ok(())
}

/// Checks the arguments `a` of a call with layout `layout`; Err holds the negative errno to return.
pub fn check(
    mem: &GuestMemory,
    layout: &[Arg],
    a: &[u64; 6],
    fd_floor: i32,
    vmm_pid: i32,
) -> Result<(), i64> {
    for (i, arg) in layout.iter().enumerate() {
        let v = a[i];
        match *arg {
            Arg::Val => {}
            Arg::Fd => {
                let fd = v as i32;
                if fd >= fd_floor {
                    return Err(EBADF);
                }
            }
            Arg::Buf(l) => buf(mem, v, length(mem, a, l)?, false)?,
            Arg::OptBuf(l) => buf(mem, v, length(mem, a, l)?, true)?,
            Arg::Path => path(mem, v, false, vmm_pid)?,
            Arg::OptPath => path(mem, v, true, vmm_pid)?,
            Arg::Iov(ci) => {
                let n = a[ci];
                if n > 1024 {
                    return Err(-(libc::EINVAL as i64));
                }
                buf(mem, v, n * 16, false)?;
                for k in 0..n {
                    let base = mem.read_u64(v + 16 * k);
                    let len = mem.read_u64(v + 16 * k + 8);
                    buf(mem, base, len, false)?;
                }
            }
            Arg::MsgHdr => {
                // struct msghdr: name, namelen(u32), iov, iovlen, control, controllen, flags.
                buf(mem, v, 56, false)?;
                let f = |o: u64| mem.read_u64(v + o);
                let mut namelen = [0u8; 4];
                mem.read(v + 8, &mut namelen);
                buf(mem, f(0), u32::from_le_bytes(namelen) as u64, true)?;
                buf(mem, f(32), f(40), true)?;
                let (iov, n) = (f(16), f(24));
                if n > 1024 {
                    return Err(-(libc::EINVAL as i64));
                }
                buf(mem, iov, n * 16, n == 0)?;
                for k in 0..n {
                    buf(
                        mem,
                        mem.read_u64(iov + 16 * k),
                        mem.read_u64(iov + 16 * k + 8),
                        false,
                    )?;
                }
            }
            Arg::PollFds(ci) => {
                let n = a[ci];
                buf(mem, v, n.checked_mul(8).ok_or(EFAULT)?, n == 0)?;
                for k in 0..n {
                    let mut b = [0u8; 4];
                    mem.read(v + 8 * k, &mut b);
                    if i32::from_le_bytes(b) >= fd_floor {
                        return Err(EBADF);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_paths_that_reach_the_vmm_are_forbidden() {
        for p in [
            "/proc/self/mem",
            "/proc/self/fd/1000",
            "/proc/thread-self/mem",
            "/proc/77/mem",
            "/proc/77/task/1/mem",
        ] {
            assert!(forbidden_path(p.as_bytes(), 77), "{p}");
        }
        for p in [
            "/proc/123/mem",
            "/dev/fd/1000",
            "/proc/self/../self/mem",
            "/proc/1/task/2/mem",
        ] {
            assert!(forbidden_path(p.as_bytes(), 77), "{p}");
        }
        for p in [
            "/etc/passwd",
            "/proc/self/status",
            "/proc/cpuinfo",
            "memo.txt",
            "/dev/fd/0",
            "/proc/meminfo",
        ] {
            assert!(!forbidden_path(p.as_bytes(), 77), "{p}");
        }
    }
}
