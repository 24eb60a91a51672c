//! Every `unsafe` block and raw system call of the crate: the futex the idle workers sleep on,
//! `gettid`, and the system calls the OS machine performs for other machines.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use multios_aam_sync::sys::{futex_wait, futex_wake};

/// The calling thread's id (a real system call each time: the benchmark's reference).
pub fn gettid() -> i64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

fn check(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

pub fn read(fd: i32, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live, writable allocation of `len` bytes.
    let n = check(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), len) })?;
    buf.truncate(n);
    Ok(buf)
}

pub fn write(fd: i32, data: &[u8]) -> io::Result<usize> {
    // SAFETY: `data` is a live allocation of `data.len()` bytes, only read.
    check(unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) })
}

pub fn pread(fd: i32, len: usize, offset: i64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live, writable allocation of `len` bytes.
    let n = check(unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), len, offset) })?;
    buf.truncate(n);
    Ok(buf)
}

pub fn pwrite(fd: i32, data: &[u8], offset: i64) -> io::Result<usize> {
    // SAFETY: `data` is a live allocation of `data.len()` bytes, only read.
    check(unsafe { libc::pwrite(fd, data.as_ptr().cast(), data.len(), offset) })
}

pub fn openat(dirfd: i32, path: &Path, flags: i32, mode: u32) -> io::Result<i32> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("openat: the path {} contains a NUL byte", path.display()),
        )
    })?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags, mode as libc::c_uint) };
    check(fd as isize).map(|fd| fd as i32)
}

pub fn close(fd: i32) -> io::Result<()> {
    // SAFETY: closing a descriptor touches no memory of ours; the caller owns `fd`.
    check(unsafe { libc::close(fd) } as isize).map(drop)
}

pub fn fsync(fd: i32) -> io::Result<()> {
    // SAFETY: fsync touches no memory of ours.
    check(unsafe { libc::fsync(fd) } as isize).map(drop)
}

pub fn accept(fd: i32) -> io::Result<i32> {
    // SAFETY: null address and length pointers ask accept4 not to report the peer.
    let s = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
    check(s as isize).map(|s| s as i32)
}

pub fn recv(fd: i32, len: usize, flags: i32) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live, writable allocation of `len` bytes.
    let n = check(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), len, flags) })?;
    buf.truncate(n);
    Ok(buf)
}

pub fn send(fd: i32, data: &[u8], flags: i32) -> io::Result<usize> {
    // SAFETY: `data` is a live allocation of `data.len()` bytes, only read.
    check(unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), flags) })
}

/// Shuts both directions of a socket down (a blocked `recv` on it returns 0).
pub fn shutdown(fd: i32) -> io::Result<()> {
    // SAFETY: shutdown touches no memory of ours; a stale descriptor gives EBADF/ENOTSOCK.
    check(unsafe { libc::shutdown(fd, libc::SHUT_RDWR) } as isize).map(drop)
}

/// Sets `TCP_NODELAY` on a connected socket (replies are small and go out at once).
pub fn set_nodelay(fd: i32) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a live c_int for the duration of the call; the length matches it.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    } as isize)
    .map(drop)
}
