//! Shared file mappings (`mmap(MAP_SHARED, fd)`): the VMM maps the file itself, MAP_FIXED, over
//! the guest's range — guest-physical == host-virtual, so the guest then reads and writes the
//! page cache directly, like a process on Linux: stores reach the file, other processes (other
//! LWK ranks included) see them, and `write()`s by anyone are seen through the mapping. When the
//! mapping ends (munmap, a MAP_FIXED mapping over it), private anonymous memory is put back.
//! Private file mappings stay copies (`local.rs`), which is what MAP_PRIVATE means until the file
//! changes underneath.

use super::{lock, Kernel, Reply};
use crate::mm::PAGE;
use crate::sys;

impl Kernel {
    /// True when `[addr, addr+len)` overlaps a shared file mapping.
    pub(super) fn overlaps_shared(&self, addr: u64, len: u64) -> bool {
        !lock(&self.shared)
            .intersections(addr, addr.saturating_add(len))
            .is_empty()
    }

    /// Ends the shared file mappings inside `[addr, addr+len)`: anonymous memory goes back.
    /// Returns a negative errno when the host refuses.
    pub(super) fn unshare(&self, addr: u64, len: u64) -> Result<(), i64> {
        if !addr.is_multiple_of(PAGE) {
            return Err(-(libc::EINVAL as i64));
        }
        let end = addr.saturating_add(len.div_ceil(PAGE) * PAGE);
        let mut shared = lock(&self.shared);
        for (s, e) in shared.intersections(addr, end) {
            sys::map_anonymous(s, e - s).map_err(|e| -(e.raw_os_error().unwrap_or(libc::ENOMEM) as i64))?;
        }
        shared.remove(addr, end);
        Ok(())
    }

    /// Maps `len` bytes of `fd` at `off` shared at `addr` (a range the memory manager just gave
    /// out). On failure the caller releases the range.
    pub(super) fn map_shared(&self, addr: u64, len: u64, prot: i32, fd: i32, off: u64) -> Reply {
        let len = len.div_ceil(PAGE) * PAGE;
        match sys::map_file_shared(addr, len, prot & libc::PROT_WRITE != 0, fd, off) {
            Ok(()) => {
                lock(&self.shared).insert(addr, addr + len);
                Reply::Ret(addr as i64)
            }
            Err(e) => Reply::Ret(-(e.raw_os_error().unwrap_or(libc::EINVAL) as i64)),
        }
    }

    /// msync: real for shared file mappings (the range is the same host memory), a no-op check
    /// for the LWK's anonymous and private memory.
    pub(super) fn msync(&self, a: [u64; 6]) -> Reply {
        if !lock(&self.mm).in_window(a[0], a[1]) {
            return Reply::Ret(-(libc::ENOMEM as i64));
        }
        if self.overlaps_shared(a[0], a[1]) {
            return Reply::Ret(sys::raw_syscall(libc::SYS_msync as u64, a));
        }
        Reply::Ret(0)
    }
}
