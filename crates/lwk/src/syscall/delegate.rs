//! Delegated calls: checked, then performed by the serving host thread as a real system call.
//! Pointers need no translation (guest-physical == host-virtual); they only need the check.

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use super::check::{check, opened_file_is_forbidden, EFAULT};
use super::layout::{self, Arg, Len};
use super::{Kernel, Reply};
use crate::sys;
use libc::*;

impl Kernel {
    pub(super) fn delegate(&self, nr: u64, a: [u64; 6]) -> Reply {
        let layout: &[Arg] = match nr as i64 {
            SYS_ioctl => return self.ioctl(a),
            SYS_fcntl => return self.fcntl(a),
            SYS_futex => return self.futex(a),
            SYS_close_range => return Reply::Ret(-(EINVAL as i64)),
            SYS_process_vm_readv | SYS_process_vm_writev => {
                // Toward the VMM itself (any of its threads) these would read or write VMM memory.
                let pid = a[0] as i32;
                if pid <= 0 || pid == self.pid() || std::path::Path::new(&format!("/proc/self/task/{pid}")).exists() {
                    return Reply::Ret(-(EPERM as i64));
                }
                layout::PROCESS_VM
            }
            n => match layout::layout(n) {
                Some(l) => l,
                None => {
                    return self.refuse(
                        nr,
                        "the proxy does not know its argument layout (add it to crates/lwk/src/syscall/layout.rs)",
                    )
                }
            },
        };
        let checked = match check(&self.mem, layout, &a, self.fd_floor, self.pid()) {
            Ok(c) => c,
            Err(e) => return Reply::Ret(e),
        };
        let r = sys::raw_syscall(nr, checked.args);
        checked.finish(&self.mem);
        if r >= 0 && matches!(nr as i64, SYS_open | SYS_openat | SYS_creat) && opened_file_is_forbidden(r) {
            sys::raw_syscall(SYS_close as u64, [r as u64, 0, 0, 0, 0, 0]);
            return Reply::Ret(-(EACCES as i64));
        }
        Reply::Ret(r)
    }

    fn ioctl(&self, a: [u64; 6]) -> Reply {
        let fd = a[0] as i32;
        if fd < 0 || fd >= self.fd_floor {
            return Reply::Ret(-(EBADF as i64));
        }
        match layout::ioctl_arg(a[1] & 0xffff_ffff) {
            Some(Some(len)) => {
                if !self.mem.in_app(a[2], len) {
                    return Reply::Ret(EFAULT);
                }
            }
            Some(None) => {}
            None => {
                // Unknown request: refuse like Linux does for a non-terminal, reported once.
                if super::lock(&self.reported).insert(0x1_0000_0000 | (a[1] & 0xffff_ffff)) && !self.quiet {
                    eprintln!(
                        "multios lwk: ioctl request {:#x} has no known layout: returning ENOTTY",
                        a[1]
                    );
                }
                return Reply::Ret(-(ENOTTY as i64));
            }
        }
        Reply::Ret(sys::raw_syscall(SYS_ioctl as u64, a))
    }

    fn fcntl(&self, a: [u64; 6]) -> Reply {
        let fd = a[0] as i32;
        if fd < 0 || fd >= self.fd_floor {
            return Reply::Ret(-(EBADF as i64));
        }
        let arg: &[Arg] = match a[1] as i32 {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if a[2] as i64 >= self.fd_floor as i64 {
                    return Reply::Ret(-(EINVAL as i64));
                }
                &[Arg::Fd, Arg::Val, Arg::Val]
            }
            F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW => {
                &[Arg::Fd, Arg::Val, Arg::Buf(Len::Fixed(32))]
            }
            F_GETFD | F_SETFD | F_GETFL | F_SETFL | F_GETPIPE_SZ | F_SETPIPE_SZ | F_ADD_SEALS
            | F_GET_SEALS => &[Arg::Fd, Arg::Val, Arg::Val],
            _ => return Reply::Ret(-(EINVAL as i64)),
        };
        if let Err(e) = check(&self.mem, arg, &a, self.fd_floor, self.pid()) {
            return Reply::Ret(e);
        }
        Reply::Ret(sys::raw_syscall(SYS_fcntl as u64, a))
    }

    fn futex(&self, a: [u64; 6]) -> Reply {
        let op = a[1] as i32 & FUTEX_CMD_MASK;
        let layout: &[Arg] = match op {
            FUTEX_WAIT | FUTEX_WAIT_BITSET | FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => &[
                Arg::Buf(Len::Fixed(4)),
                Arg::Val,
                Arg::Val,
                Arg::OptBuf(Len::Fixed(16)),
            ],
            FUTEX_WAKE | FUTEX_WAKE_BITSET | FUTEX_UNLOCK_PI | FUTEX_TRYLOCK_PI => &[Arg::Buf(Len::Fixed(4))],
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAKE_OP => &[
                Arg::Buf(Len::Fixed(4)),
                Arg::Val,
                Arg::Val,
                Arg::Val,
                Arg::Buf(Len::Fixed(4)),
            ],
            _ => return self.refuse(SYS_futex as u64, "this futex operation"),
        };
        if let Err(e) = check(&self.mem, layout, &a, self.fd_floor, self.pid()) {
            return Reply::Ret(e);
        }
        Reply::Ret(sys::raw_syscall(SYS_futex as u64, a))
    }
}
