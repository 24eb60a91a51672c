//! The proxy's side of populating ahead (`crate::populate`, `--populate`) and of populating the
//! free memory the next mappings will get (`crate::next`, `--populate-next`): one batch between
//! its polls, checked under the address-space lock; and what a call that maps new anonymous
//! memory populates at once (`crate::atmap`, `--populate-at-map`), less what the proxy made
//! beforehand.

use crate::kernel::{lock, Kernel};
use crate::mm::PAGE;
use crate::populate::BATCH;

impl Kernel {
    /// One step of the proxy's populating (`proxy.rs`, between polls): the next batch, if the
    /// address space is not being changed right now. True when it did something.
    pub fn populate_step(&self) -> bool {
        (self.ahead.pending() && self.ahead_step()) || (self.next.pending() && self.next_step())
    }

    /// A batch of `--populate ahead`'s queue.
    fn ahead_step(&self) -> bool {
        let _map = match self.space.map.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        let Some((a, b)) = self.ahead.take(BATCH) else {
            return false;
        };
        let t0 = std::time::Instant::now();
        let pages = if self.plain_anonymous(a, b)
            && crate::sys::madvise(a, (b - a) as usize, libc::MADV_POPULATE_WRITE).is_ok()
        {
            (b - a) / PAGE
        } else {
            0
        };
        self.ahead.done(pages, t0.elapsed().as_nanos() as u64);
        true
    }

    /// A new range of the guest's own anonymous memory, `[a, b)` of kind `new` (the caller holds
    /// `space.map`; the range was just mapped or the break grown): its head is populated now
    /// (`atmap.rs`, `--populate-at-map`) and the rest queued for the proxy (`--populate ahead`).
    pub(crate) fn populate_new(&self, a: u64, b: u64, new: crate::atmap::New) {
        // What the proxy made of it beforehand (`--populate-next`) is not made again.
        let made = self.next.hand_out(a, b);
        if matches!(new, crate::atmap::New::Map(_)) && crate::atmap::wanted(new) {
            self.next.note_size(b - a);
        }
        let mut rest = a;
        if let Some((s, e)) = self.at_map.take(a, b, new) {
            let t0 = std::time::Instant::now();
            let mut pages = 0;
            let inside: Vec<(u64, u64)> = made
                .iter()
                .filter(|r| r.1 > s && r.0 < e)
                .map(|r| (r.0.max(s), r.1.min(e)))
                .collect();
            for (x, y) in crate::next::outside(s, e, &inside) {
                let _ = crate::sys::madvise(x, (y - x) as usize, libc::MADV_POPULATE_WRITE);
                pages += (y - x) / PAGE;
            }
            self.at_map.took(pages, t0.elapsed().as_nanos() as u64);
            rest = e;
        }
        self.ahead.push(rest, b);
    }

    /// A batch of `--populate-next`: the forecast made again if the address space changed
    /// (and what it no longer foresees given back), then the next batch of free memory it
    /// foresees, checked free under the address-space lock. True when it did something.
    fn next_step(&self) -> bool {
        let _map = match self.space.map.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        let head = match self.at_map.per_range() {
            0 => crate::atmap::DEFAULT_PER_RANGE,
            n => n,
        };
        let back = {
            let mm = lock(&self.space.mm);
            let shared = lock(&self.space.shared);
            self.next.forecast(&mm, &shared, head)
        };
        for (x, y) in back {
            // Free memory: its host pages go back, as munmap's do (it reads zero either way).
            self.mem.zero(x, y - x);
        }
        let Some((a, b)) = self.next.take(BATCH) else {
            return false;
        };
        let t0 = std::time::Instant::now();
        let ok = self.free_anonymous(a, b)
            && crate::sys::madvise(a, (b - a) as usize, libc::MADV_POPULATE_WRITE).is_ok();
        self.next.made(a, b, ok, t0.elapsed().as_nanos() as u64);
        true
    }

    /// `costs.populate`: what populating ahead and at map time did.
    pub fn populated(&self) -> crate::populate::Populated {
        crate::populate::Populated {
            sync_pages: self.at_map.pages(),
            sync_seconds: self.at_map.seconds(),
            next: self.next.counts(),
            ..self.ahead.snapshot()
        }
    }

    /// True when `[a, b)` is the window's own anonymous memory the guest has mapped: inside a
    /// mapping or under the break, and no host mapping of its own (`space.shared`). The caller
    /// holds `space.map`.
    fn plain_anonymous(&self, a: u64, b: u64) -> bool {
        let mapped = {
            let mm = lock(&self.space.mm);
            let heap_end = mm.brk_cur.div_ceil(PAGE) * PAGE;
            mm.in_window(a, b - a) && ((a >= mm.brk_start && b <= heap_end) || mm.maps.covers(a, b))
        };
        mapped && lock(&self.space.shared).intersections(a, b).is_empty()
    }

    /// True when `[a, b)` is free memory of the window's mmap area: no mapping, no host mapping
    /// of its own. The caller holds `space.map`.
    fn free_anonymous(&self, a: u64, b: u64) -> bool {
        let free = {
            let mm = lock(&self.space.mm);
            a >= mm.mmap_lo && b <= mm.mmap_hi && mm.in_window(a, b - a) && mm.maps.is_free(a, b)
        };
        free && lock(&self.space.shared).intersections(a, b).is_empty()
    }
}
