//! Memory mappings of the VMM (the guest window is VMM memory: guest-physical == host-virtual).

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

/// madvise advice that drops pages like MADV_DONTNEED, locked ones too (Linux ≥ 5.18).
pub const MADV_DONTNEED_LOCKED: i32 = 24;

/// Locks `[addr, addr+len)` of guest memory in RAM, faulting every page in now.
pub fn mlock(addr: u64, len: u64) -> io::Result<()> {
    // SAFETY: callers pass a region of guest memory this process mapped; mlock changes no contents.
    let r = unsafe { libc::mlock(addr as *const libc::c_void, len as usize) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes KVM drop its shadow entries for the host pages of `[addr, addr+len)` of the guest window,
/// keeping their contents: a host mprotect that adds execute permission and one that takes it
/// away again (any protection change runs the MMU notifiers, and KVM unmaps the range from every
/// shadow table and flushes every vCPU's TLB before the call returns). Reads and writes stay
/// allowed throughout, so other vCPUs, the proxy and the host kernel may use the range meanwhile
/// (the earlier flip to read-only and back could only be made with one vCPU and private memory).
///
/// Every host mapping of the window is read-write except a shared mapping of a file opened
/// read-only, whose VMA may not gain write permission: there (and where execution may not be
/// added: a file on a noexec mount) the first mprotect fails, the range is set back to
/// read-write where that is allowed — what it was — and the caller drops every shadow table
/// instead.
pub fn invalidate_shadow(addr: u64, len: usize) -> io::Result<()> {
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a range of the guest window (memory the VMM mapped, no Rust reference into it);
    // both protections allow reading and writing, so no access by anyone fails meanwhile.
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, rw | libc::PROT_EXEC) } != 0 {
        let e = io::Error::last_os_error();
        // The VMAs before the one that refused did gain PROT_EXEC: take it away again (this
        // stops at the same VMA, which was left as it was).
        // SAFETY: as above.
        unsafe { libc::mprotect(addr as *mut libc::c_void, len, rw) };
        return Err(e);
    }
    // SAFETY: as above; the range was read-write before the first call.
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, rw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Has every later mapping of the process locked as its pages are touched
/// (mlockall(MCL_FUTURE | MCL_ONFAULT)).
pub fn lock_future() -> io::Result<()> {
    // SAFETY: mlockall takes flags only.
    let r = unsafe { libc::mlockall(libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Unlocks all of the process's memory and ends MCL_FUTURE.
pub fn unlock_all() {
    // SAFETY: munlockall takes no arguments.
    unsafe { libc::munlockall() };
}

/// Maps `len` bytes of file `fd` from `off`, shared, over `[addr, addr+len)` of the guest window
/// (MAP_FIXED replaces the anonymous memory there; KVM's MMU notifiers make the guest see the
/// file's pages).
pub fn map_file_shared(addr: u64, len: u64, writable: bool, fd: i32, off: u64) -> io::Result<()> {
    let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    map_over(addr, len, prot, libc::MAP_SHARED, fd, off)
}

/// Maps `len` bytes of file `fd` from `off` privately (copy-on-write, always writable for the
/// VMM) over `[addr, addr+len)` of the guest window: the guest's non-executable MAP_PRIVATE file
/// mappings, which then follow the file as Linux's do until written.
pub fn map_file_private(addr: u64, len: u64, fd: i32, off: u64) -> io::Result<()> {
    map_over(
        addr,
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE,
        fd,
        off,
    )
}

/// Maps fresh anonymous memory over `[addr, addr+len)` of the guest window that the guest asked
/// to be special: `shared` is MAP_SHARED (shmem), which a forked VMM then shares as a forked
/// process does; with `huge`, the pages come from hugetlbfs (`MAP_HUGETLB`, 2 MiB; ENOMEM when
/// the machine has none free, as for a native process).
pub fn map_host_anonymous(addr: u64, len: u64, shared: bool, huge: bool) -> io::Result<()> {
    let flags = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } | libc::MAP_ANONYMOUS
        | if huge {
            libc::MAP_HUGETLB
        } else {
            libc::MAP_NORESERVE
        };
    map_over(addr, len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)
}

/// Resizes the shared mapping at `[old, old+old_len)` of the guest window to `new_len` bytes and
/// places it at `dst` (the same pages, a file mapping grown from the file): first moved to an
/// address the kernel picks outside the window (so growing never meets the window's own memory),
/// then moved to `dst`, replacing what is there. The old range is left unmapped when `dst`
/// differs: the caller puts memory back there.
pub fn move_mapping(old: u64, old_len: u64, new_len: u64, dst: u64) -> io::Result<()> {
    // SAFETY: `[old, old+old_len)` is a shared mapping the VMM made in the guest window (no Rust
    // references into it); MREMAP_MAYMOVE without FIXED lets the kernel choose a free range.
    let tmp = unsafe {
        libc::mremap(
            old as *mut libc::c_void,
            old_len as usize,
            new_len as usize,
            libc::MREMAP_MAYMOVE,
        )
    };
    if tmp == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `tmp` is the mapping just moved; MREMAP_FIXED replaces only `[dst, dst+new_len)`, a
    // range of the guest window the memory manager gave for it.
    let p = unsafe {
        libc::mremap(
            tmp,
            new_len as usize,
            new_len as usize,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            dst as *mut libc::c_void,
        )
    };
    if p == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        // Put it back where it was (its first old_len bytes), so the guest keeps its mapping.
        // SAFETY: as above; `old` was vacated by the first move.
        unsafe {
            libc::mremap(
                tmp,
                new_len as usize,
                old_len as usize,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                old as *mut libc::c_void,
            )
        };
        return Err(e);
    }
    Ok(())
}

/// mprotect of a shared mapping of the guest window in the host: write access to a file mapping
/// is the file's to grant (EACCES for a file opened read-only, as natively).
pub fn protect(addr: u64, len: u64, prot: i32) -> io::Result<()> {
    // SAFETY: a range of the guest window that holds a shared mapping the VMM made; mprotect
    // changes only its access rights, and the VMM accesses guest memory through raw copies
    // checked against the same rights (`GuestMemory`), never through references.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, len as usize, prot) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts fresh private anonymous memory back over `[addr, addr+len)` of the guest window, after a
/// shared file mapping there ends; `huge`: transparent huge pages asked for, as for the rest of
/// the window (`GuestMemory::set_huge_pages`), else 4 KiB pages.
pub fn map_anonymous(addr: u64, len: u64, huge: bool) -> io::Result<()> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    map_over(addr, len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)?;
    let advice = if huge {
        libc::MADV_HUGEPAGE
    } else {
        libc::MADV_NOHUGEPAGE
    };
    let _ = madvise(addr, len as usize, advice);
    Ok(())
}

/// `mmap(addr, len, prot, flags | MAP_FIXED, fd, off)` over a range of the guest window: the one
/// place the VMM replaces guest memory with another mapping.
fn map_over(addr: u64, len: u64, prot: i32, flags: i32, fd: i32, off: u64) -> io::Result<()> {
    // SAFETY: callers pass a page-aligned range inside the guest window, memory owned by the VMM
    // that no Rust reference points into (guest memory is accessed through raw copies);
    // MAP_FIXED only replaces those pages.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len as usize,
            prot,
            flags | libc::MAP_FIXED,
            fd,
            off as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        if fd >= 0 {
            // A MAP_FIXED mapping the file's mmap refused (a socket, a procfs file) may have
            // unmapped the range already: the window gets ordinary memory there again (a hole
            // there killed the VMM with SIGSEGV at its next touch of the range).
            // SAFETY: the same range, anonymous memory in place of what may be a hole.
            unsafe {
                libc::mmap(
                    addr as *mut libc::c_void,
                    len as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                    -1,
                    0,
                );
            }
        }
        return Err(e);
    }
    Ok(())
}

/// A whole file mapped read-only and private, unmapped when dropped: reading an ELF file's
/// headers and symbol tables touches only those pages (a 44 MB program is not read in full).
pub struct MappedFile {
    addr: *mut libc::c_void,
    len: usize,
}

impl MappedFile {
    /// Maps the file at `path` (a library the overrides or the tests read; the loader maps the
    /// program files it opened itself, `loader::exefile`). Its descriptor is a temporary in the
    /// guest's range until it is closed, so the open is made under `low_fds` and never waits:
    /// non-blocking (a FIFO's open waited for a writer, holding the lock: every other VMM thread
    /// that needed it hung too) and without taking a terminal; a file that is not regular is
    /// EINVAL (`of_fd`).
    pub fn open(path: &std::path::Path) -> io::Result<MappedFile> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let _low = super::lowfds::low_fds();
        let file = std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)?;
        MappedFile::of_fd(file.as_raw_fd())
    }

    /// Maps the whole file open as `fd` (which stays open and owned by the caller).
    pub fn of_fd(fd: i32) -> io::Result<MappedFile> {
        // SAFETY: `stat` is plain data for which all-zero bytes are valid; fstat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a live, writable stat; fstat reads nothing else.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let len = usize::try_from(st.st_size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a new private read-only mapping chosen by the kernel (no MAP_FIXED): it replaces
        // nothing; the result is checked, and `Drop` unmaps exactly this range.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(MappedFile { addr, len })
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `addr..addr+len` is mapped readable for as long as `self` lives. A file that
        // another process rewrites during the scan could change bytes under the slice (as with
        // any file mapping); its only reader parses them with bounds checks and copies names
        // out, so a torn read gives a wrong warning, not a memory error in the VMM.
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping created in `open`; no reference into it outlives `self`.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Whether the host can back the byte at `addr` of this process (a page of a file mapping past
/// the end of its file cannot: an access would raise SIGBUS). Read through process_vm_readv,
/// which reports such a page as EFAULT instead of a signal; a page that can be backed is
/// faulted in by the read.
pub fn host_page_backed(addr: u64) -> bool {
    let mut byte = 0u8;
    let local = libc::iovec {
        iov_base: (&mut byte as *mut u8).cast(),
        iov_len: 1,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: the local iovec names one byte we own; the remote one is read by the kernel, which
    // checks it against this process's mappings and fails with EFAULT rather than faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == 1
}

/// Reads `buf.len()` bytes at `addr` of this process without risking a fault: process_vm_readv
/// reports a page that cannot be read (unmapped, PROT_NONE, a file page past the end of its file)
/// as EFAULT instead of a signal. False unless every byte was read.
pub fn read_checked(addr: u64, buf: &mut [u8]) -> bool {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec names `buf`, which we own mutably for the call; the remote one is
    // read by the kernel, which checks it against this process's mappings and fails with EFAULT
    // rather than faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == buf.len() as isize
}

/// Atomically replaces the 32-bit word at `addr` with `new` if it holds `old`; returns the value
/// it held. The caller has checked that `addr` is 4-byte aligned, inside the guest window, in a
/// mapping the guest may write and backed by the host ([`read_checked`] of it succeeded).
pub fn cmpxchg_u32(addr: u64, old: u32, new: u32) -> u32 {
    debug_assert!(addr.is_multiple_of(4));
    // SAFETY: per the caller's checks, `addr` is an aligned word of guest memory — the VMM's own
    // writable anonymous or file mapping, never behind a Rust reference — so an atomic access to
    // it is sound; the guest (and other processes sharing the page) only ever change it with
    // atomic instructions or plain stores, which an atomic compare-exchange tolerates.
    let word = unsafe { &*(addr as *const std::sync::atomic::AtomicU32) };
    match word.compare_exchange(
        old,
        new,
        std::sync::atomic::Ordering::SeqCst,
        std::sync::atomic::Ordering::SeqCst,
    ) {
        Ok(v) | Err(v) => v,
    }
}
