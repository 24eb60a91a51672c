//! The few raw host calls the VMM needs, each wrapped once with its safety argument.

use std::io;

/// Maps `len` bytes of fresh anonymous memory at exactly `addr` (never replacing a mapping), so
/// that guest-physical == host-virtual. `prot` is a `PROT_*` mask.
pub fn map_fixed(addr: u64, len: usize, prot: i32) -> io::Result<()> {
    // SAFETY: MAP_FIXED_NOREPLACE never unmaps anything: it fails if the range is in use, so no
    // existing Rust object can be invalidated; the result is checked.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if p as u64 != addr {
        // Old kernels ignore the flag and treat it as a hint: undo and report the range as busy.
        // SAFETY: `p` is the mapping just created by this call and nothing refers to it.
        unsafe { libc::munmap(p, len) };
        return Err(io::Error::from_raw_os_error(libc::EEXIST));
    }
    Ok(())
}

/// Unmaps a range this module mapped.
pub fn unmap(addr: u64, len: usize) {
    // SAFETY: only called by `memory::Region::drop` on the region it created; after the VM is
    // gone nothing (host or guest) refers to it.
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

/// `madvise(addr, len, advice)` on guest memory (DONTNEED drops pages: they read back as zero).
pub fn madvise(addr: u64, len: usize, advice: i32) -> io::Result<()> {
    // SAFETY: callers pass ranges inside the guest window, which is anonymous memory owned by
    // the VMM that no Rust reference points into (guest memory is accessed through raw copies).
    let r = unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Maps `len` bytes of file `fd` from `off`, shared, over `[addr, addr+len)` of the guest window
/// (MAP_FIXED replaces the anonymous memory there; KVM's MMU notifiers make the guest see the
/// file's pages).
pub fn map_file_shared(addr: u64, len: u64, writable: bool, fd: i32, off: u64) -> io::Result<()> {
    let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    // SAFETY: callers pass a page-aligned range inside the guest window, memory owned by the VMM
    // that no Rust reference points into; MAP_FIXED only replaces those pages.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len as usize,
            prot,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd,
            off as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts fresh private anonymous memory (huge pages allowed) back over `[addr, addr+len)` of the
/// guest window, after a shared file mapping there ends.
pub fn map_anonymous(addr: u64, len: u64) -> io::Result<()> {
    // SAFETY: as in `map_file_shared`: a range of the guest window, owned by the VMM, no Rust
    // references into it; MAP_FIXED only replaces those pages.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let _ = madvise(addr, len as usize, libc::MADV_HUGEPAGE);
    Ok(())
}

/// Performs system call `nr` with `args` on behalf of the guest; returns the Linux convention
/// (negative errno on failure). Pointer arguments must have been checked by `syscall::check`.
pub fn raw_syscall(nr: u64, a: [u64; 6]) -> i64 {
    // SAFETY: the delegation layer only calls this for system calls whose argument layout it knows
    // and whose pointers it has checked to lie inside the guest window (memory that this process
    // owns and never holds Rust references into) or point at copies it owns for the duration of
    // the call (`check::Checked`), so the kernel can only touch guest memory or those copies.
    let r = unsafe { libc::syscall(nr as libc::c_long, a[0], a[1], a[2], a[3], a[4], a[5]) };
    if r == -1 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        r
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

/// Sets the disposition of host signal `sig`: `action` is SIG_DFL, SIG_IGN or an SA_SIGINFO
/// handler, with an empty mask and `flags` (SA_SIGINFO is added).
pub fn set_signal_action(sig: i32, action: libc::sighandler_t, flags: i32) {
    // SAFETY: sigaction reads a fully initialised struct; the caller passes a catchable signal
    // and, for a handler, one that is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = action;
        sa.sa_flags = flags | libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// The current disposition of host signal `sig`.
pub fn signal_action(sig: i32) -> libc::sigaction {
    // SAFETY: sigaction with a null new action only writes the old one into a zeroed struct of
    // the right type.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old);
        old
    }
}

/// Calls the handler of disposition `old` (not SIG_DFL/SIG_IGN) from a signal handler, as the
/// kernel would have: with (sig, info, context) for SA_SIGINFO handlers, (sig) otherwise.
pub fn call_signal_handler(
    old: &libc::sigaction,
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    if old.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: `old` was read with sigaction and is an installed SA_SIGINFO handler, so its
        // address is a function of this type; the arguments are those the kernel passed us.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(old.sa_sigaction) };
        f(sig, info, uc);
    } else {
        // SAFETY: as above, for a plain handler taking the signal number.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(old.sa_sigaction) };
        f(sig);
    }
}

/// The si_code, sender pid and sender uid of a signal handed to an SA_SIGINFO handler.
pub fn siginfo_sender(info: &libc::siginfo_t) -> (i32, i32, u32) {
    // SAFETY: si_pid/si_uid read the kill-style member of the siginfo union, which every sender
    // fills (0 otherwise); `info` is a valid reference.
    unsafe { (info.si_code, info.si_pid(), info.si_uid()) }
}

/// Pins the calling thread to `cpu` (best effort: errors are returned for the caller to report).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_thread(0, &[cpu])
}

/// Restricts thread `tid` (0: the calling thread) to `cpus` (CPU sets: `multios-host`).
pub fn pin_thread(tid: i32, cpus: &[usize]) -> io::Result<()> {
    multios_host::cpus::pin_thread(tid, &cpus.iter().copied().collect())
}

/// The CPUs the calling thread may run on, ascending.
pub fn affinity_list() -> Vec<usize> {
    multios_host::CpuSet::allowed().to_vec()
}

/// The kernel's CPU mask size in bytes (what sched_getaffinity returns; a caller's buffer must
/// be at least this long).
pub fn cpumask_size() -> usize {
    let mut buf = [0u64; 128];
    // SAFETY: the buffer is 1024 bytes long, as passed; the kernel writes at most that much.
    let r = unsafe { libc::syscall(libc::SYS_sched_getaffinity, 0, 1024usize, buf.as_mut_ptr()) };
    if r > 0 {
        r as usize
    } else {
        8
    }
}

/// The calling thread's CPU affinity, to restore it after pinning.
pub fn affinity() -> Option<libc::cpu_set_t> {
    multios_host::cpus::current_mask().ok()
}

/// Restores an affinity returned by [`affinity`].
pub fn set_affinity(set: &libc::cpu_set_t) {
    let _ = multios_host::cpus::pin_thread_to_mask(0, set);
}

/// Lets the calling thread run on every CPU again (threads inherit their creator's pinning).
pub fn unpin() -> io::Result<()> {
    multios_host::cpus::unpin_current_thread()
}

/// The value of XCR0 on this CPU (the user-visible XSAVE features).
pub fn xcr0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: xgetbv(0) only reads a register; the VMM runs on an x86_64 CPU with OSXSAVE (Linux
    // enables it whenever XSAVE exists, and KVM requires it).
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    ((hi as u64) << 32) | lo as u64
}

/// The calling thread's pthread_t, as a number (for pthread_kill by another thread).
pub fn pthread_self() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The real user id of the VMM (the sender's uid of a signal the guest sends itself).
pub fn uid() -> u32 {
    // SAFETY: getuid has no arguments and cannot fail.
    unsafe { libc::getuid() }
}

/// Bytes of the XSAVE area for the features enabled in XCR0 (CPUID 0xD, sub-leaf 0, EBX): what a
/// signal frame stores of the FPU/SSE/AVX state.
pub fn xsave_size() -> usize {
    let size = std::arch::x86_64::__cpuid_count(0xd, 0).ebx as usize;
    if size >= 576 {
        size
    } else {
        // Legacy area + XSAVE header: the minimum for any CPU with XSAVE.
        576
    }
}

/// True when this process may execute `path` (access(2) with X_OK).
pub fn may_execute(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Closes this process's close-on-exec descriptors below `fd_floor` (the guest's: an execve in the
/// LWK does what the kernel would do on a real one; the VMM's own fds, at or above the floor, stay).
pub fn close_on_exec(fd_floor: i32) {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd < fd_floor)
        .collect();
    for fd in fds {
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

/// fork(2) of the VMM (for a guest's fork). Returns the child's pid in the parent, 0 in the child.
pub fn fork() -> io::Result<i32> {
    // SAFETY: fork has no memory-safety preconditions of its own. In the child only the calling
    // thread survives; the LWK calls this with a single-threaded guest, from the vCPU thread, holding
    // no lock, while the proxy and the signal pump are idle (see machine/fork.rs).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// Ends the process at once with `code` (after flushing stdout), running no destructors.
pub fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// Ends the process by signal `sig` with its default action (as the guest was), or with 128 + sig
/// if the signal does not end it.
pub fn die_by_signal(sig: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: resetting a disposition, unblocking and raising a signal have no memory effects.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    exit_now(128 + sig)
}

/// setuid/setgid/setreuid/setregid/setresuid/setresgid through glibc, which applies the change to
/// every thread of the VMM (the kernel keeps credentials per thread). Linux's return convention.
pub fn set_ids(nr: u64, a: [u64; 6]) -> i64 {
    let (x, y, z) = (a[0] as u32, a[1] as u32, a[2] as u32);
    // SAFETY: these functions take plain integers.
    let r = unsafe {
        match nr as i64 {
            libc::SYS_setuid => libc::setuid(x),
            libc::SYS_setgid => libc::setgid(x),
            libc::SYS_setreuid => libc::setreuid(x, y),
            libc::SYS_setregid => libc::setregid(x, y),
            libc::SYS_setresuid => libc::setresuid(x, y, z),
            libc::SYS_setresgid => libc::setresgid(x, y, z),
            _ => return -(libc::ENOSYS as i64),
        }
    };
    if r == 0 {
        0
    } else {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM) as i64)
    }
}

/// setgroups through glibc (every VMM thread, as [`set_ids`]).
pub fn set_groups(groups: &[u32]) -> i64 {
    // SAFETY: the pointer and length describe `groups`, which setgroups only reads.
    let r = unsafe { libc::setgroups(groups.len(), groups.as_ptr()) };
    if r == 0 {
        0
    } else {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM) as i64)
    }
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

fn c_path(path: &str) -> io::Result<std::ffi::CString> {
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

/// The whole content of the (small, procfs) file `path` relative to directory fd `dir`.
pub fn read_at(dir: i32, path: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let fd = open_at(dir, path, libc::O_RDONLY)?;
    // SAFETY: `fd` was just opened and is owned by nobody else: the File takes it over and closes it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
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

/// True when `fd` (an O_PATH|O_NOFOLLOW descriptor) is a symbolic link.
pub fn is_symlink(fd: i32) -> bool {
    // SAFETY: stat is plain data that fstat fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}
