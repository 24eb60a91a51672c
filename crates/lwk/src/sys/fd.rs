//! Descriptors the VMM owns: its fd range above the guest's, eventfds, the descriptor limit.

use super::file::c_path;
use super::lowfds::low_fds;
use std::io;

/// Runs `create`, which makes a descriptor at the lowest free number, and moves that descriptor
/// to the lowest free number ≥ `floor` (close-on-exec), all under [`low_fds`].
pub fn create_high(floor: i32, create: impl FnOnce() -> io::Result<i32>) -> io::Result<i32> {
    let _low = low_fds();
    let fd = create()?;
    widen_fd_race_for_tests();
    let high = move_fd_high(fd, floor);
    close(fd);
    high
}

/// A test hook: `MULTIOS_LWK_TEST_FD_RACE_MS=N` sleeps N ms while a new VMM descriptor is still
/// in the guest's range, so that a regression test can make the race above happen every time.
pub fn widen_fd_race_for_tests() {
    static MS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ms = *MS.get_or_init(|| {
        std::env::var("MULTIOS_LWK_TEST_FD_RACE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Duplicates file descriptor `fd` to the lowest free number ≥ `floor` (close-on-exec); the caller
/// closes `fd`.
pub fn move_fd_high(fd: i32, floor: i32) -> io::Result<i32> {
    // SAFETY: F_DUPFD_CLOEXEC only creates a new descriptor; `fd` is owned by the caller.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor) };
    if high < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(high)
}

/// Creates an eventfd (close-on-exec).
pub fn eventfd() -> io::Result<i32> {
    // SAFETY: eventfd creates a new descriptor; no pointers are involved.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Closes a descriptor the caller owns and nobody else uses.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor touches no memory; the caller owns `fd`.
    unsafe { libc::close(fd) };
}

/// Adds 1 to eventfd `fd`. Async-signal-safe (one write(2)), so signal handlers may call it.
pub fn eventfd_add(fd: i32) {
    let one = 1u64;
    // SAFETY: writes 8 valid bytes from a live local, as an eventfd requires.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

/// Blocks until eventfd `fd` is non-zero and resets it; false on an error other than EINTR.
pub fn eventfd_wait(fd: i32) -> bool {
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into a live local, as an eventfd read requires.
    let r = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    r == 8 || io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// Closes this process's close-on-exec descriptors below `fd_floor` (the guest's: an execve in the
/// LWK does what the kernel would do on a real one; the VMM's own fds, at or above the floor, stay).
pub fn close_on_exec(fd_floor: i32) {
    let _low = low_fds();
    for fd in guest_fds_held(fd_floor) {
        // SAFETY: F_GETFD and close take plain integers; these fds are the guest's, which no Rust
        // object of the VMM owns (the VMM's fds are all at or above the floor).
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                libc::close(fd);
            }
        }
    }
}

/// RLIMIT_NOFILE of this process (soft, hard); RLIM_INFINITY reads as u64::MAX.
pub fn nofile_limit() -> (u64, u64) {
    // SAFETY: rlimit is plain data that getrlimit fills.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return (1024, 1024);
        }
        (r.rlim_cur, r.rlim_max)
    }
}

/// Resource limit `res` of this process (soft, hard); RLIM_INFINITY reads as u64::MAX, and a
/// limit that cannot be read as unlimited.
pub fn rlimit(res: libc::__rlimit_resource_t) -> (u64, u64) {
    // SAFETY: rlimit is plain data that getrlimit fills.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(res, &mut r) != 0 {
            return (u64::MAX, u64::MAX);
        }
        (r.rlim_cur, r.rlim_max)
    }
}

/// Sets RLIMIT_NOFILE of this process.
pub fn set_nofile_limit(soft: u64, hard: u64) -> io::Result<()> {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct passed.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A memfd holding `data`, sealed against writes and resizing; the descriptor is the lowest free
/// one (the guest's range), close-on-exec when `cloexec`.
pub fn memfd_with(name: &str, data: &[u8], cloexec: bool) -> io::Result<i32> {
    let c = c_path(name)?;
    let flags = libc::MFD_ALLOW_SEALING | if cloexec { libc::MFD_CLOEXEC } else { 0 };
    // SAFETY: `c` is NUL-terminated; memfd_create only reads it.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut done = 0;
    while done < data.len() {
        // SAFETY: the pointer and length describe the rest of `data`, which write only reads.
        let n = unsafe { libc::write(fd, data[done..].as_ptr().cast(), data.len() - done) };
        if n <= 0 {
            let e = io::Error::last_os_error();
            close(fd);
            return Err(e);
        }
        done += n as usize;
    }
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: fcntl and lseek take plain integers on a descriptor this function owns.
    unsafe {
        libc::fcntl(fd, libc::F_ADD_SEALS, seals);
        libc::lseek(fd, 0, libc::SEEK_SET);
    }
    Ok(fd)
}

/// Duplicates `fd` to the lowest free number ≥ `floor` (close-on-exec), as [`move_fd_high`], and
/// returns the duplicate as an owned descriptor; the caller still closes `fd`.
pub fn dup_high(fd: i32, floor: i32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let high = move_fd_high(fd, floor)?;
    // SAFETY: F_DUPFD_CLOEXEC just created `high`; nothing else knows or owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(high) })
}

/// Resets eventfd `fd` if it was written, without blocking (a read with nothing there waits, so
/// this asks poll first).
pub fn eventfd_drain(fd: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is a live pollfd; a zero timeout returns at once.
    if unsafe { libc::poll(&mut p, 1, 0) } == 1 {
        eventfd_wait(fd);
    }
}

/// This process's open descriptors below `fd_floor` (the guest's), from /proc/self/fd.
pub fn guest_fds(fd_floor: i32) -> Vec<i32> {
    let _low = low_fds();
    guest_fds_held(fd_floor)
}

/// [`guest_fds`] for a caller that holds [`low_fds`] (the listing's own descriptor is one of
/// the VMM's temporaries in the guest's range).
fn guest_fds_held(fd_floor: i32) -> Vec<i32> {
    // Under the VMM's procfs directory: after the guest's chroot, `/proc/self/fd` by path is a
    // directory the guest made, which could hide its fds from execve's close-on-exec sweep.
    let Ok(fd) = super::file::open_proc("self/fd", libc::O_RDONLY | libc::O_DIRECTORY) else {
        // No procfs at all: every number below the floor is asked (≈ 0.3 µs each, at most 65280).
        // SAFETY: F_GETFD only reads the descriptor's flags; a closed number fails with EBADF.
        return (0..fd_floor)
            .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0)
            .collect();
    };
    // SAFETY: fdopendir takes over `fd` (just opened, owned by nobody else); readdir returns
    // entries valid until the next readdir or closedir, and each name is read before the next
    // call; closedir closes `fd`.
    unsafe {
        let d = libc::fdopendir(fd);
        if d.is_null() {
            libc::close(fd);
            return Vec::new();
        }
        let mut out = Vec::new();
        loop {
            let e = libc::readdir64(d);
            if e.is_null() {
                break;
            }
            let name = std::ffi::CStr::from_ptr((*e).d_name.as_ptr());
            if let Some(n) = name.to_str().ok().and_then(|n| n.parse::<i32>().ok()) {
                if n < fd_floor && n != fd {
                    out.push(n);
                }
            }
        }
        libc::closedir(d);
        out
    }
}

/// A pipe, both ends close-on-exec: (read end, write end), at the lowest free numbers.
pub fn pipe_cloexec() -> io::Result<(i32, i32)> {
    let mut p = [0i32; 2];
    // SAFETY: pipe2 writes two ints into the live array `p`.
    if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((p[0], p[1]))
}

/// fcntl(fd, cmd, arg) for the integer commands (F_GETFL, F_SETFL, F_GETFD, F_SETFD); Linux's
/// return convention (-errno).
pub fn fcntl_int(fd: i32, cmd: i32, arg: i32) -> i64 {
    // SAFETY: these commands take and return plain integers; no memory is involved.
    let r = unsafe { libc::fcntl(fd, cmd, arg) };
    if r < 0 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EBADF) as i64)
    } else {
        r as i64
    }
}

/// dup3(from, to, flags): makes `to` refer to `from`'s file (closing what `to` was).
pub fn dup_onto(from: i32, to: i32, flags: i32) -> io::Result<()> {
    // SAFETY: dup3 takes plain integers; the caller owns both descriptors.
    if unsafe { libc::dup3(from, to, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes one byte to `fd` (a pipe the VMM owns); true when it was written.
pub fn write_byte(fd: i32) -> bool {
    let b = 1u8;
    // SAFETY: writes one byte from a live local.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) == 1 }
}

/// Reads one byte from `fd` if one is there (a non-blocking descriptor); true when one was read.
pub fn read_byte(fd: i32) -> bool {
    let mut b = 0u8;
    // SAFETY: reads at most one byte into a live local.
    unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) == 1 }
}

/// Waits at most `ms` milliseconds for `fd` to be readable: Ok(true) when it is, Err(errno) on
/// an error (EINTR when a signal interrupted the wait).
pub fn poll_readable(fd: i32, ms: i32) -> Result<bool, i32> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is a live pollfd, the count passed is 1.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINTR));
    }
    Ok(r == 1)
}

/// A connected pair of UNIX stream sockets, both in the VMM's range (≥ `floor`, close-on-exec).
pub fn socketpair_high(floor: i32) -> io::Result<(i32, i32)> {
    let _low = low_fds();
    let mut p = [0i32; 2];
    // SAFETY: socketpair writes two ints into the live array `p`.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            p.as_mut_ptr(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    let a = move_fd_high(p[0], floor);
    let b = move_fd_high(p[1], floor);
    close(p[0]);
    close(p[1]);
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (a, b) => {
            let e = a
                .as_ref()
                .err()
                .or(b.as_ref().err())
                .map_or(libc::EMFILE, |e| e.raw_os_error().unwrap_or(libc::EMFILE));
            for fd in [a.ok(), b.ok()].into_iter().flatten() {
                close(fd);
            }
            Err(io::Error::from_raw_os_error(e))
        }
    }
}

/// Sends all of `data` on stream socket `fd` (retrying on EINTR and short sends).
pub fn send_all(fd: i32, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: the pointer and length describe `data`, which send only reads.
        let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// Receives into `buf` from stream socket `fd` until it is full or the stream ends (retrying on
/// EINTR); returns the bytes received.
pub fn recv_all(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the pointer and length describe the rest of `buf`, which recv fills.
        let n = unsafe { libc::recv(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok(got)
}

/// Whether `fd` is an open descriptor.
pub fn fd_is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Writes all of `data` to `fd`, retrying on EINTR and short writes; errors are dropped (a
/// message that cannot be written is lost, as eprintln's are on a closed stderr).
pub fn write_all_to(fd: i32, mut data: &[u8]) {
    while !data.is_empty() {
        // SAFETY: the pointer and length describe `data`, which write only reads.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        if n == 0 {
            return;
        }
        data = &data[n as usize..];
    }
}

/// Puts /dev/null on `fd`, close-on-exec (whatever was there is closed); best effort.
pub fn null_onto(fd: i32) {
    // SAFETY: open of a constant NUL-terminated path; dup3 and close take plain integers.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            libc::close(fd);
            return;
        }
        if null != fd {
            libc::dup3(null, fd, libc::O_CLOEXEC);
            libc::close(null);
        }
    }
}

/// Gives the calling thread a file table of its own (a copy, as unshare(CLONE_FILES) makes) and
/// closes in that copy every descriptor but `keep`; the other threads' table is untouched.
pub fn private_table_keeping(keep: i32) -> io::Result<()> {
    const CLOSE_RANGE_UNSHARE: u64 = 1 << 1;
    let keep = keep as u32 as u64;
    let below = (keep > 0).then(|| (0, keep - 1));
    let above = (keep < u32::MAX as u64).then(|| (keep + 1, u32::MAX as u64));
    let mut flags = CLOSE_RANGE_UNSHARE;
    for (lo, hi) in below.into_iter().chain(above) {
        // SAFETY: close_range touches no memory; with CLOSE_RANGE_UNSHARE the first call closes
        // in this thread's new private copy of the table, and the second in that same copy.
        let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, flags) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        flags = 0;
    }
    Ok(())
}
