//! Shared memory the VMM owns outside the guest window (issue #14, kernel-shared mappings): the
//! io_uring rings and submission-queue entries the kernel reads and writes. The memory is
//! MAP_SHARED anonymous (shmem), so a forked VMM shares it as a forked process shares a ring, and
//! it can be shown to the guest at any address of its window with [`SharedRegion::alias_into`]
//! (mremap of a shared mapping with old size 0 makes a second mapping of the same pages).

use std::io;

/// A MAP_SHARED anonymous mapping at an address the kernel chose (never inside the guest window:
/// that range is mapped by the VMM before any region exists, so the kernel cannot pick it).
#[derive(Debug)]
pub struct SharedRegion {
    addr: u64,
    len: usize,
}

impl SharedRegion {
    /// `len` bytes (rounded up to pages) of zeroed shared memory.
    pub fn new(len: usize) -> io::Result<SharedRegion> {
        let len = len.div_ceil(4096).max(1) * 4096;
        // SAFETY: a new mapping chosen by the kernel (no MAP_FIXED) replaces nothing; the result
        // is checked, and `Drop` unmaps exactly this range.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedRegion { addr: p as u64, len })
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `buf.len()` bytes at `off` out of the region (bytes past its end read as zero).
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        let n = buf.len().min(self.len.saturating_sub(off));
        buf[n..].fill(0);
        // SAFETY: `[addr+off, addr+off+n)` lies inside the mapping, which lives as long as
        // `self`; the kernel and the guest may write it concurrently (shared memory), so this is
        // a plain byte copy into `buf`, never a reference into the region.
        unsafe {
            std::ptr::copy_nonoverlapping((self.addr as usize + off) as *const u8, buf.as_mut_ptr(), n)
        };
    }

    /// Copies `data` into the region at `off` (clipped at its end).
    pub fn write(&self, off: usize, data: &[u8]) {
        let n = data.len().min(self.len.saturating_sub(off));
        // SAFETY: as in `read`: inside the mapping, no Rust reference into it exists.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), (self.addr as usize + off) as *mut u8, n) };
    }

    /// The u32 at `off` (4-aligned), read with acquire ordering: a ring index the kernel or the
    /// guest publishes.
    pub fn load_u32(&self, off: usize) -> u32 {
        if off + 4 > self.len || !off.is_multiple_of(4) {
            return 0;
        }
        // SAFETY: aligned, inside the mapping; AtomicU32 has u32's layout and the memory is only
        // ever accessed through atomics or byte copies here.
        let a = unsafe { &*((self.addr as usize + off) as *const std::sync::atomic::AtomicU32) };
        a.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Maps the first `len` bytes of the region a second time at `dst` (a page-aligned range of
    /// the guest window, replaced as MAP_FIXED would): the guest and the kernel then use the
    /// same pages.
    pub fn alias_into(&self, dst: u64, len: u64) -> io::Result<()> {
        if len as usize > self.len {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: mremap with old size 0 duplicates a shared mapping; MREMAP_FIXED replaces only
        // `[dst, dst+len)`, a range of the guest window (VMM memory with no Rust references into
        // it), and the source mapping stays as it is.
        let p = unsafe {
            libc::mremap(
                self.addr as *mut libc::c_void,
                0,
                len as usize,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                dst as *mut libc::c_void,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; nothing refers to it once `self` is gone (the
        // kernel holds its own page references for the rings it pinned).
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}
