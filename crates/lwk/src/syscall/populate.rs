//! The proxy's side of populating ahead (`crate::populate`, `--populate`): one batch between
//! its polls, checked under the address-space lock; and what a call that maps new anonymous
//! memory populates at once (`crate::atmap`, `--populate-at-map`).

use crate::kernel::{lock, Kernel};
use crate::mm::PAGE;
use crate::populate::BATCH;

impl Kernel {
    /// One step of the proxy's populating (`proxy.rs`, between polls): the next batch, if the
    /// address space is not being changed right now. True when it did something.
    pub fn populate_step(&self) -> bool {
        if !self.ahead.pending() {
            return false;
        }
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
        let mut rest = a;
        if let Some((s, e)) = self.at_map.take(a, b, new) {
            let t0 = std::time::Instant::now();
            let _ = crate::sys::madvise(s, (e - s) as usize, libc::MADV_POPULATE_WRITE);
            self.at_map.took(t0.elapsed().as_nanos() as u64);
            rest = e;
        }
        self.ahead.push(rest, b);
    }

    /// `costs.populate`: what populating ahead and at map time did.
    pub fn populated(&self) -> crate::populate::Populated {
        crate::populate::Populated {
            sync_pages: self.at_map.pages(),
            sync_seconds: self.at_map.seconds(),
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
}
