//! The raw host calls of split execution, each wrapped once with its safety argument.

use std::io;
use std::sync::atomic::AtomicU32;

/// The calling thread's FS base (its TLS pointer): the guest code that runs for this thread uses it.
pub fn fs_base() -> u64 {
    let mut v: u64 = 0;
    // SAFETY: ARCH_GET_FS writes one u64 to the pointer given, a live local.
    unsafe { libc::syscall(libc::SYS_arch_prctl, 0x1003, &mut v as *mut u64) };
    v
}

/// Performs system call `nr` with the guest's six arguments on the calling (partner) thread. The
/// guest runs in this very address space, so its pointers are this process's pointers, checked
/// by Linux as for any call of the process.
pub fn forward(nr: u64, a: [u64; 6]) -> i64 {
    // SAFETY: the caller (`forward::serve`) refuses the calls that would change this thread's
    // control flow or stack (clone, fork, vfork, rt_sigreturn…); every other call acts on
    // memory and descriptors of the process exactly as if the guest function had made it natively.
    let r = unsafe { libc::syscall(nr as libc::c_long, a[0], a[1], a[2], a[3], a[4], a[5]) };
    if r == -1 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        r as i64
    }
}

/// Waits while `word` holds `val`, at most `timeout` (None: forever); spurious returns are fine.
pub fn futex_wait(word: &AtomicU32, val: u32, timeout: Option<std::time::Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live atomic u32 (futex words are 32-bit aligned), `tsp` null or a live local.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            val,
            tsp,
            0usize,
            0u32,
        )
    };
}

/// Wakes every waiter on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a live atomic u32; FUTEX_WAKE only reads the address.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

/// Fresh anonymous read-write memory of `len` bytes (a guest stack, a mailbox), with a PROT_NONE
/// guard page below it; returns the usable range's start.
pub fn map_stack(len: usize) -> io::Result<u64> {
    // SAFETY: a new private anonymous mapping at an address the kernel picks: nothing is replaced.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + 4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the first page of the mapping just made, which nothing uses yet.
    unsafe { libc::mprotect(p, 4096, libc::PROT_NONE) };
    Ok(p as u64 + 4096)
}

/// KVM_SET_USER_MEMORY_REGION with guest-physical == host-virtual `[start, start+len)` as memslot
/// `slot` (`len` 0 deletes it).
pub fn set_slot(vm: &kvm_ioctls::VmFd, slot: u32, start: u64, len: u64) -> Result<(), kvm_ioctls::Error> {
    let region = kvm_bindings::kvm_userspace_memory_region {
        slot,
        flags: 0,
        guest_phys_addr: start,
        memory_size: len,
        userspace_addr: start,
    };
    // SAFETY: KVM never writes through a memslot by itself: it pins or maps the host pages only when
    // the guest touches them, and the guest only reaches addresses its page tables map, which
    // `space.rs` fills from the process's own mappings. Host ranges that are unmapped (holes of
    // the chunk) make such an access fail with EFAULT instead of touching anything.
    unsafe { vm.set_user_memory_region(region) }
}

/// Opens /proc/self/maps (a raw open: no allocation).
pub fn open_maps() -> io::Result<i32> {
    // SAFETY: a NUL-terminated static path; the result is checked.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// read(2) into `buf`, retrying on EINTR.
pub fn read_fd(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a live, writable slice of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Closes a descriptor this module opened.
pub fn close_fd(fd: i32) {
    // SAFETY: `fd` was opened by `open_maps` and is used by nothing else.
    unsafe { libc::close(fd) };
}

thread_local! {
    static FS_BASE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The calling thread's FS base, cached per thread.
pub fn my_fs_base() -> u64 {
    FS_BASE.with(|c| {
        if c.get() == 0 {
            c.set(fs_base());
        }
        c.get()
    })
}

/// `struct procmap_query` (linux/fs.h, Linux 6.11).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// PROCMAP_QUERY: _IOWR('f', 17, struct procmap_query).
const PROCMAP_QUERY: libc::c_ulong =
    0xc000_0000 | ((std::mem::size_of::<ProcmapQuery>() as libc::c_ulong) << 16) | (0x66 << 8) | 17;

/// The mapping covering `addr`, asked of /proc/self/maps's fd with PROCMAP_QUERY (no text to
/// read or parse: ≈ 1 µs where reading the whole file costs ≈ 100 µs here): `Ok(Some((start,
/// end, prot)))`, `Ok(None)` when none covers it, `Err` when the kernel lacks the ioctl (ENOTTY).
pub fn query_vma(maps_fd: i32, addr: u64) -> io::Result<Option<(u64, u64, i32)>> {
    query(maps_fd, addr, 0)
}

/// The first mapping that covers `addr` or lies above it (PROCMAP_QUERY_COVERING_OR_NEXT_VMA).
pub fn query_next_vma(maps_fd: i32, addr: u64) -> io::Result<Option<(u64, u64, i32)>> {
    query(maps_fd, addr, 0x10)
}

fn query(maps_fd: i32, addr: u64, flags: u64) -> io::Result<Option<(u64, u64, i32)>> {
    let mut q = ProcmapQuery {
        size: std::mem::size_of::<ProcmapQuery>() as u64,
        query_flags: flags,
        query_addr: addr,
        ..Default::default()
    };
    // SAFETY: `q` is a live, correctly sized procmap_query with no name or build-id buffers
    // (their sizes are 0), which is all the kernel writes.
    let r = unsafe { libc::ioctl(maps_fd, PROCMAP_QUERY, &mut q as *mut ProcmapQuery) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            _ => Err(e),
        };
    }
    let mut prot = 0;
    if q.vma_flags & 1 != 0 {
        prot |= libc::PROT_READ;
    }
    if q.vma_flags & 2 != 0 {
        prot |= libc::PROT_WRITE;
    }
    if q.vma_flags & 4 != 0 {
        prot |= libc::PROT_EXEC;
    }
    Ok(Some((q.vma_start, q.vma_end, prot)))
}
