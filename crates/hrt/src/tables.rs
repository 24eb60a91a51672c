//! The guest's page tables of the user half, filled from the process's mappings: every page maps
//! to itself (guest-virtual == guest-physical == host-virtual) with the protection the host gives
//! it. The root is the LWK's PML4 (in its system page, `multios_lwk::memory`), which already maps
//! the LWK's own GiB; the tables below the other entries come from the LWK's page-table pool,
//! handed out once and never freed (a cleared range keeps its tables). A 2 MiB range that one
//! protection covers whole gets a 2 MiB page, otherwise 4 KiB entries.

use multios_lwk::memory::{sys_page, GuestMemory, PTE_NX, PTE_P, PTE_PS, PTE_RW, PTE_US, SYS_BASE};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const PAGE: u64 = 4096;
const PAGE_2M: u64 = 2 << 20;
const ADDR: u64 = 0x000f_ffff_ffff_f000;
const FLAGS: u64 = PTE_P | PTE_RW | PTE_US | PTE_NX;
/// The flags of an entry pointing to a table (access is decided at the leaf).
const TABLE: u64 = PTE_P | PTE_RW | PTE_US;

/// The x86 bits of a page of protection `prot` (0: not present).
pub fn bits(prot: i32) -> u64 {
    if prot & (libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC) == 0 {
        return 0;
    }
    let w = if prot & libc::PROT_WRITE != 0 { PTE_RW } else { 0 };
    let nx = if prot & libc::PROT_EXEC != 0 { 0 } else { PTE_NX };
    PTE_P | PTE_US | w | nx
}

/// Errors editing the tables.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("the guest page-table pool ({0} KiB) is full: give hrt_init a larger pool")]
    PoolFull(u64),
}

/// The user half's tables.
pub struct Tables {
    mem: Arc<GuestMemory>,
    /// Next free table in the pool.
    next: u64,
    /// Tables handed out, for the measurements.
    pub tables: u64,
}

/// One 8-byte entry of a table in guest memory.
fn entry(addr: u64) -> &'static AtomicU64 {
    // SAFETY: every table address comes from the LWK's system page or its pool, mappings owned by
    // the `GuestMemory` that `Tables` holds for as long as it exists (the `'static` is never
    // outlived: entries are used within one call); they are 8-aligned and only accessed
    // atomically by this process (KVM reads them as guest memory).
    unsafe { &*(addr as *const AtomicU64) }
}

impl Tables {
    pub fn new(mem: Arc<GuestMemory>) -> Self {
        let next = mem.pt_pool.base;
        Tables { mem, next, tables: 0 }
    }

    fn alloc(&mut self) -> Result<u64, TableError> {
        if self.next + PAGE > self.mem.pt_pool.end() {
            return Err(TableError::PoolFull(self.mem.pt_pool.len >> 10));
        }
        let t = self.next;
        self.next += PAGE;
        self.tables += 1;
        Ok(t)
    }

    /// The table the entry at `e` points to, made when absent. A 2 MiB page there is split into
    /// 512 entries of the same protection first.
    fn down(&mut self, e: u64, base: u64) -> Result<u64, TableError> {
        let v = entry(e).load(Ordering::Acquire);
        if v & PTE_P != 0 && v & PTE_PS == 0 {
            return Ok(v & ADDR);
        }
        let t = self.alloc()?;
        if v & PTE_P != 0 {
            // A 2 MiB page becoming 4 KiB pages (only PDs hold large pages here).
            for k in 0..512 {
                entry(t + 8 * k).store((base + k * PAGE) | (v & FLAGS), Ordering::Relaxed);
            }
        }
        entry(e).store(t | TABLE, Ordering::Release);
        Ok(t)
    }

    /// The address of the PD entry for `addr`, making the PDPT and PD on the way.
    fn pde(&mut self, addr: u64) -> Result<u64, TableError> {
        let pml4 = SYS_BASE + sys_page::PML4;
        let pdpt = self.down(pml4 + 8 * ((addr >> 39) & 511), 0)?;
        let pd = self.down(pdpt + 8 * ((addr >> 30) & 511), 0)?;
        Ok(pd + 8 * ((addr >> 21) & 511))
    }

    /// Maps `[start, end)` (page aligned) with `bits` (0: not present). Returns true when an
    /// entry changed.
    pub fn set(&mut self, start: u64, end: u64, bits: u64) -> Result<bool, TableError> {
        let mut changed = false;
        let mut a = start;
        while a < end {
            let pde = self.pde(a)?;
            let block = a & !(PAGE_2M - 1);
            let v = entry(pde).load(Ordering::Acquire);
            let is_table = v & PTE_P != 0 && v & PTE_PS == 0;
            if a == block && block + PAGE_2M <= end && !is_table {
                let want = if bits == 0 { 0 } else { block | bits | PTE_PS };
                if v != want {
                    entry(pde).store(want, Ordering::Release);
                    changed = true;
                }
                a = block + PAGE_2M;
                continue;
            }
            if v & PTE_P == 0 && bits == 0 {
                a = (block + PAGE_2M).min(end);
                continue;
            }
            let pt = self.down(pde, block)?;
            let stop = end.min(block + PAGE_2M);
            while a < stop {
                let e = pt + 8 * ((a >> 12) & 511);
                let want = if bits == 0 { 0 } else { a | bits };
                if entry(e).load(Ordering::Acquire) != want {
                    entry(e).store(want, Ordering::Release);
                    changed = true;
                }
                a += PAGE;
            }
        }
        Ok(changed)
    }

    /// Calls `f(start, size, bits)` on every present leaf (2 MiB or 4 KiB) of the user half, in
    /// address order, until it returns false. The LWK's own GiB is left out.
    pub fn leaves(&self, mut f: impl FnMut(u64, u64, u64) -> bool) {
        let pml4 = SYS_BASE + sys_page::PML4;
        let lwk = multios_lwk::memory::LWK_BASE;
        for i in 0..256u64 {
            let e4 = entry(pml4 + 8 * i).load(Ordering::Acquire);
            if e4 & PTE_P == 0 {
                continue;
            }
            for j in 0..512u64 {
                let base1 = (i << 39) | (j << 30);
                let e3 = entry((e4 & ADDR) + 8 * j).load(Ordering::Acquire);
                if base1 == lwk || e3 & PTE_P == 0 {
                    continue;
                }
                for k in 0..512u64 {
                    let base2 = base1 | (k << 21);
                    let e2 = entry((e3 & ADDR) + 8 * k).load(Ordering::Acquire);
                    if e2 & PTE_P == 0 {
                        continue;
                    }
                    if e2 & PTE_PS != 0 {
                        if !f(base2, PAGE_2M, e2 & FLAGS) {
                            return;
                        }
                        continue;
                    }
                    for l in 0..512u64 {
                        let e1 = entry((e2 & ADDR) + 8 * l).load(Ordering::Acquire);
                        if e1 & PTE_P != 0 && !f(base2 | (l << 12), PAGE, e1 & FLAGS) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The bits the tables give the page at `addr` (0: not present).
    pub fn get(&self, addr: u64) -> u64 {
        let mut t = SYS_BASE + sys_page::PML4;
        for shift in [39u64, 30, 21, 12] {
            let v = entry(t + 8 * ((addr >> shift) & 511)).load(Ordering::Acquire);
            if v & PTE_P == 0 {
                return 0;
            }
            if shift == 12 || (shift == 21 && v & PTE_PS != 0) {
                return v & FLAGS;
            }
            t = v & ADDR;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protections_become_x86_bits() {
        use libc::{PROT_EXEC, PROT_NONE, PROT_READ, PROT_WRITE};
        assert_eq!(bits(PROT_NONE), 0);
        assert_eq!(bits(PROT_READ), PTE_P | PTE_US | PTE_NX);
        assert_eq!(bits(PROT_READ | PROT_WRITE), PTE_P | PTE_US | PTE_RW | PTE_NX);
        assert_eq!(bits(PROT_READ | PROT_EXEC), PTE_P | PTE_US);
    }
}
