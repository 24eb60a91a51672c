//! The guest's own `exe` link (`/proc/self/exe`, `/proc/PID/exe`, `/proc/thread-self/exe`,
//! `/proc/self/./exe`, a symbolic link to one…): on the host it leads to the VMM's binary, so the
//! guest's open, execve and readlink of it are answered with the guest's program — the file the
//! loader opened (`Program::file`, an O_PATH descriptor kept above the floor, so a program deleted
//! or replaced since behaves as natively) and its path. What a name reaches is decided from the
//! procfs entry it resolves to (`procfs::Verdict::OwnExe`), not from its spelling (issue #16: only
//! the exact string "/proc/self/exe" was recognised; the other spellings opened, ran and named
//! the VMM's 23 MB binary).

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use crate::kernel::{lock, Kernel, Reply};
use crate::loader::exefile::{self, ExeFile};
use crate::procfs::{self, Verdict};
use crate::sys;
use libc::*;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::path::Path;

const PROC_SUPER_MAGIC: i64 = 0x9fa0;
/// Symbolic links followed by hand before giving up (Linux: 40, then ELOOP).
const MAX_LINKS: usize = 40;

/// True when the last component of path `name` is `exe` (the only names that can be an `exe`
/// link without following it: readlink reads the link itself).
pub(super) fn names_exe(name: &[u8]) -> bool {
    name == b"exe" || name.ends_with(b"/exe")
}

impl Kernel {
    /// A new O_PATH descriptor of the guest's program, above the floor.
    fn program_file(&self) -> Option<OwnedFd> {
        let file = lock(&self.program.file);
        exefile::dup_high(file.as_ref()?.as_raw_fd()).ok()
    }

    /// The path the guest's `exe` link reads: its program's, as the kernel names the file now
    /// (" (deleted)" once it is deleted, as natively).
    fn exe_path(&self) -> Vec<u8> {
        let named = lock(&self.program.file)
            .as_ref()
            .and_then(|f| procfs::fd_path(f.as_raw_fd()));
        named.map_or_else(|| lock(&self.program.exe).clone(), String::into_bytes)
    }

    /// True when name `name` under `dirfd` leads, as its last step, through the `exe` link of the
    /// guest's own process: each symbolic link on the way is read by hand (O_PATH|O_NOFOLLOW) up
    /// to a procfs one, which is classified.
    fn through_own_exe(&self, dirfd: i32, name: &CStr) -> bool {
        let mut dir: Option<OwnedFd> = None;
        let mut name = name.to_owned();
        for _ in 0..=MAX_LINKS {
            let at = dir.as_ref().map_or(dirfd, |d| d.as_raw_fd());
            match self.procfs_link(at, &name) {
                Some(Some(v)) => return v == Verdict::OwnExe,
                Some(None) => {}
                None => return false,
            }
            match super::open::dangling_link(at, &name) {
                Ok(Some((d, target))) => {
                    if let Some(d) = d {
                        dir = Some(d);
                    } else if target.as_bytes().first() == Some(&b'/') {
                        dir = None;
                    }
                    name = target;
                }
                _ => return false,
            }
        }
        false
    }

    /// What `name` under `dirfd` is without following its last link: Some(Some(verdict)) for a
    /// procfs file, Some(None) for another file, None when it cannot be opened.
    fn procfs_link(&self, dirfd: i32, name: &CStr) -> Option<Option<Verdict>> {
        let fd = sys::create_high(self.fd_floor, || {
            match sys::openat_raw(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0) {
                r if r < 0 => Err(std::io::Error::from_raw_os_error(-r as i32)),
                r => Ok(r as i32),
            }
        })
        .ok()?;
        let verdict = (sys::fs_type(fd).ok() == Some(PROC_SUPER_MAGIC)).then(|| procfs::classify_fd(fd));
        sys::close(fd);
        Some(verdict)
    }

    /// Opens `path` for execution as the guest's execve, a `#!` line or a PT_INTERP names it
    /// (`loader::exefile`): the guest's own `exe` link, however spelled, is its program.
    pub(super) fn open_program(&self, path: &Path) -> Result<ExeFile, i32> {
        use std::os::unix::ffi::OsStrExt;
        let at = sys::open_path_high(path, self.fd_floor).map_err(|e| e.raw_os_error().unwrap_or(EACCES))?;
        let own = procfs::is_vmm_binary(at.as_raw_fd())
            && CString::new(path.as_os_str().as_bytes()).is_ok_and(|c| self.through_own_exe(AT_FDCWD, &c));
        let at = match own.then(|| self.program_file()).flatten() {
            Some(program) => program,
            None => at,
        };
        ExeFile::of_path_fd(at, path)
    }

    /// For an open of `name` under `dirfd` that reached O_PATH descriptor `high` (above the
    /// floor): the guest's program instead when `high` is the VMM's binary reached through the
    /// guest's own `exe` link.
    pub(super) fn own_exe_instead(
        &self,
        dirfd: i32,
        name: &CStr,
        high: std::io::Result<i32>,
    ) -> std::io::Result<i32> {
        let Ok(fd) = high else {
            return high;
        };
        if !procfs::is_vmm_binary(fd) || !self.through_own_exe(dirfd, name) {
            return Ok(fd);
        }
        match self.program_file() {
            Some(program) => {
                sys::close(fd);
                Ok(program.into_raw_fd())
            }
            None => Ok(fd),
        }
    }

    /// readlink/readlinkat (arguments `a`) of the guest's own `exe` link: its program's path
    /// (None: any other name, left to the host).
    pub(super) fn readlink_own_exe(&self, nr: u64, a: &[u64; 6]) -> Option<Reply> {
        let (dirfd, path, buf, len) = match nr as i64 {
            SYS_readlink => (AT_FDCWD, a[0], a[1], a[2]),
            SYS_readlinkat => (a[0] as i32, a[1], a[2], a[3]),
            _ => return None,
        };
        // A descriptor of the VMM's range is not the guest's to name (the host call refuses it).
        if dirfd != AT_FDCWD && !(0..self.fd_floor).contains(&dirfd) {
            return None;
        }
        let name = self.mem.read_cstr(path, 4096)?;
        if !names_exe(&name) {
            return None;
        }
        let name = CString::new(name).ok()?;
        if self.procfs_link(dirfd, &name)? != Some(Verdict::OwnExe) {
            return None;
        }
        if len as i32 <= 0 {
            return Some(Reply::Ret(-(EINVAL as i64)));
        }
        let exe = self.exe_path();
        let n = exe.len().min(len as usize);
        Some(match self.mem.write_user(buf, &exe[..n]) {
            Ok(()) => Reply::Ret(n as i64),
            Err(e) => Reply::Ret(e),
        })
    }
}
