//! Populating the host pages behind the guest's new memory before its first touch (issue #13).
//!
//! The guest's page tables map a new mapping at once (no demand paging in the guest), but the
//! host pages behind it are made on the first touch: the guest's access faults into KVM, whose
//! fault makes the host allocate and clear the page (`hva_to_pfn`) and builds one shadow entry.
//! Where the host pages exist already, the same KVM fault also fills the shadow entries of up to
//! 8 neighbouring guest entries (its prefetch, which takes only host pages that are there). So a
//! fresh 4 KiB page costs the guest a KVM exit and a host fault each — ≈ 5.3 µs here, against
//! ≈ 2.2 µs for the native program's own page fault — and a page whose host page was made
//! beforehand ≈ 0.9 µs (`bench multiverse`, Fig. 11).
//!
//! With `--populate ahead` (or `MULTIOS_LWK_POPULATE=ahead`) the proxy makes them beforehand,
//! on its own CPU: every anonymous private writable mapping (mmap) and every growth of the break
//! is queued when it is made, and the proxy populates the queue (`MADV_POPULATE_WRITE`) in
//! batches of [`BATCH`] bytes between its polls, newest range first, each from its low end, at
//! most `cap` bytes of each (a mapping larger than that is populated only at its start: a
//! runtime's reservation stays lazy; a run queues at most 16 caps in all).
//! What the call that made a range populated at once (`atmap.rs`, `--populate-at-map`) is not
//! queued again. A call that comes during a batch waits for it (tens of µs). The guest's touch of a page that is there takes
//! KVM's fault with its prefetch; a touch that comes first takes the fault as before — the two
//! race harmlessly, as two threads touching one page do on Linux. The proxy never parks while
//! the queue holds work.
//!
//! Each batch is checked when it is taken, under the address-space lock (`AddressSpace::map`):
//! only ranges still mapped (or under the break) and not the host's own mappings (shared and
//! private file mappings, io_uring rings, MAP_SHARED anonymous memory: `space.shared`) are
//! populated, so nothing but the window's own anonymous memory is ever touched, and a range
//! unmapped in between is skipped. Populating changes no content (it makes missing pages, zeroed;
//! present ones are left as they are) and no guest page table.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Bytes populated per step of the proxy: 8 pages, the group KVM's prefetch fills.
pub const BATCH: u64 = 32 << 10;
/// The default most of one range populated ahead.
pub const DEFAULT_CAP: u64 = 64 << 20;
/// The most ranges kept waiting (the oldest are dropped beyond it).
const MAX_QUEUED: usize = 4096;
/// The most bytes queued over a run, in caps: a guest that maps far more than it touches does
/// not have all of it made resident.
const RUN_CAPS: u64 = 16;

const PAGE: u64 = 4096;

/// The ranges waiting to be populated, and what was done.
#[derive(Debug, Default)]
pub struct Ahead {
    /// The most bytes of one range populated (0: off).
    cap: u64,
    /// `[start, end)` ranges, the newest last.
    queue: Mutex<Vec<(u64, u64)>>,
    /// The queue is not empty (read on every idle poll without the lock).
    pending: AtomicBool,
    stats: Counters,
}

/// What populating did in a run (`costs.populate`).
#[derive(Debug, Default)]
struct Counters {
    queued: AtomicU64,
    pages: AtomicU64,
    batches: AtomicU64,
    skipped: AtomicU64,
    ns: AtomicU64,
}

/// `costs.populate` of a run's summary.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Populated {
    /// Bytes of one range populated at most (0: off).
    pub cap_bytes: u64,
    /// Bytes queued (each range clipped to the cap).
    pub queued_bytes: u64,
    /// Pages of the batches populated (a page the guest touched first is not made again), in
    /// how many batches, and the proxy's time doing it.
    pub pages: u64,
    /// Pages populated at once by the call that mapped them (`atmap.rs`, `--populate-at-map`;
    /// filled in by the kernel, which holds both).
    pub sync_pages: u64,
    /// The time the calls spent populating them.
    pub sync_seconds: f64,
    /// What populating the free memory of the next mappings did (`next.rs`,
    /// `--populate-next`; filled in by the kernel).
    pub next: crate::next::NextCounts,
    pub batches: u64,
    pub seconds: f64,
    /// Batches skipped: the range was unmapped or became a host mapping before its turn.
    pub skipped: u64,
}

impl Ahead {
    /// Populating ranges up to `cap` bytes each (0: off).
    pub fn new(cap: u64) -> Self {
        Ahead {
            cap: cap / PAGE * PAGE,
            ..Default::default()
        }
    }

    /// The setting of `MULTIOS_LWK_POPULATE` when set (`off` or `0`: off; `ahead`: on with
    /// [`DEFAULT_CAP`]; a number: on, that many MiB per range), else `default`.
    pub fn cap_from_env(default: u64) -> u64 {
        match std::env::var("MULTIOS_LWK_POPULATE") {
            Ok(v) => parse_cap(&v).unwrap_or(default),
            Err(_) => default,
        }
    }

    /// True when ranges are populated ahead.
    pub fn on(&self) -> bool {
        self.cap > 0
    }

    /// Queues `[a, b)` (page-aligned inward, clipped to the cap and to what is left of the run's
    /// caps).
    pub fn push(&self, a: u64, b: u64) {
        if self.cap == 0 {
            return;
        }
        let a = a.div_ceil(PAGE) * PAGE;
        let b = (b / PAGE * PAGE).min(a.saturating_add(self.cap));
        let left = (self.cap * RUN_CAPS).saturating_sub(self.stats.queued.load(Relaxed));
        let b = b.min(a.saturating_add(left));
        if b <= a {
            return;
        }
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() >= MAX_QUEUED {
            q.remove(0);
        }
        q.push((a, b));
        self.stats.queued.fetch_add(b - a, Relaxed);
        self.pending.store(true, Relaxed);
    }

    /// True while ranges wait.
    pub fn pending(&self) -> bool {
        self.pending.load(Relaxed)
    }

    /// The next batch: at most `max` bytes from the low end of the newest range, ending on a
    /// multiple of `max` where it can (batches line up with KVM's prefetch groups).
    pub fn take(&self, max: u64) -> Option<(u64, u64)> {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = q.pop()?;
        let cut = ((a / max) + 1) * max;
        let end = b.min(cut);
        if end < b {
            q.push((end, b));
        }
        self.pending.store(!q.is_empty(), Relaxed);
        Some((a, end))
    }

    /// Counts a batch: `pages` populated (0 when skipped) in `ns`.
    pub fn done(&self, pages: u64, ns: u64) {
        if pages == 0 {
            self.stats.skipped.fetch_add(1, Relaxed);
        } else {
            self.stats.pages.fetch_add(pages, Relaxed);
            self.stats.batches.fetch_add(1, Relaxed);
        }
        self.stats.ns.fetch_add(ns, Relaxed);
    }

    /// What was done so far.
    pub fn snapshot(&self) -> Populated {
        Populated {
            cap_bytes: self.cap,
            queued_bytes: self.stats.queued.load(Relaxed),
            pages: self.stats.pages.load(Relaxed),
            sync_pages: 0,
            sync_seconds: 0.0,
            next: crate::next::NextCounts::default(),
            batches: self.stats.batches.load(Relaxed),
            seconds: self.stats.ns.load(Relaxed) as f64 * 1e-9,
            skipped: self.stats.skipped.load(Relaxed),
        }
    }
}

/// `MULTIOS_LWK_POPULATE`'s value as a cap in bytes (None: not understood).
pub fn parse_cap(v: &str) -> Option<u64> {
    match v.trim() {
        "off" | "0" | "" => Some(0),
        "ahead" | "on" | "1" => Some(DEFAULT_CAP),
        n => n.parse::<u64>().ok().map(|mib| mib << 20),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_clipped_to_the_cap_and_taken_newest_first_in_aligned_batches() {
        let a = Ahead::new(1 << 20);
        assert!(!a.pending());
        a.push(0x10_0000, 0x10_0000 + (4 << 20));
        a.push(0x80_1000, 0x80_9000);
        assert!(a.pending());
        // The newest range first, cut at the next 32 KiB boundary.
        assert_eq!(a.take(BATCH), Some((0x80_1000, 0x80_8000)));
        assert_eq!(a.take(BATCH), Some((0x80_8000, 0x80_9000)));
        // Then the older one, only its first MiB.
        let mut n = 0;
        while let Some((s, e)) = a.take(BATCH) {
            assert_eq!(e - s, BATCH);
            assert!(s >= 0x10_0000 && e <= 0x20_0000);
            n += 1;
        }
        assert_eq!(n, 32);
        assert!(!a.pending());
        assert_eq!(a.snapshot().queued_bytes, (1 << 20) + 0x8000);
        // A run queues at most 16 caps in all.
        for k in 0..20 {
            a.push(k << 24, (k + 1) << 24);
        }
        assert_eq!(a.snapshot().queued_bytes, 16 << 20);
    }

    #[test]
    fn off_queues_nothing_and_partial_pages_are_left_out() {
        let off = Ahead::new(0);
        off.push(0, 1 << 20);
        assert!(!off.pending() && off.take(BATCH).is_none());
        let a = Ahead::new(DEFAULT_CAP);
        a.push(0x1001, 0x1fff);
        assert!(!a.pending());
        a.push(0x1001, 0x3001);
        assert_eq!(a.take(BATCH), Some((0x2000, 0x3000)));
    }

    #[test]
    fn the_setting_parses() {
        assert_eq!(parse_cap("off"), Some(0));
        assert_eq!(parse_cap("ahead"), Some(DEFAULT_CAP));
        assert_eq!(parse_cap("16"), Some(16 << 20));
        assert_eq!(parse_cap("lots"), None);
    }
}
