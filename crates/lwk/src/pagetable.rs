//! The application window's page tables, carrying the protections of the guest's mappings
//! (issue #14): a 2 MiB page where the 512 pages under it share one protection, a page table of
//! 4 KiB entries where they differ, a not-present entry for PROT_NONE and unmapped memory.
//!
//! The page tables of the window live in a pool of their own (`PT_POOL_BASE`, one 4 KiB table per
//! 2 MiB of window, at a fixed slot: no allocator), a memslot the guest page walker reads but no
//! guest virtual address maps. This KVM shadows guest page tables: an edit is seen by a vCPU only
//! after its CR3 is reloaded (`shadow.rs`).

use crate::memory::{GuestMemory, APP_BASE, PAGE_2M, SYS_BASE};
use crate::memory::{PTE_A, PTE_D, PTE_NX, PTE_P, PTE_PS, PTE_RW, PTE_US};

/// The 512 4 KiB entries under one 2 MiB page, as protection bits (0: not present).
pub type Chunk = [u64; 512];

/// What an edit of the page tables did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    None,
    /// Only added access (present, writable, executable): a stale shadow entry is stricter than
    /// the tables, and KVM, which walks the guest tables on every fault it sees, heals it.
    Relaxed,
    /// Took access away from a present page: a stale shadow entry would still allow it.
    Tightened,
}

/// How `old` became `new` (both `bits` values).
pub fn change(old: u64, new: u64) -> Change {
    if old == new {
        Change::None
    } else if old & PTE_P != 0
        && (new & PTE_P == 0
            || (old & PTE_RW != 0 && new & PTE_RW == 0)
            || (old & PTE_NX == 0 && new & PTE_NX != 0))
    {
        Change::Tightened
    } else {
        Change::Relaxed
    }
}

/// The protection bits of a page of protection `prot` (`None`: not mapped): not present for
/// PROT_NONE and unmapped pages, otherwise present and user, writable with PROT_WRITE,
/// no-execute without PROT_EXEC (x86 has no write-only or execute-only pages: both read).
pub fn bits(prot: Option<i32>) -> u64 {
    match prot {
        Some(p) if p & (libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC) != 0 => {
            let w = if p & libc::PROT_WRITE != 0 { PTE_RW } else { 0 };
            let nx = if p & libc::PROT_EXEC != 0 { 0 } else { PTE_NX };
            PTE_P | PTE_US | w | nx
        }
        _ => 0,
    }
}

const FLAGS: u64 = PTE_P | PTE_RW | PTE_US | PTE_NX;

/// The accessed bit, and dirty for a writable page.
fn accessed_dirty(bits: u64) -> u64 {
    PTE_A | if bits & PTE_RW != 0 { PTE_D } else { 0 }
}
const ADDR_2M: u64 = 0x000f_ffff_ffe0_0000;
const ADDR_4K: u64 = 0x000f_ffff_ffff_f000;

impl GuestMemory {
    /// The page-directory entry that maps the 2 MiB page at `chunk` (inside the window).
    fn pde_addr(&self, chunk: u64) -> u64 {
        let gib = chunk >> 30;
        SYS_BASE + crate::memory::sys_page::PD_APP + gib * 0x1000 + 8 * ((chunk >> 21) & 511)
    }

    /// The pool's page table for the 2 MiB page at `chunk`.
    fn pt_addr(&self, chunk: u64) -> u64 {
        self.pt_pool.base + ((chunk - APP_BASE) >> 21) * 0x1000
    }

    /// What the page tables say now about the 512 pages of the 2 MiB page at `chunk`.
    pub fn chunk(&self, chunk: u64) -> Chunk {
        let pde = self.read_u64(self.pde_addr(chunk));
        let mut out = [0u64; 512];
        if pde & PTE_P == 0 {
            return out;
        }
        if pde & PTE_PS != 0 {
            out.fill(pde & FLAGS);
            return out;
        }
        let pt = self.pt_addr(chunk);
        for (k, e) in out.iter_mut().enumerate() {
            *e = self.read_u64(pt + 8 * k as u64) & FLAGS;
        }
        out
    }

    /// Writes the 2 MiB page at `chunk` with protections `want` and says what changed. A page
    /// table is written before the directory entry that points to it, so a walk never sees a
    /// half-written table.
    pub fn set_chunk(&self, chunk: u64, want: &Chunk) -> Change {
        debug_assert!(chunk.is_multiple_of(PAGE_2M) && self.app.contains(chunk, PAGE_2M));
        let old = self.chunk(chunk);
        let what = old
            .iter()
            .zip(want.iter())
            .map(|(&o, &n)| change(o, n))
            .max()
            .unwrap_or(Change::None);
        if what == Change::None {
            return what;
        }
        if want.iter().any(|&b| b != 0) {
            // Its memslot before any entry that lets the guest reach it (`winslots.rs`).
            self.slots.ensure(chunk, chunk + PAGE_2M);
        }
        let first = want[0];
        let pde = if want.iter().all(|&b| b == first) {
            if first == 0 {
                0
            } else {
                (chunk & ADDR_2M) | first | PTE_PS | accessed_dirty(first)
            }
        } else {
            let pt = self.pt_addr(chunk);
            let mut table = [0u8; 4096];
            for (k, &b) in want.iter().enumerate() {
                let e = if b == 0 {
                    0
                } else {
                    ((chunk + 4096 * k as u64) & ADDR_4K) | b | accessed_dirty(b)
                };
                table[8 * k..8 * k + 8].copy_from_slice(&e.to_le_bytes());
            }
            self.write(pt, &table);
            pt | PTE_P | PTE_RW | PTE_US | PTE_A
        };
        self.write_u64(self.pde_addr(chunk), pde);
        what
    }

    /// True when the page tables let user code access every byte of `[addr, addr+len)` (for
    /// writing when `write`): what a delegated call may copy to or from, as Linux's
    /// copy_to_user/copy_from_user would find it.
    pub fn user_can(&self, addr: u64, len: u64, write: bool) -> bool {
        if len == 0 {
            return true;
        }
        if !self.in_app(addr, len) {
            return false;
        }
        let need = PTE_P | PTE_US | if write { PTE_RW } else { 0 };
        let end = addr + len;
        let mut pos = addr;
        while pos < end {
            let chunk = pos & !(PAGE_2M - 1);
            let pde = self.read_u64(self.pde_addr(chunk));
            if pde & PTE_P == 0 {
                return false;
            }
            if pde & PTE_PS != 0 {
                if pde & need != need {
                    return false;
                }
                pos = chunk + PAGE_2M;
                continue;
            }
            let e = self.read_u64(self.pt_addr(chunk) + 8 * ((pos >> 12) & 511));
            if e & need != need {
                return false;
            }
            pos = (pos & !4095) + 4096;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protections_become_x86_bits() {
        use libc::{PROT_EXEC, PROT_NONE, PROT_READ, PROT_WRITE};
        assert_eq!(bits(None), 0);
        assert_eq!(bits(Some(PROT_NONE)), 0);
        assert_eq!(bits(Some(PROT_READ)), PTE_P | PTE_US | PTE_NX);
        assert_eq!(
            bits(Some(PROT_READ | PROT_WRITE)),
            PTE_P | PTE_US | PTE_RW | PTE_NX
        );
        assert_eq!(bits(Some(PROT_WRITE)), PTE_P | PTE_US | PTE_RW | PTE_NX);
        assert_eq!(bits(Some(PROT_READ | PROT_EXEC)), PTE_P | PTE_US);
    }

    #[test]
    fn losing_access_is_a_tightening_gaining_it_a_relaxation() {
        use libc::{PROT_EXEC, PROT_NONE, PROT_READ, PROT_WRITE};
        let (rw, r, rx) = (
            bits(Some(PROT_READ | PROT_WRITE)),
            bits(Some(PROT_READ)),
            bits(Some(PROT_READ | PROT_EXEC)),
        );
        assert_eq!(change(rw, r), Change::Tightened);
        assert_eq!(change(rx, r), Change::Tightened);
        assert_eq!(change(r, bits(Some(PROT_NONE))), Change::Tightened);
        assert_eq!(change(rw, rx), Change::Tightened, "W^X: write taken away");
        assert_eq!(change(r, rw), Change::Relaxed);
        assert_eq!(change(0, r), Change::Relaxed);
        assert_eq!(change(r, r), Change::None);
    }
}
