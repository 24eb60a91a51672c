//! Shared file mappings (`mmap(MAP_SHARED, fd)`): the VMM maps the file itself, MAP_FIXED, over
//! the guest's range — guest-physical == host-virtual, so the guest then reads and writes the
//! page cache directly, like a process on Linux: stores reach the file, other processes (other
//! LWK ranks included) see them, and `write()`s by anyone are seen through the mapping. When the
//! mapping ends (munmap, a MAP_FIXED mapping over it), private anonymous memory is put back.
//! Private file mappings stay copies (`local.rs`), which is what MAP_PRIVATE means until the file
//! changes underneath.
//!
//! SysV shared memory the same way: shmget and shmctl are delegated (the segments live in the
//! host), and shmat takes a range from the memory manager and has the VMM attach the segment over
//! it (SHM_REMAP), so the guest uses the segment's pages themselves; shmdt (or munmap) puts private
//! anonymous memory back, which detaches it in the host.

use crate::kernel::{lock, Kernel, Reply};
use crate::mm::PAGE;
use crate::sys;

impl Kernel {
    /// True when `[addr, addr+len)` overlaps a shared file mapping.
    pub(super) fn overlaps_shared(&self, addr: u64, len: u64) -> bool {
        !lock(&self.space.shared)
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
        let mut shared = lock(&self.space.shared);
        for (s, e) in shared.intersections(addr, end) {
            sys::map_anonymous(s, e - s, self.mem.huge_pages())
                .map_err(|e| -(e.raw_os_error().unwrap_or(libc::ENOMEM) as i64))?;
        }
        shared.remove(addr, end);
        // SysV attachments inside the range are gone with it (munmap detaches, as in Linux).
        lock(&self.space.shm).retain(|&a, _| !(addr..end).contains(&a));
        Ok(())
    }

    /// Maps `len` bytes of `fd` at `off` shared at `addr` (a range the memory manager just gave
    /// out). On failure the caller releases the range.
    pub(super) fn map_shared(&self, addr: u64, len: u64, prot: i32, fd: i32, off: u64) -> Reply {
        let len = len.div_ceil(PAGE) * PAGE;
        match sys::map_file_shared(addr, len, prot & libc::PROT_WRITE != 0, fd, off) {
            Ok(()) => {
                lock(&self.space.shared).insert(addr, addr + len);
                Reply::Ret(addr as i64)
            }
            Err(e) => Reply::Ret(-(e.raw_os_error().unwrap_or(libc::EINVAL) as i64)),
        }
    }

    /// A non-executable MAP_PRIVATE file mapping at `addr` (a range the memory manager just gave
    /// out), made by the host: copy-on-write pages of the file, so the mapping sees the file
    /// until the guest writes a page — and a truncated file's pages go, as on Linux (stress-ng's
    /// memfd stressor checks it). The host's error when it refuses (a socket, a pipe, a procfs
    /// file: Linux refuses the guest's mmap the same way; the range holds ordinary memory again).
    pub(super) fn map_private_file(&self, addr: u64, len: u64, fd: i32, off: u64) -> Result<(), i64> {
        let len = len.div_ceil(PAGE) * PAGE;
        sys::map_file_private(addr, len, fd, off)
            .map_err(|e| -(e.raw_os_error().unwrap_or(libc::ENODEV) as i64))?;
        lock(&self.space.shared).insert(addr, addr + len);
        Ok(())
    }

    /// `MAP_ANONYMOUS` memory with MAP_SHARED or MAP_HUGETLB at `addr` (a range the memory
    /// manager just gave out): a host mapping of its own, so a forked child shares MAP_SHARED
    /// pages with its parent (a guest fork forks the VMM) and MAP_HUGETLB gets the host's huge
    /// pages (or ENOMEM, as natively, when none are free). The range is then ended like a shared
    /// file mapping (`unshare`). On failure the caller releases the range.
    pub(super) fn map_anonymous_special(&self, addr: u64, len: u64, shared: bool, huge: bool) -> Reply {
        match sys::map_host_anonymous(addr, len, shared, huge) {
            Ok(()) => {
                lock(&self.space.shared).insert(addr, addr + len);
                Reply::Ret(addr as i64)
            }
            Err(e) => {
                // Whatever the host refused, the range must hold ordinary memory again.
                let _ = sys::map_anonymous(addr, len, self.mem.huge_pages());
                Reply::Ret(-(e.raw_os_error().unwrap_or(libc::ENOMEM) as i64))
            }
        }
    }

    /// The MAP_HUGETLB requests the LWK refuses (EINVAL, reported once): a page size other than
    /// 2 MiB (the only size this LWK's page tables and window are laid out for), and a fixed
    /// address that is not 2 MiB-aligned (Linux's EINVAL).
    pub(super) fn hugetlb_refused(&self, flags: i32, addr: u64, fixed: bool) -> Option<Reply> {
        let size_log2 = (flags >> libc::MAP_HUGE_SHIFT) & 0x3f;
        if size_log2 != 0 && size_log2 != 21 {
            self.note_once(
                0x2_0000_0000 | size_log2 as u64,
                format!(
                    "mmap: MAP_HUGETLB with 2^{size_log2}-byte pages is not supported by the LWK \
                     (2 MiB pages only); returning EINVAL"
                ),
            );
            return Some(Reply::Ret(-(libc::EINVAL as i64)));
        }
        (fixed && !addr.is_multiple_of(crate::memory::PAGE_2M)).then_some(Reply::Ret(-(libc::EINVAL as i64)))
    }

    /// mprotect that gives write access to part of a shared mapping: the host mapping must allow
    /// it too (it was made with the protection mmap asked for), and for a file opened read-only
    /// it cannot: EACCES, as Linux answers.
    pub(super) fn share_protect(&self, addr: u64, len: u64, prot: i32) -> Result<(), i64> {
        if prot & libc::PROT_WRITE == 0 {
            return Ok(());
        }
        let end = addr.saturating_add(len.div_ceil(PAGE) * PAGE);
        let parts = lock(&self.space.shared).intersections(addr, end);
        for (s, e) in parts {
            sys::protect(s, e - s, libc::PROT_READ | libc::PROT_WRITE)
                .map_err(|e| -(e.raw_os_error().unwrap_or(libc::EACCES) as i64))?;
        }
        Ok(())
    }

    /// mremap(old, old_len, new_len, MREMAP_MAYMOVE?) of a shared mapping (a file, memfd,
    /// device or MAP_SHARED anonymous memory): the host mapping itself is resized and moved, so
    /// the guest keeps the same pages (a file mapping grows from the file), where the memory
    /// manager placed the new range. A SysV attachment, or a range only partly shared, is refused.
    pub(super) fn mremap_shared(&self, nr: u64, a: [u64; 6]) -> Reply {
        let (old, may_move) = (a[0], a[3] & libc::MREMAP_MAYMOVE as u64 != 0);
        let (old_len, new_len) = (a[1].div_ceil(PAGE) * PAGE, a[2].div_ceil(PAGE) * PAGE);
        if !old.is_multiple_of(PAGE) || new_len == 0 {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let sysv = lock(&self.space.shm)
            .range(..old.saturating_add(old_len))
            .any(|(&s, &l)| s + l > old);
        if sysv || !lock(&self.space.shared).covers(old, old + old_len) {
            return self.refuse(
                nr,
                "mremap of a SysV attachment, or of a range only partly a shared mapping",
            );
        }
        if new_len <= old_len {
            if let Err(e) = self.unshare(old + new_len, old_len - new_len) {
                return Reply::Ret(e);
            }
            if new_len < old_len {
                self.release(old + new_len, old_len - new_len).ok();
            }
            return Reply::Ret(old as i64);
        }
        // Where the memory manager puts it (grown in place or moved); its copy/zero effects are
        // for private memory and are not applied: the host mapping moves instead.
        let mut fx = crate::mm::Effects::default();
        let new = match lock(&self.space.mm).mremap(old, old_len, new_len, may_move, &mut fx) {
            Ok(n) => n,
            Err(e) => return Reply::Ret(e.errno()),
        };
        if let Err(e) = sys::move_mapping(old, old_len, new_len, new) {
            // Undo the bookkeeping: the guest keeps its old mapping.
            let mut fx = crate::mm::Effects::default();
            let mut mm = lock(&self.space.mm);
            if new == old {
                mm.munmap(old + old_len, new_len - old_len, &mut fx).ok();
            } else {
                mm.munmap(new, new_len, &mut fx).ok();
                mm.mmap(old, old_len, true, &mut fx).ok();
            }
            return Reply::Ret(-(e.raw_os_error().unwrap_or(libc::ENOMEM) as i64));
        }
        {
            let mut shared = lock(&self.space.shared);
            shared.remove(old, old + old_len);
            shared.insert(new, new + new_len);
        }
        if new != old {
            // The range the mapping left holds ordinary (free) memory again.
            let _ = sys::map_anonymous(old, old_len, self.mem.huge_pages());
        }
        self.note_remap(old, old_len, new, new_len);
        self.sync_protections(old, old + old_len);
        self.sync_protections(new, new + new_len);
        Reply::Ret(new as i64)
    }

    /// mremap(old, old_len, new_len, MREMAP_MAYMOVE | MREMAP_FIXED, new): the mapping moves to
    /// `new`, replacing whatever was there, as on Linux. A shared (or host-mapped private file)
    /// mapping moves in the host; the LWK's own memory is copied.
    pub(super) fn mremap_fixed(&self, nr: u64, a: [u64; 6]) -> Reply {
        let (old, flags, new) = (a[0], a[3], a[4]);
        let (old_len, new_len) = (a[1].div_ceil(PAGE) * PAGE, a[2].div_ceil(PAGE) * PAGE);
        let einval = Reply::Ret(-(libc::EINVAL as i64));
        if flags & !(libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED) as u64 != 0 {
            return self.refuse(nr, "mremap with MREMAP_DONTUNMAP");
        }
        if flags & libc::MREMAP_MAYMOVE as u64 == 0
            || !old.is_multiple_of(PAGE)
            || !new.is_multiple_of(PAGE)
            || new_len == 0
            || (old < new.saturating_add(new_len) && new < old.saturating_add(old_len))
        {
            return einval;
        }
        {
            let mm = lock(&self.space.mm);
            if !mm.in_window(new, new_len) {
                return Reply::Ret(-(libc::ENOMEM as i64));
            }
            if !mm.maps.covers(old, old.saturating_add(old_len)) {
                return Reply::Ret(-(libc::EFAULT as i64));
            }
        }
        let moved_in_host = lock(&self.space.shared).covers(old, old + old_len);
        let sysv = lock(&self.space.shm)
            .range(..old + old_len)
            .any(|(&s, &l)| s + l > old);
        if sysv || (!moved_in_host && self.overlaps_shared(old, old_len)) {
            return self.refuse(
                nr,
                "mremap of a SysV attachment, or of a range only partly a shared mapping",
            );
        }
        // The destination: whatever was there goes, then it is the mapping's.
        if let Err(e) = self.unshare(new, new_len) {
            return Reply::Ret(e);
        }
        self.release(new, new_len).ok();
        let mut fx = crate::mm::Effects::default();
        if let Err(e) = lock(&self.space.mm).mmap(new, new_len, true, &mut fx) {
            return Reply::Ret(e.errno());
        }
        self.apply(fx);
        if moved_in_host {
            if let Err(e) = sys::move_mapping(old, old_len, new_len, new) {
                self.release(new, new_len).ok();
                return Reply::Ret(-(e.raw_os_error().unwrap_or(libc::ENOMEM) as i64));
            }
            let mut shared = lock(&self.space.shared);
            shared.remove(old, old + old_len);
            shared.insert(new, new + new_len);
            drop(shared);
            let _ = sys::map_anonymous(old, old_len, self.mem.huge_pages());
        } else {
            let mut buf = vec![0u8; 1 << 20];
            let mut done = 0;
            while done < old_len.min(new_len) {
                let n = (old_len.min(new_len) - done).min(buf.len() as u64) as usize;
                self.mem.read(old + done, &mut buf[..n]);
                self.mem.write(new + done, &buf[..n]);
                done += n as u64;
            }
        }
        self.note_remap(old, old_len, new, new_len);
        self.release(old, old_len).ok();
        self.sync_protections(new, new + new_len);
        Reply::Ret(new as i64)
    }

    /// mincore(addr, len, vec) with Linux's checks in Linux's order (mm/mincore.c): an unaligned
    /// start is EINVAL, a range outside the window or with an unmapped page ENOMEM, a vector the
    /// guest cannot write EFAULT (none is needed for a zero length). Every mapped page is
    /// reported resident: the window is backed before the guest touches it.
    pub(super) fn mincore(&self, a: [u64; 6]) -> Reply {
        let (addr, len, vec) = (a[0], a[1], a[2]);
        if !addr.is_multiple_of(PAGE) {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let pages = len.div_ceil(PAGE);
        if pages == 0 {
            // Nothing to look at: Linux checks no range and no vector.
            return Reply::Ret(0);
        }
        let end = addr.saturating_add(pages * PAGE);
        {
            let mm = lock(&self.space.mm);
            if !mm.in_window(addr, pages * PAGE) {
                return Reply::Ret(-(libc::ENOMEM as i64));
            }
            let heap = (mm.brk_start, mm.brk_cur.div_ceil(PAGE) * PAGE);
            let mut pos = addr;
            while pos < end {
                if (heap.0..heap.1).contains(&pos) {
                    pos = heap.1.min(end);
                    continue;
                }
                match mm.maps.intersections(pos, end).first() {
                    Some(&(s, e)) if s == pos => pos = e,
                    _ => return Reply::Ret(-(libc::ENOMEM as i64)),
                }
            }
        }
        if !self.mem.user_can(vec, pages, true) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        self.mem.write(vec, &vec![1u8; pages as usize]);
        Reply::Ret(0)
    }

    /// Reports `msg` once per `key` (the keys of `reported` above 2^32 are not call numbers).
    pub(crate) fn note_once(&self, key: u64, msg: String) {
        if lock(&self.reported).insert(key) {
            self.note(msg);
        }
    }

    /// shmat(shmid, addr, shmflg): the segment attached at `addr` (SHM_RND rounds it down) or
    /// where the memory manager has room.
    pub(super) fn shmat(&self, a: [u64; 6]) -> Reply {
        let (id, want, flg) = (a[0], a[1], a[2] as i32);
        let mut ds = [0u8; 112];
        let r = sys::raw_syscall(
            libc::SYS_shmctl as u64,
            [id, libc::IPC_STAT as u64, ds.as_mut_ptr() as u64, 0, 0, 0],
        );
        if r < 0 {
            return Reply::Ret(r);
        }
        // struct shmid_ds: shm_perm (48 bytes), then size_t shm_segsz.
        let size = u64::from_le_bytes(ds[48..56].try_into().unwrap_or([0; 8]));
        let len = size.div_ceil(PAGE) * PAGE;
        let addr = if flg & libc::SHM_RND != 0 {
            want & !(PAGE - 1)
        } else {
            want
        };
        if !addr.is_multiple_of(PAGE) {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let mut fx = crate::mm::Effects::default();
        let got = {
            let mut mm = lock(&self.space.mm);
            // Linux: an address over memory already mapped is EINVAL unless SHM_REMAP says to
            // replace it (the attachment replaced a heap page: glibc's free() then aborted).
            let end = addr.saturating_add(len);
            let heap = (mm.brk_start, mm.brk_cur.div_ceil(PAGE) * PAGE);
            let over_heap = heap.0 < heap.1 && addr < heap.1 && heap.0 < end;
            if addr != 0 && flg & libc::SHM_REMAP == 0 && (over_heap || !mm.maps.is_free(addr, end)) {
                return Reply::Ret(-(libc::EINVAL as i64));
            }
            mm.mmap(addr, len, addr != 0, &mut fx)
        };
        let addr = match got {
            Ok(v) => v,
            Err(e) => return Reply::Ret(e.errno()),
        };
        if let Err(e) = self.unshare(addr, len) {
            return Reply::Ret(e);
        }
        self.apply(fx);
        let host_flags = (flg & (libc::SHM_RDONLY | libc::SHM_EXEC)) | libc::SHM_REMAP;
        let r = sys::raw_syscall(libc::SYS_shmat as u64, [id, addr, host_flags as u64, 0, 0, 0]);
        if r < 0 {
            self.release(addr, len).ok();
            return Reply::Ret(r);
        }
        lock(&self.space.shared).insert(addr, addr + len);
        lock(&self.space.shm).insert(addr, len);
        self.sync_protections(addr, addr + len);
        Reply::Ret(addr as i64)
    }

    /// shmdt(addr): `addr` must be where shmat attached a segment.
    /// A sealed attachment stays, and the call returns 0, as on Linux (its detach of each area
    /// fails with EPERM, which shmdt does not report).
    pub(super) fn shmdt(&self, addr: u64) -> Reply {
        let Some(len) = lock(&self.space.shm).get(&addr).copied() else {
            return Reply::Ret(-(libc::EINVAL as i64));
        };
        if self.sealed(addr, len) {
            return Reply::Ret(0);
        }
        lock(&self.space.shm).remove(&addr);
        if let Err(e) = self.unshare(addr, len) {
            return Reply::Ret(e);
        }
        Reply::Ret(
            self.release(addr, len)
                .map_or_else(crate::mm::MmError::errno, |_| 0),
        )
    }

    /// msync: real for shared file mappings (the range is the same host memory), a no-op check
    /// for the LWK's anonymous and private memory. The arguments are checked as Linux does
    /// (mm/msync.c): an unaligned start, unknown flags, or MS_ASYNC with MS_SYNC are EINVAL.
    pub(super) fn msync(&self, a: [u64; 6]) -> Reply {
        let flags = a[2] as i64;
        let known = (libc::MS_ASYNC | libc::MS_INVALIDATE | libc::MS_SYNC) as i64;
        let both = (libc::MS_ASYNC | libc::MS_SYNC) as i64;
        if a[0] & 0xfff != 0 || flags & !known != 0 || flags & both == both {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        if !lock(&self.space.mm).in_window(a[0], a[1]) {
            return Reply::Ret(-(libc::ENOMEM as i64));
        }
        if self.overlaps_shared(a[0], a[1]) {
            return Reply::Ret(sys::raw_syscall(libc::SYS_msync as u64, a));
        }
        Reply::Ret(0)
    }
}
