//! A program file opened for execution once, as Linux's `open_exec` opens it (issue #16): its name
//! is looked up once, as an O_PATH descriptor (which never waits: opening a FIFO waited for a
//! writer, and hung the VMM, a device's open would run its driver); the file must be a regular
//! file the caller may execute (`sys::exec_denied`: EACCES for a directory, FIFO, socket or device
//! as for a file without an x bit); only then is it opened for reading, through that descriptor
//! (the VMM's procfs `self/fd/N`), never by name again. The `#!` chain, the ELF check and the
//! loader all read this one open file, so a rename between the checks and the load can no longer
//! swap the file under them, and the O_PATH descriptor is what the guest's `/proc/self/exe`
//! reopens (`syscall/ownexe.rs`). Both descriptors are the VMM's: above the floor, close-on-exec.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A program file checked for execution and open for reading.
#[derive(Debug)]
pub struct ExeFile {
    /// The name it was opened by (for messages; the caller's spelling).
    pub path: PathBuf,
    /// O_PATH, above the floor.
    at: OwnedFd,
    /// The same file open read-only, above the floor.
    read: File,
}

fn errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EACCES)
}

impl ExeFile {
    /// Opens `path` for execution (following symbolic links): execve's ENOENT, ENOTDIR, ELOOP…
    /// from the lookup, EACCES when it may not be executed; `Err` is the errno.
    pub fn open(path: &Path) -> Result<ExeFile, i32> {
        let at = crate::sys::open_path_high(path, crate::fds::floor()).map_err(errno)?;
        ExeFile::of_path_fd(at, path)
    }

    /// Checks and opens the file of O_PATH descriptor `at` (above the floor), named `path`.
    pub fn of_path_fd(at: OwnedFd, path: &Path) -> Result<ExeFile, i32> {
        if let Some(e) = crate::sys::exec_denied(at.as_raw_fd()) {
            return Err(e);
        }
        let read = reopen_for_reading(&at, path)?;
        Ok(ExeFile {
            path: path.to_path_buf(),
            at,
            read,
        })
    }

    /// The first `n` bytes of the file (fewer when it is shorter); `Err` is the errno.
    pub fn head(&self, n: usize) -> Result<Vec<u8>, i32> {
        let mut b = vec![0u8; n];
        let got = self.read.read_at(&mut b, 0).map_err(errno)?;
        b.truncate(got);
        Ok(b)
    }

    /// True when the file starts with the ELF magic.
    pub fn is_elf(&self) -> bool {
        self.head(4).is_ok_and(|h| h == b"\x7fELF")
    }

    /// The whole file mapped read-only.
    pub fn map(&self) -> std::io::Result<crate::sys::MappedFile> {
        crate::sys::MappedFile::of_fd(self.read.as_raw_fd())
    }

    /// The O_PATH descriptor.
    pub fn path_fd(&self) -> i32 {
        self.at.as_raw_fd()
    }

    /// The O_PATH descriptor, kept as the guest's program (its read descriptor is closed).
    pub fn into_path_fd(self) -> OwnedFd {
        self.at
    }

    /// The file's absolute path as the kernel names it now (its `self/fd/N` link), else the
    /// canonical form of the name it was opened by.
    pub fn real_path(&self) -> PathBuf {
        match crate::procfs::fd_path(self.path_fd()) {
            Some(p) => PathBuf::from(p),
            None => std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone()),
        }
    }
}

/// A new O_PATH descriptor of the file of `fd`, above the floor (close-on-exec).
pub fn dup_high(fd: i32) -> Result<OwnedFd, i32> {
    let high = crate::sys::move_fd_high(fd, crate::fds::floor()).map_err(errno)?;
    // SAFETY: move_fd_high just made `high`; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(high) })
}

/// Opens the regular file of O_PATH descriptor `at` read-only, above the floor: through the VMM's
/// procfs (`self/fd/N`, the same file whatever its name is now); without a procfs, by `path`
/// again, non-blocking, and only when it is still the same file.
fn reopen_for_reading(at: &OwnedFd, path: &Path) -> Result<File, i32> {
    let floor = crate::fds::floor();
    let flags = libc::O_RDONLY | libc::O_CLOEXEC;
    // Before `create_high`: its first call takes the lock of the guest's fd range itself.
    let fd = if crate::procfs::init().is_ok() {
        crate::sys::create_high(floor, || match crate::procfs::reopen(at.as_raw_fd(), flags) {
            r if r < 0 => Err(std::io::Error::from_raw_os_error(-r as i32)),
            r => Ok(r as i32),
        })
        .map_err(errno)?
    } else {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::ENOENT)?;
        let fd = crate::sys::create_high(floor, || {
            match crate::sys::openat_raw(libc::AT_FDCWD, &c, flags | libc::O_NONBLOCK | libc::O_NOCTTY, 0) {
                r if r < 0 => Err(std::io::Error::from_raw_os_error(-r as i32)),
                r => Ok(r as i32),
            }
        })
        .map_err(errno)?;
        let same = crate::sys::fd_file_id(fd).ok() == crate::sys::fd_file_id(at.as_raw_fd()).ok();
        if !same {
            crate::sys::close(fd);
            return Err(libc::EACCES);
        }
        fd
    };
    // SAFETY: `fd` was just made above the floor and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}
