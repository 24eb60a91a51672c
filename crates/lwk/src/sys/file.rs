//! Files by path or descriptor: opening under a directory fd, reading, identity, type.

use std::io;

/// True when this process may execute `path` (access(2) with X_OK).
pub fn may_execute(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// True when `fd` is a file of procfs (or when fstatfs fails: the caller then checks the hard way).
pub fn is_procfs(fd: i32) -> bool {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    // SAFETY: statfs is plain data written by the kernel; fstatfs only reads `fd`.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::fstatfs(fd, &mut st) != 0 || st.f_type as i64 == PROC_SUPER_MAGIC
    }
}

pub(super) fn c_path(path: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// openat(dir, path, flags | O_CLOEXEC); the caller owns the new descriptor.
pub fn open_at(dir: i32, path: &str, flags: i32) -> io::Result<i32> {
    let c = c_path(path)?;
    // SAFETY: `c` is a valid NUL-terminated path that openat only reads.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// The VMM's procfs directory (`procfs::init`, opened before the guest runs), or −1.
static PROC_DIR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Records the VMM's procfs directory for [`open_proc`].
pub fn set_proc_dir(fd: i32) {
    PROC_DIR.store(fd, std::sync::atomic::Ordering::Release);
}

/// Opens `path` (e.g. `thread-self/schedstat`) under the VMM's procfs directory, non-blocking and
/// without following a last symbolic link: the guest's chroot is the VMM's own, so `/proc/…` by
/// absolute path would be a file the guest made — a FIFO there hung the VMM for ever, holding
/// `low_fds` (found 2026-11-28 by an attacker probe). Never by path: before `set_proc_dir` (or
/// without any procfs) ENOENT, as for a file procfs does not have — `/proc` may be a directory a
/// root guest filled with a `self/…` of its own (issue #16).
pub fn open_proc(path: &str, flags: i32) -> io::Result<i32> {
    let dir = PROC_DIR.load(std::sync::atomic::Ordering::Acquire);
    if dir < 0 {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    open_at(dir, path, flags | libc::O_NONBLOCK | libc::O_NOFOLLOW)
}

/// The target of symbolic link `path` relative to directory fd `dir`.
pub fn readlink_at(dir: i32, path: &str) -> io::Result<Vec<u8>> {
    let c = c_path(path)?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: the buffer is valid for its length, which is passed; `c` is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// (st_dev, st_ino) of `path` relative to directory fd `dir`, following symbolic links.
pub fn file_id_at(dir: i32, path: &str) -> io::Result<(u64, u64)> {
    let c = c_path(path)?;
    // SAFETY: stat is plain data that fstatat fills; `c` is NUL-terminated.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(dir, c.as_ptr(), &mut st, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((st.st_dev, st.st_ino))
    }
}

/// The filesystem magic of `fd` (statfs f_type).
pub fn fs_type(fd: i32) -> io::Result<i64> {
    // SAFETY: statfs is plain data written by the kernel; fstatfs only reads `fd`.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(fd, &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st.f_type as i64)
    }
}

/// The device number of `fd` when it is a character device.
pub fn char_device(fd: i32) -> Option<u64> {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFCHR).then_some(st.st_rdev)
    }
}

/// (st_dev, st_ino) of descriptor `fd`.
pub fn fd_file_id(fd: i32) -> io::Result<(u64, u64)> {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((st.st_dev, st.st_ino))
    }
}

/// True when `fd` is a directory.
pub fn is_directory(fd: i32) -> bool {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
}

/// openat(dir, path, flags, mode) exactly as given; Linux's return convention.
pub fn openat_raw(dir: i32, path: &std::ffi::CStr, flags: i32, mode: u32) -> i64 {
    // SAFETY: `path` is a valid NUL-terminated string owned by the caller; openat only reads it.
    let fd = unsafe { libc::openat(dir, path.as_ptr(), flags, mode) };
    if fd < 0 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        fd as i64
    }
}

/// True when opening `fd`'s file (an O_PATH descriptor) waits for no other party: a regular
/// file, a directory or a block device (a FIFO's open waits for its other end, a device's may).
pub fn opens_at_once(fd: i32) -> bool {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0
            && [libc::S_IFREG, libc::S_IFDIR, libc::S_IFBLK].contains(&(st.st_mode & libc::S_IFMT))
    }
}

/// True when `fd` (an O_PATH|O_NOFOLLOW descriptor) is a symbolic link.
pub fn is_symlink(fd: i32) -> bool {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// True when a read of `fd` returns without waiting for another party: the file is O_NONBLOCK,
/// or a regular file, block device or directory (their reads wait for the disk at most).
pub fn never_waits(fd: i32) -> bool {
    // SAFETY: F_GETFL takes and returns plain integers.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl >= 0 && fl & libc::O_NONBLOCK != 0 {
        return true;
    }
    // SAFETY: `st` is a zeroed, writable stat that fstat fills; nothing else is touched.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        fl >= 0
            && libc::fstat(fd, &mut st) == 0
            && [libc::S_IFREG, libc::S_IFBLK, libc::S_IFDIR].contains(&(st.st_mode & libc::S_IFMT))
    }
}

/// The names in directory `fd` (getdents64 from its current position to the end).
pub fn dir_names(fd: i32) -> io::Result<Vec<String>> {
    let mut buf = vec![0u8; 8192];
    let mut names = Vec::new();
    loop {
        // SAFETY: the buffer is valid for writes of its length, which is passed; the kernel writes
        // whole linux_dirent64 records into it.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(names);
        }
        // Each record: d_ino u64, d_off i64, d_reclen u16, d_type u8, then the NUL-ended name.
        let mut at = 0usize;
        while at + 19 < n as usize {
            let reclen = u16::from_le_bytes([buf[at + 16], buf[at + 17]]) as usize;
            if reclen == 0 || at + reclen > n as usize {
                break;
            }
            let name = &buf[at + 19..at + reclen];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            names.push(String::from_utf8_lossy(&name[..end]).into_owned());
            at += reclen;
        }
    }
}

/// Everything left to read from `fd`.
pub fn read_all(fd: i32) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: the buffer is valid for writes of its length, which is passed.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => return Ok(out),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => out.extend_from_slice(&buf[..n as usize]),
        }
    }
}
