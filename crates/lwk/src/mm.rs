//! The LWK's memory manager: brk and mmap inside the application window, served by the VMM.
//!
//! Everything is already mapped (2 MiB guest pages, built before the first run), so "mapping"
//! is bookkeeping plus zeroing: a range handed out by mmap or brk always reads as zero, because
//! munmap and brk shrink give the host pages back (MADV_DONTNEED). Protections are enforced in
//! the guest page tables from this bookkeeping (`syscall/protect.rs`, issue #14).

use std::collections::BTreeMap;

pub const PAGE: u64 = 4096;
/// A 2 MiB page: anonymous mappings at least this large are aligned to it.
const HUGE: u64 = 2 << 20;
/// Stack reserved at the top of the window by [`Mm::new`] (Linux's default RLIMIT_STACK); a
/// program the loader loads gets one sized from its RLIMIT_STACK (`stacklimit.rs`, issue #16).
pub const STACK_SIZE: u64 = 8 << 20;
/// Unmapped gap kept between the stack and the mmap area (Linux's stack_guard_gap, 256 pages): a
/// stack overflow faults there instead of writing into the highest mapping (issue #14).
pub const STACK_GUARD_GAP: u64 = 256 * PAGE;

fn page_up(x: u64) -> u64 {
    x.div_ceil(PAGE) * PAGE
}

/// Errors of memory calls, as the errno the guest sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MmError {
    #[error("out of guest memory (ENOMEM): raise --mem-mib")]
    NoMemory,
    #[error("over the guest's RLIMIT_AS (ENOMEM)")]
    OverLimit,
    #[error("invalid argument (EINVAL)")]
    Invalid,
    #[error("the range is sealed by mseal (EPERM)")]
    Sealed,
}

impl MmError {
    pub fn errno(self) -> i64 {
        match self {
            MmError::NoMemory | MmError::OverLimit => -(libc::ENOMEM as i64),
            MmError::Invalid => -(libc::EINVAL as i64),
            MmError::Sealed => -(libc::EPERM as i64),
        }
    }
}

/// A set of disjoint half-open ranges.
#[derive(Debug, Default, Clone)]
pub struct RangeSet(BTreeMap<u64, u64>);

impl RangeSet {
    /// Removes `[a, b)`, splitting ranges that straddle it.
    pub fn remove(&mut self, a: u64, b: u64) {
        let hits: Vec<(u64, u64)> = self
            .0
            .range(..b)
            .filter(|(_, &e)| e > a)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in hits {
            self.0.remove(&s);
            if s < a {
                self.0.insert(s, a);
            }
            if e > b {
                self.0.insert(b, e);
            }
        }
    }

    pub fn insert(&mut self, a: u64, b: u64) {
        self.remove(a, b);
        self.0.insert(a, b);
    }

    /// Inserts `[a, b)` joined with the ranges it overlaps or touches (one range where a run of
    /// adjacent batches was inserted).
    pub fn insert_joined(&mut self, a: u64, b: u64) {
        let (mut lo, mut hi) = (a, b);
        let near: Vec<(u64, u64)> = self
            .0
            .range(..=b)
            .filter(|(_, &e)| e >= a)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in near {
            self.0.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.0.insert(lo, hi);
    }

    /// Bytes the ranges cover.
    pub fn bytes(&self) -> u64 {
        self.0.iter().map(|(a, b)| b - a).sum()
    }

    /// True when `[a, b)` is entirely covered.
    pub fn covers(&self, a: u64, b: u64) -> bool {
        let mut pos = a;
        for (&s, &e) in self.0.range(..b) {
            if e <= pos {
                continue;
            }
            if s > pos {
                return false;
            }
            pos = e;
            if pos >= b {
                return true;
            }
        }
        pos >= b
    }

    /// True when nothing in `[a, b)` is in the set.
    pub fn is_free(&self, a: u64, b: u64) -> bool {
        !self.0.range(..b).any(|(_, &e)| e > a)
    }

    /// The lowest free gap of `len` bytes inside `[lo, hi)`.
    pub fn lowest_gap(&self, lo: u64, hi: u64, len: u64) -> Option<u64> {
        let mut pos = lo;
        for (&s, &e) in self.0.range(..hi) {
            if e <= pos {
                continue;
            }
            if s >= pos && s - pos >= len {
                break;
            }
            pos = pos.max(e);
        }
        (pos.checked_add(len).is_some_and(|end| end <= hi)).then_some(pos)
    }

    /// The highest free gap of `len` bytes inside `[lo, hi)`.
    pub fn highest_gap(&self, lo: u64, hi: u64, len: u64) -> Option<u64> {
        let mut top = hi;
        for (&s, &e) in self.0.range(..hi).rev() {
            let e = e.min(hi);
            if top >= e && top - e >= len && top - len >= lo {
                return Some(top - len);
            }
            top = top.min(s);
            if top < lo {
                return None;
            }
        }
        (top >= lo.saturating_add(len)).then(|| top - len)
    }

    /// The highest free gap of `len` bytes inside `[lo, hi)` that starts on a multiple of
    /// `align` (a power of two).
    pub fn highest_aligned_gap(&self, lo: u64, hi: u64, len: u64, align: u64) -> Option<u64> {
        let fit = |gap_lo: u64, gap_hi: u64| {
            let start = gap_hi.checked_sub(len)? & !(align - 1);
            (start >= gap_lo.max(lo)).then_some(start)
        };
        let mut top = hi;
        for (&s, &e) in self.0.range(..hi).rev() {
            if e < top {
                if let Some(a) = fit(e, top) {
                    return Some(a);
                }
            }
            top = top.min(s);
            if top <= lo {
                return None;
            }
        }
        fit(lo, top)
    }

    /// The parts of the set inside `[a, b)`.
    pub fn intersections(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        self.0
            .range(..b)
            .filter(|(_, &e)| e > a)
            .map(|(&s, &e)| (s.max(a), e.min(b)))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// brk and mmap state of the one process in the LWK.
#[derive(Debug, Clone)]
pub struct Mm {
    pub window: (u64, u64),
    pub brk_start: u64,
    pub brk_cur: u64,
    pub brk_max: u64,
    pub mmap_lo: u64,
    pub mmap_hi: u64,
    pub maps: RangeSet,
    /// The stack reservation at the top of the window, bytes.
    pub stack: u64,
    /// Ranges mseal(2) sealed (`syscall/mseal.rs`): munmap, mremap, mmap(MAP_FIXED) and brk
    /// shrinking over them fail; a forked child inherits them, exec (a new `Mm`) ends them.
    pub sealed: RangeSet,
}

/// What the caller must do to guest memory after a call: zero ranges, copy ranges.
#[derive(Debug, Default, PartialEq)]
pub struct Effects {
    pub zero: Vec<(u64, u64)>,
    /// (from, to, len)
    pub copy: Option<(u64, u64, u64)>,
}

impl Mm {
    /// A window `[lo, hi)` whose program image ends at `image_end`, with an 8 MiB stack.
    pub fn new(lo: u64, hi: u64, image_end: u64) -> Self {
        Self::with_stack(lo, hi, image_end, STACK_SIZE)
    }

    /// [`Mm::new`] with a stack reservation of `stack` bytes (a multiple of the page size).
    pub fn with_stack(lo: u64, hi: u64, image_end: u64, stack: u64) -> Self {
        let brk_start = page_up(image_end);
        let room = hi.saturating_sub(brk_start + stack);
        let brk_max = brk_start + (room / 4).min(1 << 30) / PAGE * PAGE;
        let mut maps = RangeSet::default();
        maps.insert(hi - stack, hi);
        maps.insert(lo, brk_start);
        Mm {
            window: (lo, hi),
            brk_start,
            brk_cur: brk_start,
            brk_max,
            mmap_lo: brk_max,
            mmap_hi: hi - stack - STACK_GUARD_GAP,
            maps,
            stack,
            sealed: RangeSet::default(),
        }
    }

    /// (total, free) bytes of the window as `sysinfo` reports them: free is what neither a
    /// mapping, the program image, the stack nor the break holds.
    pub fn usage(&self) -> (u64, u64) {
        let total = self.window.1 - self.window.0;
        let used = self.mapped();
        (total, total.saturating_sub(used))
    }

    /// Bytes the guest has mapped (mappings, image, stack reservation, break), as RLIMIT_AS
    /// counts them.
    pub fn mapped(&self) -> u64 {
        self.maps.bytes() + page_up(self.brk_cur).saturating_sub(self.brk_start)
    }

    /// Ok when `more` bytes may be mapped under the guest's RLIMIT_AS (`memlimit.rs`).
    fn may_grow(&self, more: u64) -> Result<(), MmError> {
        if crate::memlimit::room_for(self.mapped(), more) {
            Ok(())
        } else {
            Err(MmError::OverLimit)
        }
    }

    /// Marks `[a, a+len)` in use (the image of the interpreter, for example).
    pub fn reserve(&mut self, a: u64, len: u64) {
        self.maps.insert(a, a + page_up(len));
    }

    /// brk(2): returns the new break (the old one when the request is refused, like Linux).
    pub fn brk(&mut self, want: u64, fx: &mut Effects) -> u64 {
        if want < self.brk_start || want > self.brk_max {
            return self.brk_cur;
        }
        let (old, new) = (page_up(self.brk_cur), page_up(want));
        if new < old && !self.sealed.is_free(new, old) {
            return self.brk_cur;
        }
        if new < old {
            fx.zero.push((new, old - new));
        } else if self.may_grow(new - old).is_err() {
            return self.brk_cur;
        }
        self.brk_cur = want;
        want
    }

    /// mmap(2) of anonymous (or to-be-filled file) memory.
    pub fn mmap(&mut self, addr: u64, len: u64, fixed: bool, fx: &mut Effects) -> Result<u64, MmError> {
        if len == 0 {
            return Err(MmError::Invalid);
        }
        let len = page_up(len);
        if fixed {
            if !addr.is_multiple_of(PAGE) {
                return Err(MmError::Invalid);
            }
            let end = addr.checked_add(len).ok_or(MmError::NoMemory)?;
            if addr < self.window.0 || end > self.window.1 {
                return Err(MmError::NoMemory);
            }
            if !self.sealed.is_free(addr, end) {
                return Err(MmError::Sealed);
            }
            let taken: u64 = self
                .maps
                .intersections(addr, end)
                .iter()
                .map(|(a, b)| b - a)
                .sum();
            self.may_grow(len - taken)?;
            if !self.maps.is_free(addr, end) {
                fx.zero.push((addr, len));
            }
            self.maps.insert(addr, end);
            return Ok(addr);
        }
        self.may_grow(len)?;
        // A hint that is free is honoured, as Linux does.
        if addr != 0
            && addr.is_multiple_of(PAGE)
            && addr >= self.mmap_lo
            && addr.saturating_add(len) <= self.mmap_hi
            && self.maps.is_free(addr, addr + len)
        {
            self.maps.insert(addr, addr + len);
            return Ok(addr);
        }
        // Like Linux for anonymous memory (thp_get_unmapped_area): a mapping of 2 MiB or more
        // starts on a 2 MiB boundary, so the 2 MiB ranges it covers whole hold nothing else and
        // keep 2 MiB guest pages (`pagetable.rs`), which KVM backs with 2 MiB host pages: one
        // fault per 2 MiB on first touch instead of 512 (a runtime's heap of 2 MiB + 16 KiB
        // segments next to its code segments got 4 KiB pages only).
        let a = self.place(len).ok_or(MmError::NoMemory)?;
        self.maps.insert(a, a + len);
        Ok(a)
    }

    /// Where mmap(NULL, len) of anonymous memory would put `len` (page-aligned) bytes now: the
    /// highest free gap of the mmap area, 2 MiB-aligned for 2 MiB or more where one is free. The
    /// placement is deterministic, so the next mappings can be foreseen (`next.rs`).
    pub fn place(&self, len: u64) -> Option<u64> {
        if len >= HUGE {
            self.maps
                .highest_aligned_gap(self.mmap_lo, self.mmap_hi, len, HUGE)
                .or_else(|| self.maps.highest_gap(self.mmap_lo, self.mmap_hi, len))
        } else {
            self.maps.highest_gap(self.mmap_lo, self.mmap_hi, len)
        }
    }

    /// mmap(NULL, len) at an `align`-aligned address (a power of two): MAP_HUGETLB mappings,
    /// which the host maps with 2 MiB pages only at 2 MiB-aligned addresses.
    pub fn mmap_aligned(&mut self, len: u64, align: u64) -> Result<u64, MmError> {
        let len = len.div_ceil(align).checked_mul(align).ok_or(MmError::NoMemory)?;
        self.may_grow(len)?;
        let room = len.checked_add(align - PAGE).ok_or(MmError::NoMemory)?;
        let a = self
            .maps
            .highest_gap(self.mmap_lo, self.mmap_hi, room)
            .ok_or(MmError::NoMemory)?;
        let start = a.div_ceil(align) * align;
        self.maps.insert(start, start + len);
        Ok(start)
    }

    /// mmap(NULL, len) placed bottom-up, close to the program (within rel32 reach of the thunks).
    pub fn mmap_low(&mut self, len: u64) -> Result<u64, MmError> {
        let len = page_up(len);
        self.may_grow(len)?;
        let a = self
            .maps
            .lowest_gap(self.mmap_lo, self.mmap_hi, len)
            .ok_or(MmError::NoMemory)?;
        self.maps.insert(a, a + len);
        Ok(a)
    }

    pub fn munmap(&mut self, addr: u64, len: u64, fx: &mut Effects) -> Result<(), MmError> {
        if !addr.is_multiple_of(PAGE) || len == 0 {
            return Err(MmError::Invalid);
        }
        let end = addr.checked_add(page_up(len)).ok_or(MmError::Invalid)?;
        if !self.sealed.is_free(addr, end) {
            return Err(MmError::Sealed);
        }
        let (lo, hi) = (addr.max(self.mmap_lo.min(self.window.0)), end.min(self.window.1));
        if lo < hi && !(lo < self.brk_max && hi > self.brk_start) {
            self.maps.remove(lo, hi);
            fx.zero.push((lo, hi - lo));
        }
        Ok(())
    }

    /// mremap(2) with MREMAP_MAYMOVE semantics when `may_move`.
    pub fn mremap(
        &mut self,
        old: u64,
        old_len: u64,
        new_len: u64,
        may_move: bool,
        fx: &mut Effects,
    ) -> Result<u64, MmError> {
        if !old.is_multiple_of(PAGE) || new_len == 0 {
            return Err(MmError::Invalid);
        }
        let (old_len, new_len) = (page_up(old_len), page_up(new_len));
        if !self.sealed.is_free(old, old.saturating_add(old_len.max(1))) {
            return Err(MmError::Sealed);
        }
        if !self.maps.covers(old, old + old_len) {
            return Err(MmError::Invalid);
        }
        if new_len <= old_len {
            self.munmap(old + new_len, old_len - new_len, fx).ok();
            return Ok(old);
        }
        self.may_grow(new_len - old_len)?;
        let grow_end = old + new_len;
        if grow_end <= self.mmap_hi && self.maps.is_free(old + old_len, grow_end) {
            self.maps.insert(old, grow_end);
            return Ok(old);
        }
        if !may_move {
            return Err(MmError::NoMemory);
        }
        // (Placed as mmap would place it; the limit was checked for the growth alone.)
        let new = self.place(new_len).ok_or(MmError::NoMemory)?;
        self.maps.insert(new, new + new_len);
        fx.copy = Some((old, new, old_len));
        self.maps.remove(old, old + old_len);
        fx.zero.push((old, old_len));
        Ok(new)
    }

    /// True when `[addr, addr+len)` is in the window (mprotect/madvise accept any such range).
    pub fn in_window(&self, addr: u64, len: u64) -> bool {
        addr >= self.window.0 && addr.checked_add(len).is_some_and(|e| e <= self.window.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm() -> Mm {
        Mm::new(0x40_0000, 0x40_0000 + (64 << 20), 0x50_1234)
    }

    #[test]
    fn brk_grows_and_refuses_beyond_limit() {
        let mut m = mm();
        let mut fx = Effects::default();
        assert_eq!(m.brk(0, &mut fx), 0x50_2000);
        assert_eq!(m.brk(0x60_0000, &mut fx), 0x60_0000);
        assert_eq!(m.brk(m.brk_max + 1, &mut fx), 0x60_0000);
        assert_eq!(m.brk(0x58_0000, &mut fx), 0x58_0000);
        assert_eq!(fx.zero, vec![(0x58_0000, 0x8_0000)]);
    }

    #[test]
    fn mmap_is_top_down_first_fit_and_munmap_frees() {
        let mut m = mm();
        let mut fx = Effects::default();
        let a = m.mmap(0, 8192, false, &mut fx).unwrap_or(0);
        assert_eq!(a, m.mmap_hi - 8192);
        let b = m.mmap(0, 100, false, &mut fx).unwrap_or(0);
        assert_eq!(b, a - 4096);
        m.munmap(a, 8192, &mut fx).unwrap_or(());
        let c = m.mmap(0, 4096, false, &mut fx).unwrap_or(0);
        assert_eq!(c, a + 4096);
    }

    #[test]
    fn fixed_mapping_over_existing_zeroes() {
        let mut m = mm();
        let mut fx = Effects::default();
        let a = m.mmap(0, 16384, false, &mut fx).unwrap_or(0);
        assert!(fx.zero.is_empty());
        m.mmap(a + 4096, 4096, true, &mut fx).unwrap_or(0);
        assert_eq!(fx.zero, vec![(a + 4096, 4096)]);
        assert_eq!(m.mmap(0x10, 4096, true, &mut fx), Err(MmError::Invalid));
        assert_eq!(m.mmap(0x1000, 4096, true, &mut fx), Err(MmError::NoMemory));
    }

    #[test]
    fn mremap_grows_in_place_or_moves() {
        let mut m = mm();
        let mut fx = Effects::default();
        let a = m.mmap(0, 4096, false, &mut fx).unwrap_or(0);
        let _b = m.mmap(0, 4096, false, &mut fx).unwrap_or(0);
        let n = m.mremap(a, 4096, 8192, true, &mut fx).unwrap_or(0);
        assert_ne!(n, a);
        assert_eq!(fx.copy, Some((a, n, 4096)));
        assert_eq!(m.mremap(n, 8192, 4096, false, &mut fx), Ok(n));
    }

    #[test]
    fn large_anonymous_mappings_start_on_2_mib_boundaries() {
        let mut m = mm();
        let mut fx = Effects::default();
        let a = m.mmap(0, (2 << 20) + 16384, false, &mut fx).unwrap_or(1);
        let b = m.mmap(0, (2 << 20) + 16384, false, &mut fx).unwrap_or(1);
        assert_eq!(a % (2 << 20), 0);
        assert_eq!(b % (2 << 20), 0);
        assert!(b + (2 << 20) + 16384 <= a);
        let small = m.mmap(0, 8192, false, &mut fx).unwrap_or(1);
        assert_eq!(small, m.mmap_hi - 8192, "small mappings fill the top gap");
    }

    #[test]
    fn aligned_gap_search() {
        let mut s = RangeSet::default();
        s.insert(0x30_0000, 0x40_0000);
        assert_eq!(
            s.highest_aligned_gap(0, 0x50_0000, 0x10_0000, 0x20_0000),
            Some(0x40_0000)
        );
        assert_eq!(
            s.highest_aligned_gap(0, 0x48_0000, 0x10_0000, 0x20_0000),
            Some(0x20_0000)
        );
        assert_eq!(s.highest_aligned_gap(0, 0x50_0000, 0x20_0000, 0x20_0000), Some(0));
        assert_eq!(
            s.highest_aligned_gap(0x10_0000, 0x50_0000, 0x20_0000, 0x20_0000),
            None
        );
        assert_eq!(
            s.highest_aligned_gap(0, 0x80_0000, 0x20_0000, 0x20_0000),
            Some(0x60_0000)
        );
    }

    #[test]
    fn rangeset_gap_search() {
        let mut s = RangeSet::default();
        s.insert(100, 200);
        s.insert(300, 400);
        assert_eq!(s.highest_gap(0, 400, 100), Some(200));
        assert_eq!(s.highest_gap(0, 400, 101), None);
        assert_eq!(s.highest_gap(0, 500, 100), Some(400));
        assert!(s.covers(100, 200));
        assert!(!s.covers(100, 201));
        s.remove(150, 350);
        assert!(s.is_free(150, 300));
        assert!(s.covers(100, 150));
        let mut t = RangeSet::default();
        t.insert(100, 200);
        t.insert(250, 400);
        assert_eq!(t.lowest_gap(100, 1000, 50), Some(200));
        assert_eq!(t.lowest_gap(100, 1000, 51), Some(400));
        assert_eq!(t.lowest_gap(0, 1000, 100), Some(0));
        assert_eq!(t.lowest_gap(100, 450, 51), None);
        // Joined: adjacent and overlapping ranges become one.
        let mut j = RangeSet::default();
        j.insert_joined(100, 200);
        j.insert_joined(300, 400);
        j.insert_joined(200, 300);
        j.insert_joined(50, 120);
        assert_eq!(j.intersections(0, 1000), vec![(50, 400)]);
        j.insert_joined(500, 600);
        assert_eq!(j.len(), 2);
    }
}
