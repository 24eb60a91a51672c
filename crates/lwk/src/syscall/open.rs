//! open/openat/creat without a window for another guest thread: a file is judged *before* the
//! guest can use it.
//!
//! Opening first and judging after (closing a forbidden fd) leaves the fd in the fd table the
//! guest's threads share for as long as the judgement takes (tens of µs for a procfs file), and
//! another guest thread, served by its own vCPU thread meanwhile, could pwrite through it. So the
//! path is first opened with O_PATH (no read, no write), that fd moved into the VMM's range (out
//! of the guest's reach; its low number is free again) and judged; only an allowed file is then
//! opened for real, by reopening *that* file through the VMM's procfs (`self/fd/N`), so a path
//! swapped meanwhile (a symlink replaced) changes nothing. The real fd gets the lowest free
//! number, as natively. A new file (O_CREAT|O_EXCL, O_TMPFILE, or O_CREAT on a missing name,
//! created with O_EXCL) cannot be a procfs file or a VMM file and is opened directly.

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use super::check::EFAULT;
use crate::kernel::Kernel;
use crate::{fds, procfs, sys};
use libc::*;

/// How many times an O_CREAT open retries when its name keeps appearing and disappearing.
const RETRIES: usize = 4;
/// Symbolic links followed by hand before ELOOP (Linux: 40).
const MAX_LINKS: usize = 40;

/// When `name` under `dir` is a symbolic link: its target and, for a relative target with a
/// directory part in `name`, an O_PATH fd (above the floor) of the link's directory to resolve it
/// from (None: resolve from `dir` itself). Ok(None) when it is not a link (any more); Err with
/// Linux's return value when the link or its directory cannot be read.
#[allow(clippy::type_complexity)]
pub(super) fn dangling_link(
    dir: i32,
    name: &std::ffi::CStr,
) -> Result<Option<(Option<std::os::fd::OwnedFd>, std::ffi::CString)>, i64> {
    use std::os::fd::FromRawFd;
    let errno = |e: std::io::Error| -(e.raw_os_error().unwrap_or(EIO) as i64);
    let own = |fd: i32| {
        // SAFETY: `fd` was just made by create_high and is owned by nobody else.
        unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
    };
    let open_high = |path: &std::ffi::CStr, how: i32| {
        sys::create_high(fds::floor(), || {
            let r = sys::openat_raw(dir, path, O_PATH | O_CLOEXEC | how, 0);
            if r < 0 {
                Err(std::io::Error::from_raw_os_error(-r as i32))
            } else {
                Ok(r as i32)
            }
        })
    };
    let link = match open_high(name, O_NOFOLLOW) {
        Ok(fd) => own(fd),
        Err(e) if e.raw_os_error() == Some(ENOENT) => return Ok(None),
        Err(e) => return Err(errno(e)),
    };
    use std::os::fd::AsRawFd;
    if !sys::is_symlink(link.as_raw_fd()) {
        return Ok(None);
    }
    let target = sys::readlink_at(link.as_raw_fd(), "").map_err(errno)?;
    let target = std::ffi::CString::new(target).map_err(|_| -(EINVAL as i64))?;
    let bytes = name.to_bytes();
    let parent = match bytes.iter().rposition(|&c| c == b'/') {
        _ if target.as_bytes().first() == Some(&b'/') => None,
        None => None,
        Some(0) => Some(std::ffi::CString::from(c"/")),
        Some(i) => std::ffi::CString::new(&bytes[..i]).ok(),
    };
    let dir = match parent {
        Some(p) => Some(own(open_high(&p, O_DIRECTORY).map_err(errno)?)),
        None => None,
    };
    Ok(Some((dir, target)))
}

impl Kernel {
    /// openat(dirfd, path, flags, mode) for the guest (`path` a checked guest pointer).
    pub(super) fn open_judged(&self, dirfd: i32, path: u64, flags: i32, mode: u32) -> i64 {
        // One copy of the name: the guest cannot change it between the steps.
        let name = match self.mem.read_cstr_or(path, 4096) {
            Ok(n) => n,
            Err(crate::memory::CstrError::TooLong) => return -(ENAMETOOLONG as i64),
            Err(crate::memory::CstrError::Fault) => return EFAULT,
        };
        let Ok(name) = std::ffi::CString::new(name) else {
            return EFAULT;
        };
        // (With O_PATH the kernel ignores O_CREAT, O_EXCL and O_TMPFILE's file part: such an open
        // reaches an existing file, which must be judged like any other.)
        let creates = flags & O_PATH == 0
            && (flags & O_TMPFILE == O_TMPFILE || flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL);
        if creates {
            // A new file: nothing to wait for, so under the lock of the guest's fd range (`fresh`).
            let low = sys::low_fds();
            let r = sys::openat_raw(dirfd, &name, flags, mode);
            drop(low);
            return self.fresh(r);
        }
        // Where the name is looked up: the guest's (dirfd, name), then, through a dangling
        // symbolic link that O_CREAT follows, the link's directory (a VMM fd) and its target.
        let mut dir: Option<std::os::fd::OwnedFd> = None;
        let mut name = name;
        let mut links = 0;
        let mut tries = 0;
        while tries < RETRIES {
            use std::os::fd::AsRawFd;
            let at = dir.as_ref().map_or(dirfd, |d| d.as_raw_fd());
            // The O_PATH fd is the VMM's temporary until it is moved above the floor.
            let low = sys::low_fds();
            let p = sys::openat_raw(
                at,
                &name,
                O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY)),
                0,
            );
            if p < 0 {
                drop(low);
                if p == -(ENOENT as i64) && flags & O_CREAT != 0 {
                    let low = sys::low_fds();
                    let r = sys::openat_raw(at, &name, flags | O_EXCL, mode);
                    drop(low);
                    if r != -(EEXIST as i64) {
                        return self.fresh(r);
                    }
                    // A dangling symbolic link (O_EXCL does not follow it; O_CREAT alone creates
                    // its target), or a file created meanwhile: look again, following the link
                    // by hand. Opening as asked and judging after left the file in the guest's
                    // range while it was judged: a guest swapped the link for one to
                    // `/proc/self/mem` at the last moment and wrote the VMM's memory (issue #16).
                    match dangling_link(at, &name) {
                        Ok(Some((d, target))) => {
                            links += 1;
                            if links > MAX_LINKS {
                                return -(ELOOP as i64);
                            }
                            if let Some(d) = d {
                                dir = Some(d);
                            } else if target.as_bytes().first() == Some(&b'/') {
                                dir = None; // absolute: the dirfd plays no part
                            }
                            name = target;
                        }
                        Ok(None) => tries += 1,
                        Err(e) => return e,
                    }
                    continue;
                }
                return p;
            }
            let high = sys::move_fd_high(p as i32, fds::floor());
            sys::close(p as i32);
            drop(low);
            // The guest's own `exe` link is its program, not the VMM's binary (`ownexe.rs`).
            let high = self.own_exe_instead(at, &name, high);
            return self.reopen(high, flags);
        }
        // A name that kept appearing and disappearing: what the last look saw.
        -(ENOENT as i64)
    }

    /// A newly created file: only the guest's fd limit applies.
    fn fresh(&self, r: i64) -> i64 {
        if r < 0 {
            r
        } else {
            self.limit_fd(r)
        }
    }

    /// Judges O_PATH fd `high` (in the VMM's range) and, when allowed, opens its file for real
    /// with the guest's `flags`.
    fn reopen(&self, high: std::io::Result<i32>, flags: i32) -> i64 {
        let p = match high {
            Ok(p) => p,
            Err(e) => return -(e.raw_os_error().unwrap_or(EMFILE) as i64),
        };
        let r = match self.judge(p, flags as u64) {
            Some(r) => r,
            None if flags & O_PATH != 0 => {
                // The guest asked for an O_PATH fd: this one, at the lowest free number.
                let cmd = if flags & O_CLOEXEC != 0 {
                    F_DUPFD_CLOEXEC
                } else {
                    F_DUPFD
                };
                let low = sys::low_fds();
                let r = sys::raw_syscall(SYS_fcntl as u64, [p as u64, cmd as u64, 0, 0, 0, 0]);
                drop(low);
                self.fresh(r)
            }
            None if flags & O_NOFOLLOW != 0 && sys::is_symlink(p) => -(ELOOP as i64),
            None => {
                // Opening a file, directory or block device waits for nobody: under the lock of
                // the guest's fd range, so that a VMM temporary does not push the guest's number
                // up. A FIFO's or a device's open may wait for another party, so not those.
                let _ = procfs::init(); // before the lock: its first call takes it itself
                let low = sys::opens_at_once(p).then(sys::low_fds);
                let r = procfs::reopen(p, flags & !(O_CREAT | O_EXCL | O_NOFOLLOW));
                drop(low);
                self.fresh(r)
            }
        };
        sys::close(p);
        r
    }
}
