//! Guest memory: one address space shared by the guest and the VMM.
//!
//! Unified address space (McKernel's idea): every memslot has guest-physical == host-virtual, and
//! the guest page tables map every page to itself. A pointer the application passes to a system
//! call is therefore a valid host pointer in the proxy thread: no translation, only a bounds check.
//! The window is mapped with 2 MiB pages where a 2 MiB range has one protection and with 4 KiB
//! pages where protections differ inside it (`pagetable.rs`, issue #14); this KVM shadows guest
//! page tables, so every edit is followed by a CR3 reload on the vCPUs (`shadow.rs`). There is no
//! demand paging: a mapped page is present from the start.
//!
//! ```text
//!  virtual == guest-physical == host-virtual
//!
//!                   +------------------------+  <- 0x7e00_0060_0000 + window size / 512
//!                   | page-table pool        |  4 KiB tables of the window, memslot only (not
//!                   |                        |   mapped in the guest)
//!  0x7e00_0060_0000 +------------------------+
//!                   | doorbell (no memslot)  | 2 MiB, U: stub i writes DOORBELL + i*4K -> MMIO exit
//!  0x7e00_0040_0000 +------------------------+
//!                   | stub pages             | 2 MiB, U, RWX: per vCPU i at +i*4K: LSTAR stub code
//!                   |                        |   at +0, its lwk_abi::Slot at +0x800
//!  0x7e00_0020_0000 +------------------------+
//!                   | system page            | 2 MiB, supervisor only: page tables, GDT, IDT,
//!                   |                        |   TSS, exception handlers, ring-0 stacks
//!  0x7e00_0000_0000 +------------------------+  <- LWK_BASE
//!                   :  (host: the VMM's own  :
//!                   :   heap, libraries...)  :  never mapped in the guest: pointers here -> EFAULT
//!  APP_BASE + size  +------------------------+
//!                   | stack (grows down)     |
//!                   +------------------------+
//!                   | mmap area (first fit)  |  anonymous and file-backed private maps, ld.so
//!                   +------------------------+
//!                   | brk heap               |
//!                   +------------------------+
//!                   | program image (ELF)    |  non-PIE at its link address, PIE at APP_BASE
//!  0x0000_0040_0000 +------------------------+  <- APP_BASE (the "application window")
//!                   | syscall thunks         |  2 MiB, U: unless --no-rewrite-syscalls, `mov $nr,%eax;
//!                   |                        |   syscall` sites jump here instead of trapping
//!  0x0000_0020_0000 +------------------------+  <- THUNK_BASE
//!                   | unmapped (NULL guard)  |
//!  0x0               +------------------------+
//! ```

use crate::sys;

/// EFAULT as a system call returns it.
const EFAULT: i64 = -(libc::EFAULT as i64);

/// Leaf entries accessed and dirty from the start (see [`PTE_A`]).
const AD: u64 = PTE_A | PTE_D;

/// Start of the LWK's own region.
pub const LWK_BASE: u64 = 0x7e00_0000_0000;
/// The system page (supervisor only).
pub const SYS_BASE: u64 = LWK_BASE;
/// The per-vCPU stub pages.
pub const STUB_BASE: u64 = LWK_BASE + PAGE_2M;
/// The doorbell: mapped in the guest, no memslot behind it, so a write exits to the VMM.
pub const DOORBELL_BASE: u64 = LWK_BASE + 2 * PAGE_2M;
/// The pool of the application window's 4 KiB page tables (`pagetable.rs`): a memslot only, no
/// guest virtual address maps it; one table per 2 MiB of window.
pub const PT_POOL_BASE: u64 = LWK_BASE + 3 * PAGE_2M;
/// The syscall thunks (within ±2 GiB of programs linked at 0x400000).
pub const THUNK_BASE: u64 = 0x20_0000;
/// Start of the application window.
pub const APP_BASE: u64 = 0x40_0000;
/// A 2 MiB page.
pub const PAGE_2M: u64 = 2 << 20;
/// The largest application window (64 PDs of 1 GiB in the system page).
pub const MAX_APP_SIZE: u64 = 64 << 30;

/// Offsets inside the system page.
pub mod sys_page {
    pub const PML4: u64 = 0x0000;
    pub const PDPT_APP: u64 = 0x1000;
    pub const PDPT_LWK: u64 = 0x2000;
    pub const PD_LWK: u64 = 0x3000;
    pub const GDT: u64 = 0x4000;
    pub const IDT: u64 = 0x5000;
    /// One 128-byte TSS per vCPU.
    pub const TSS: u64 = 0x6000;
    pub const HANDLERS: u64 = 0xa000;
    /// PDs of the application window, one per GiB.
    pub const PD_APP: u64 = 0x1_0000;
    /// Ring-0 stacks for exception delivery, 4 KiB per vCPU; stack i tops at RING0_STACKS + (i+1)*4K.
    pub const RING0_STACKS: u64 = 0x10_0000;
    pub const MAX_VCPUS: u64 = 128;
}

/// Errors while building guest memory.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "cannot map guest memory at {addr:#x} (+{len:#x}): {source}; the address must be free in the \
         VMM because guest-physical == host-virtual"
    )]
    Map {
        addr: u64,
        len: u64,
        source: std::io::Error,
    },
    #[error(
        "application memory of {} MiB is not an even number of MiB from 2 to 65532 (set --mem-mib)", .0 >> 20
    )]
    BadSize(u64),
    #[error(
        "--reserve: cannot lock and pre-fault the {} MiB of guest memory: {source} (a smaller --mem-mib, \
         or more memory or RLIMIT_MEMLOCK for this user)", .len >> 20
    )]
    Lock { len: u64, source: std::io::Error },
}

/// Set once the guest has given memory MADV_WIPEONFORK (`syscall/madvise.rs`, applied to the host
/// pages behind it): from then on [`GuestMemory::zero`] takes the advice back from memory that is
/// unmapped. Until then it costs nothing (the advice takes the host's mmap lock for writing).
static WIPE_ON_FORK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes that the guest has used MADV_WIPEONFORK (see [`WIPE_ON_FORK`]).
pub fn note_wipe_on_fork() {
    WIPE_ON_FORK.store(true, std::sync::atomic::Ordering::Release);
}

/// True while guest memory is locked (`--reserve`): pages given back are dropped with
/// MADV_DONTNEED_LOCKED and faulted in again at once, so the window stays resident.
static LOCKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A host mapping at a fixed address, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    pub base: u64,
    pub len: u64,
}

impl Region {
    fn map(base: u64, len: u64, prot: i32) -> Result<Self, MemoryError> {
        sys::map_fixed(base, len as usize, prot).map_err(|source| MemoryError::Map {
            addr: base,
            len,
            source,
        })?;
        Ok(Region { base, len })
    }

    pub fn end(&self) -> u64 {
        self.base + self.len
    }

    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base && addr.checked_add(len).is_some_and(|e| e <= self.end())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        sys::unmap(self.base, self.len as usize);
    }
}

/// Why a string could not be read from the guest ([`GuestMemory::read_cstr_or`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CstrError {
    /// A byte before the NUL is not readable by user code (EFAULT).
    Fault,
    /// No NUL in the bytes allowed.
    TooLong,
}

/// All guest memory.
#[derive(Debug)]
pub struct GuestMemory {
    pub sys: Region,
    pub stubs: Region,
    /// Reserved PROT_NONE in the host so nothing else lands there.
    pub doorbell: Region,
    pub app: Region,
    pub thunks: Region,
    /// The application window's 4 KiB page tables (`pagetable.rs`).
    pub pt_pool: Region,
    /// Which vCPUs have seen the latest page tables (`shadow.rs`).
    pub shadow: crate::shadow::Shadow,
    /// The memslots of the thunk page and the window, made as they are used (`winslots.rs`).
    pub slots: crate::winslots::WindowSlots,
    /// Transparent huge pages behind the window (`set_huge_pages`).
    huge: std::sync::atomic::AtomicBool,
}

pub const PTE_P: u64 = 1;
pub const PTE_RW: u64 = 2;
pub const PTE_US: u64 = 4;
pub const PTE_PS: u64 = 0x80;
/// No-execute (EFER.NXE is on).
pub const PTE_NX: u64 = 1 << 63;
/// Accessed and dirty: set in every entry from the start. Nothing in the guest reads them, and a
/// shadowing KVM then neither writes them on a walk nor refuses to prefetch: a fault on a page of
/// a 4 KiB table fills the shadow entries of up to 8 neighbours too (it prefetches only guest
/// entries marked accessed), which matters on this KVM, where one such fault costs ≈ 9 µs.
pub const PTE_A: u64 = 0x20;
pub const PTE_D: u64 = 0x40;

impl GuestMemory {
    /// Maps the LWK region and an application window of `app_size` bytes and writes the page tables.
    pub fn new(app_size: u64) -> Result<Self, MemoryError> {
        if app_size < PAGE_2M || !app_size.is_multiple_of(PAGE_2M) || app_size > MAX_APP_SIZE - APP_BASE {
            return Err(MemoryError::BadSize(app_size));
        }
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let sys = Region::map(SYS_BASE, PAGE_2M, rw)?;
        let stubs = Region::map(STUB_BASE, PAGE_2M, rw)?;
        let doorbell = Region::map(DOORBELL_BASE, PAGE_2M, libc::PROT_NONE)?;
        let app = Region::map(APP_BASE, app_size, rw)?;
        let thunks = Region::map(THUNK_BASE, PAGE_2M, rw)?;
        let pt_pool = Region::map(PT_POOL_BASE, app_size / 512, rw)?;
        let mem = GuestMemory {
            sys,
            stubs,
            doorbell,
            app,
            thunks,
            pt_pool,
            shadow: crate::shadow::Shadow::default(),
            slots: crate::winslots::WindowSlots::new(THUNK_BASE, APP_BASE + app_size),
            huge: std::sync::atomic::AtomicBool::new(false),
        };
        mem.write_page_tables();
        Ok(mem)
    }

    /// The LWK's own regions only — system page, stub pages, doorbell reservation and a page-table
    /// pool of `pt_pool_len` bytes (touched lazily) — with no application window: for split
    /// execution (`multios-hrt`), where the guest runs in an ordinary process's address space and
    /// the page tables of the user half are that crate's. Writes the LWK part of the tables
    /// (PML4 entry of `LWK_BASE`, the system, stub and doorbell pages).
    pub fn lwk_only(pt_pool_len: u64) -> Result<Self, MemoryError> {
        if pt_pool_len == 0
            || !pt_pool_len.is_multiple_of(4096)
            || PT_POOL_BASE + pt_pool_len > LWK_BASE + (1 << 30)
        {
            return Err(MemoryError::BadSize(pt_pool_len));
        }
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let empty = |base| Region { base, len: 0 };
        let mem = GuestMemory {
            sys: Region::map(SYS_BASE, PAGE_2M, rw)?,
            stubs: Region::map(STUB_BASE, PAGE_2M, rw)?,
            doorbell: Region::map(DOORBELL_BASE, PAGE_2M, libc::PROT_NONE)?,
            app: empty(APP_BASE),
            thunks: empty(THUNK_BASE),
            pt_pool: Region::map(PT_POOL_BASE, pt_pool_len, rw)?,
            shadow: crate::shadow::Shadow::default(),
            slots: crate::winslots::WindowSlots::new(THUNK_BASE, THUNK_BASE),
            huge: std::sync::atomic::AtomicBool::new(false),
        };
        mem.write_lwk_tables();
        Ok(mem)
    }

    /// The LWK region's entries: PML4 → PDPT_LWK → PD_LWK → system, stub and doorbell pages.
    fn write_lwk_tables(&self) {
        use sys_page::*;
        let s = SYS_BASE;
        let table = PTE_P | PTE_RW | PTE_US | PTE_A;
        self.write_u64(s + PML4 + 8 * ((LWK_BASE >> 39) & 511), (s + PDPT_LWK) | table);
        self.write_u64(s + PDPT_LWK + 8 * ((LWK_BASE >> 30) & 511), (s + PD_LWK) | table);
        self.write_u64(s + PD_LWK, SYS_BASE | PTE_P | PTE_RW | PTE_PS | AD);
        self.write_u64(s + PD_LWK + 8, STUB_BASE | PTE_P | PTE_RW | PTE_US | PTE_PS | AD);
        self.write_u64(
            s + PD_LWK + 16,
            DOORBELL_BASE | PTE_P | PTE_RW | PTE_US | PTE_PS | PTE_NX | AD,
        );
    }

    fn write_page_tables(&self) {
        use sys_page::*;
        let s = SYS_BASE;
        let table = PTE_P | PTE_RW | PTE_US | PTE_A;
        // PML4[0] -> application PDPT; PML4[LWK] -> LWK PDPT.
        self.write_u64(s + PML4, (s + PDPT_APP) | table);
        self.write_lwk_tables();
        // The thunk page sits in the first GiB, just below the application window.
        self.write_u64(s + PDPT_APP, (s + PD_APP) | table);
        self.slots.ensure(THUNK_BASE, THUNK_BASE + PAGE_2M);
        self.write_u64(
            s + PD_APP + 8 * (THUNK_BASE >> 21),
            THUNK_BASE | PTE_P | PTE_RW | PTE_US | PTE_PS | AD,
        );
        // The application window: one PD per GiB, every entry not present until something is
        // mapped there (`pagetable.rs` writes them from the mappings: `Kernel::sync_*`).
        for gib in (self.app.base >> 30)..=((self.app.end() - 1) >> 30) {
            let pd = s + PD_APP + gib * 0x1000;
            self.write_u64(s + PDPT_APP + 8 * gib, pd | table);
        }
    }

    /// Maps the whole window present, writable and executable with 2 MiB pages, with no
    /// protections (`lwk fc`'s hand-made guest, which runs no loader).
    pub fn map_whole_window(&self) {
        self.slots.ensure(self.app.base, self.app.end());
        let mut addr = self.app.base;
        while addr < self.app.end() {
            let pd = SYS_BASE + sys_page::PD_APP + (addr >> 30) * 0x1000;
            self.write_u64(
                pd + 8 * ((addr >> 21) & 511),
                addr | PTE_P | PTE_RW | PTE_US | PTE_PS | AD,
            );
            addr += PAGE_2M;
        }
    }

    /// Asks for transparent huge pages behind the guest's 2 MiB pages from now on (best effort),
    /// or, with `on` false, for 4 KiB pages even where the host's THP setting is `always`.
    /// Called after the program is loaded: a huge-page fault may compact memory synchronously
    /// (milliseconds), which the few pages touched at load time need not pay.
    ///
    /// Off by default (issue #13): a huge page is a free 2 MiB block of the host, and on a VM
    /// whose host takes free blocks back (free page reporting, as on this machine) such a block
    /// must be faulted in by the hypervisor below, 4 KiB at a time, when it is first cleared:
    /// 0.19 ms per 2 MiB when it was recently used, 5.2 ms when it was given back, against
    /// 1.1 ms for 512 pages of 4 KiB (`docs/BENCHMARKS.md`). Racket's runs cleared 53 of them, for
    /// 13–277 ms of the vCPU's time a run, where natively the same memory costs ≈ 9 ms.
    pub fn set_huge_pages(&self, on: bool) {
        self.huge.store(on, std::sync::atomic::Ordering::Relaxed);
        let advice = if on {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        let _ = sys::madvise(self.app.base, self.app.len as usize, advice);
    }

    /// True when the window asks for transparent huge pages (`set_huge_pages`).
    pub fn huge_pages(&self) -> bool {
        self.huge.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The guest's CR3.
    pub fn cr3(&self) -> u64 {
        SYS_BASE + sys_page::PML4
    }

    /// True when `[addr, addr+len)` is mapped guest memory (any region).
    fn mapped(&self, addr: u64, len: u64) -> bool {
        self.app.contains(addr, len)
            || self.sys.contains(addr, len)
            || self.stubs.contains(addr, len)
            || self.thunks.contains(addr, len)
            || self.pt_pool.contains(addr, len)
    }

    /// True when `[addr, addr+len)` lies inside the application window: the only memory a
    /// delegated system call may touch.
    pub fn in_app(&self, addr: u64, len: u64) -> bool {
        self.app.contains(addr, len)
    }

    /// Copies `data` into guest memory at `addr`, whatever the guest's protections (the VMM's own
    /// writes: loader, signal frames, rewriting, write-backs of checked calls). Panics when the
    /// range is not guest memory (a VMM bug: guest-supplied ranges are checked with `in_app`
    /// first). In the application window a write the host refuses (a read-only shared file
    /// mapping, a file page past its end, a mapping changed meanwhile) is dropped instead of
    /// killing the VMM (`usercopy.rs`); a system call's result goes through [`Self::write_user`].
    pub fn write(&self, addr: u64, data: &[u8]) {
        assert!(
            self.mapped(addr, data.len() as u64),
            "VMM bug: write outside guest memory at {addr:#x}"
        );
        if self.app.contains(addr, data.len() as u64) {
            // SAFETY: a range of the window, which no Rust reference points into, and `data`,
            // which is the caller's and cannot lie in the window; a host fault fails the copy.
            let _ = unsafe { crate::usercopy::copy(addr as *mut u8, data.as_ptr(), data.len()) };
            return;
        }
        // SAFETY: the range was just checked to lie inside a mapping owned by `self`, which no Rust
        // reference points into; the guest may race with this copy but cannot make it unsound for
        // the VMM, which never reads the bytes back through a reference.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
    }

    /// Copies guest memory at `addr` into `buf`. Panics outside guest memory (see `write`). In
    /// the window a read the host refuses (a file page past its end) gives zeroes instead of
    /// killing the VMM; a system call's argument goes through [`Self::read_user`].
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        assert!(
            self.mapped(addr, buf.len() as u64),
            "VMM bug: read outside guest memory at {addr:#x}"
        );
        if self.app.contains(addr, buf.len() as u64) {
            // SAFETY: as in `write`, the other way.
            if !unsafe { crate::usercopy::copy(buf.as_mut_ptr(), addr as *const u8, buf.len()) } {
                buf.fill(0);
            }
            return;
        }
        // SAFETY: as in `write`: a checked range of memory owned by `self`, copied out byte-wise.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) };
    }

    /// Copies `data` to the guest at `addr` as a system call's result, as Linux's copy_to_user:
    /// EFAULT (negative) unless every byte lies in the application window on a page user code
    /// may write ([`Self::user_can`]: not read-only, not PROT_NONE, mapped) and the host takes
    /// the write. Never faults the VMM. Every call the LWK serves itself writes its results
    /// through this (issue #16: they were written after an `in_app` check only, into the guest's
    /// read-only pages, and a read-only shared file mapping killed the VMM).
    pub fn write_user(&self, addr: u64, data: &[u8]) -> Result<(), i64> {
        if data.is_empty() {
            return Ok(());
        }
        if !self.user_can(addr, data.len() as u64, true) {
            return Err(EFAULT);
        }
        // SAFETY: a range of the window (checked by `user_can`), which no Rust reference points
        // into, and the caller's `data`; a host fault fails the copy.
        if unsafe { crate::usercopy::copy(addr as *mut u8, data.as_ptr(), data.len()) } {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    /// Copies a system call's argument from the guest at `addr` into `buf`, as Linux's
    /// copy_from_user: EFAULT (negative) unless every byte lies in the window on a page user
    /// code may read (not PROT_NONE, mapped) and the host can read it.
    pub fn read_user(&self, addr: u64, buf: &mut [u8]) -> Result<(), i64> {
        if buf.is_empty() {
            return Ok(());
        }
        if !self.user_can(addr, buf.len() as u64, false) {
            return Err(EFAULT);
        }
        // SAFETY: as in `write_user`, the other way.
        if unsafe { crate::usercopy::copy(buf.as_mut_ptr(), addr as *const u8, buf.len()) } {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    /// [`Self::write_user`] of a little-endian u64.
    pub fn write_user_u64(&self, addr: u64, v: u64) -> Result<(), i64> {
        self.write_user(addr, &v.to_le_bytes())
    }

    /// [`Self::write_user`] of a little-endian u32.
    pub fn write_user_u32(&self, addr: u64, v: u32) -> Result<(), i64> {
        self.write_user(addr, &v.to_le_bytes())
    }

    /// [`Self::read_user`] of a little-endian u64.
    pub fn read_user_u64(&self, addr: u64) -> Result<u64, i64> {
        let mut b = [0u8; 8];
        self.read_user(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn write_u64(&self, addr: u64, v: u64) {
        self.write(addr, &v.to_le_bytes());
    }

    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }

    /// Zeroes `[addr, addr+len)` of the application window, dropping whole host pages: memory
    /// that is unmapped (or exec'd over). Its whole pages lose a MADV_WIPEONFORK the guest gave
    /// them (a new mapping there starts without it, as on Linux); see [`note_wipe_on_fork`].
    pub fn zero(&self, addr: u64, len: u64) {
        self.discard(addr, len);
        if WIPE_ON_FORK.load(std::sync::atomic::Ordering::Acquire) {
            let (start, end) = (addr.div_ceil(4096) * 4096, (addr + len) / 4096 * 4096);
            if end > start {
                let _ = sys::madvise(start, (end - start) as usize, libc::MADV_KEEPONFORK);
            }
        }
    }

    /// Zeroes `[addr, addr+len)` of the application window, dropping whole host pages, and keeps
    /// the host advice of the range (the guest's MADV_DONTNEED: the mapping stays).
    pub fn discard(&self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let page = 4096;
        let start = addr.div_ceil(page) * page;
        let end = (addr + len) / page * page;
        if end > start && self.drop_pages(start, end - start) {
            self.write(addr, &vec![0; (start - addr) as usize]);
            self.write(end, &vec![0; (addr + len - end) as usize]);
        } else {
            self.write(addr, &vec![0; len as usize]);
        }
    }

    /// Locks every region of guest memory in RAM, faulting it all in now (`--reserve`: IHK's
    /// `reserve mem`), and has later mappings of the process locked as they are touched (a shared
    /// mapping's end puts fresh anonymous memory there). [`GuestMemory::unlock`] undoes it.
    pub fn lock(&self) -> Result<(), MemoryError> {
        for r in [&self.sys, &self.stubs, &self.thunks, &self.pt_pool, &self.app] {
            sys::mlock(r.base, r.len).map_err(|source| MemoryError::Lock {
                len: self.app.len,
                source,
            })?;
        }
        sys::lock_future().map_err(|source| MemoryError::Lock {
            len: self.app.len,
            source,
        })?;
        LOCKED.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Ends [`GuestMemory::lock`] (the process's memory is no longer locked).
    pub fn unlock(&self) {
        if LOCKED.swap(false, std::sync::atomic::Ordering::AcqRel) {
            sys::unlock_all();
        }
    }

    /// Gives the host pages of `[addr, addr+len)` back (they read as zero after); with the window
    /// locked (`--reserve`) the pages are faulted in again at once, so it stays resident. The
    /// drop matters beyond the zeroes: KVM's MMU notifier then drops the shadow entries of those
    /// pages (`shadow.rs`). False when the host refused.
    fn drop_pages(&self, addr: u64, len: u64) -> bool {
        if !LOCKED.load(std::sync::atomic::Ordering::Acquire) {
            return sys::madvise(addr, len as usize, libc::MADV_DONTNEED).is_ok();
        }
        sys::madvise(addr, len as usize, sys::MADV_DONTNEED_LOCKED).is_ok()
            && sys::madvise(addr, len as usize, libc::MADV_POPULATE_WRITE).is_ok()
    }

    /// Reads a NUL-terminated string inside the application window (at most `max` bytes), as
    /// Linux's strncpy_from_user: None when a byte before the NUL is outside the window, on a
    /// page user code may not read (PROT_NONE, unmapped) or one the host cannot read, or when
    /// there is no NUL in the first `max` bytes ([`GuestMemory::read_cstr_or`] tells which).
    pub fn read_cstr(&self, addr: u64, max: usize) -> Option<Vec<u8>> {
        self.read_cstr_or(addr, max).ok()
    }

    /// [`GuestMemory::read_cstr`], telling a fault (EFAULT) from a string longer than `max`
    /// bytes without its NUL (Linux's ENAMETOOLONG for a path, E2BIG for an execve argument),
    /// issue #16. Read a page at a time (one protection lookup per page).
    pub fn read_cstr_or(&self, addr: u64, max: usize) -> Result<Vec<u8>, CstrError> {
        let mut out = Vec::new();
        let mut a = addr;
        let mut page = [0u8; 4096];
        while out.len() < max {
            let seg = ((4096 - (a & 4095)) as usize).min(max - out.len());
            let buf = &mut page[..seg];
            // One page at most: a string ending before an unreadable page is read whole.
            self.read_user(a, buf).map_err(|_| CstrError::Fault)?;
            if let Some(n) = buf.iter().position(|&b| b == 0) {
                out.extend_from_slice(&buf[..n]);
                return Ok(out);
            }
            out.extend_from_slice(buf);
            a = a.checked_add(seg as u64).ok_or(CstrError::Fault)?;
        }
        Err(CstrError::TooLong)
    }

    /// A raw pointer to guest memory (for the atomics of the ring slot).
    pub fn ptr(&self, addr: u64, len: u64) -> *mut u8 {
        assert!(
            self.mapped(addr, len),
            "VMM bug: pointer outside guest memory at {addr:#x}"
        );
        addr as *mut u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_constants_are_consistent() {
        const { assert!(THUNK_BASE + PAGE_2M == APP_BASE && SYS_BASE + PAGE_2M == STUB_BASE) };
        const { assert!(DOORBELL_BASE + PAGE_2M <= PT_POOL_BASE) };
        const { assert!(sys_page::MAX_VCPUS as usize == crate::shadow::MAX) };
        const { assert!(PT_POOL_BASE + MAX_APP_SIZE / 512 <= LWK_BASE + (1 << 30)) };
        assert_eq!(LWK_BASE % (1 << 30), 0);
        assert_eq!(APP_BASE % PAGE_2M, 0);
        const { assert!(sys_page::RING0_STACKS + sys_page::MAX_VCPUS * 0x1000 <= PAGE_2M) };
        const { assert!(sys_page::PD_APP + (MAX_APP_SIZE >> 30) * 0x1000 <= sys_page::RING0_STACKS) };
        const { assert!(sys_page::TSS + sys_page::MAX_VCPUS * 128 <= sys_page::HANDLERS) };
    }

    #[test]
    fn region_contains_is_overflow_safe() {
        let r = std::mem::ManuallyDrop::new(Region {
            base: 0x1000,
            len: 0x1000,
        });
        assert!(r.contains(0x1000, 0x1000));
        assert!(!r.contains(0x1000, 0x1001));
        assert!(!r.contains(u64::MAX - 1, 4));
        assert!(!r.contains(0xfff, 1));
    }
}
