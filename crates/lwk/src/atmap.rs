//! Populating new anonymous memory in the call that maps it (issue #13, `--populate-at-map`).
//!
//! A fresh page costs the guest a KVM fault that makes the host allocate it (≈ 5.9 µs here,
//! against ≈ 2.1 µs for the native program's own fault), and KVM's prefetch of the neighbouring
//! shadow entries takes only host pages that exist already. Populating a new range when it is
//! mapped (`MADV_POPULATE_WRITE`: every host page of the range made in one call, ≈ 0.5 µs a page)
//! lets each first touch find its host page, and one KVM fault fills its group of 8. Runtimes
//! touch their new heap chunks at once (Racket's 2 MiB + 16 KiB segment chunks, touched almost
//! whole while its boot files are loaded), so the guest would pay for those pages either way.
//!
//! Which ranges: anonymous private writable mmaps and growths of the break, at most
//! [`AtMap::per_range`] bytes from the low end of each (a larger mapping is a reservation or an
//! array the program may touch sparsely: only its start is made), and at most
//! [`AtMap::budget`] bytes over the run (a program that maps far more than it touches stops
//! paying). Not: `MAP_NORESERVE` (a reservation, by its own say), `MAP_STACK` and
//! `MAP_GROWSDOWN` (a stack is touched from its top). Populating changes no content — missing
//! pages are made zeroed, present ones are left — and no guest page table; its price is the
//! memory of pages the guest never touches.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const PAGE: u64 = 4096;
/// The default most bytes of one range populated at map time: a Racket heap chunk (2 MiB +
/// 16 KiB) whole, with room.
pub const DEFAULT_PER_RANGE: u64 = 4 << 20;
/// The most bytes populated at map time over a run, as a multiple of the per-range cap.
pub const BUDGET_RANGES: u64 = 256;

/// What kind of new memory a range is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum New {
    /// An anonymous private mapping with these mmap flags.
    Map(i32),
    /// Growth of the break.
    Break,
}

/// The map-time populating of a run: its caps and what it did.
#[derive(Debug, Default)]
pub struct AtMap {
    per_range: u64,
    budget: u64,
    used: AtomicU64,
    pages: AtomicU64,
    ns: AtomicU64,
}

impl AtMap {
    /// Populating up to `per_range` bytes of each new range (0: off), with the run's budget.
    pub fn new(per_range: u64) -> Self {
        let per_range = per_range / PAGE * PAGE;
        AtMap {
            per_range,
            budget: per_range.saturating_mul(BUDGET_RANGES),
            ..Default::default()
        }
    }

    /// `MULTIOS_LWK_POPULATE_SYNC` (KiB per range; `off` or 0: off) when set and understood,
    /// else `default` (bytes).
    pub fn per_range_from_env(default: u64) -> u64 {
        std::env::var("MULTIOS_LWK_POPULATE_SYNC")
            .ok()
            .and_then(|v| parse_kib(&v))
            .unwrap_or(default)
    }

    /// True when new ranges are populated at map time.
    pub fn on(&self) -> bool {
        self.per_range > 0
    }

    /// The part of the new range `[a, b)` of kind `new` to populate now (page-aligned inward,
    /// clipped to the per-range cap and what is left of the budget), taken from the budget; None
    /// when nothing is.
    pub fn take(&self, a: u64, b: u64, new: New) -> Option<(u64, u64)> {
        if self.per_range == 0 || !wanted(new) {
            return None;
        }
        let a = a.div_ceil(PAGE) * PAGE;
        let b = (b / PAGE * PAGE).min(a.saturating_add(self.per_range));
        if b <= a {
            return None;
        }
        let len = b - a;
        self.used
            .fetch_update(Relaxed, Relaxed, |u| (u + len <= self.budget).then_some(u + len))
            .ok()?;
        Some((a, b))
    }

    /// Counts what the populating of a range taken did: `pages` made (those the proxy had not
    /// made beforehand: `next.rs`) in `ns`.
    pub fn took(&self, pages: u64, ns: u64) {
        self.pages.fetch_add(pages, Relaxed);
        self.ns.fetch_add(ns, Relaxed);
    }

    /// The most bytes of one range populated (0: off).
    pub fn per_range(&self) -> u64 {
        self.per_range
    }

    /// Pages populated at map time so far.
    pub fn pages(&self) -> u64 {
        self.pages.load(Relaxed)
    }

    /// Seconds spent populating at map time so far.
    pub fn seconds(&self) -> f64 {
        self.ns.load(Relaxed) as f64 * 1e-9
    }
}

/// Whether a new range of this kind is populated at all.
pub fn wanted(new: New) -> bool {
    match new {
        New::Break => true,
        New::Map(flags) => flags & (libc::MAP_NORESERVE | libc::MAP_STACK | libc::MAP_GROWSDOWN) == 0,
    }
}

/// A size in KiB (`off` or `0`: 0) as bytes; None when not understood.
pub fn parse_kib(v: &str) -> Option<u64> {
    match v.trim() {
        "off" | "0" => Some(0),
        n => n.parse::<u64>().ok().and_then(|kib| kib.checked_mul(1024)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_a_new_range_is_populated_from_its_low_end_up_to_the_cap() {
        let m = AtMap::new(4 << 20);
        // A Racket heap chunk: whole.
        let chunk = (2 << 20) + (16 << 10);
        assert_eq!(
            m.take(0x4000_0000, 0x4000_0000 + chunk, New::Map(0)),
            Some((0x4000_0000, 0x4000_0000 + chunk))
        );
        // A large mapping: only its first 4 MiB.
        assert_eq!(
            m.take(0x8000_0000, 0x9000_0000, New::Map(0)),
            Some((0x8000_0000, 0x8040_0000))
        );
        // Partial pages are left out; a range of less than a page is nothing.
        assert_eq!(m.take(0x1001, 0x3001, New::Break), Some((0x2000, 0x3000)));
        assert_eq!(m.take(0x1001, 0x1fff, New::Break), None);
        // Pages are counted as made.
        m.took((chunk >> 12) + 1024 + 1, 1000);
        assert_eq!(m.pages(), (chunk >> 12) + 1024 + 1);
    }

    #[test]
    fn issue_13_reservations_and_stacks_are_not_populated_at_map_time() {
        let m = AtMap::new(4 << 20);
        for flags in [libc::MAP_NORESERVE, libc::MAP_STACK, libc::MAP_GROWSDOWN] {
            assert_eq!(
                m.take(0x10_0000, 0x20_0000, New::Map(flags | libc::MAP_PRIVATE)),
                None
            );
        }
        assert!(m
            .take(
                0x10_0000,
                0x20_0000,
                New::Map(libc::MAP_PRIVATE | libc::MAP_ANONYMOUS)
            )
            .is_some());
    }

    #[test]
    fn issue_13_the_run_s_budget_ends_map_time_populating() {
        let m = AtMap::new(1 << 20);
        let mut made = 0;
        for k in 0..(BUDGET_RANGES + 10) {
            if m.take(k << 24, (k << 24) + (1 << 20), New::Map(0)).is_some() {
                made += 1;
            }
        }
        assert_eq!(made, BUDGET_RANGES);
        // Off takes nothing.
        assert_eq!(AtMap::new(0).take(0, 1 << 20, New::Break), None);
        assert!(!AtMap::new(0).on());
    }

    #[test]
    fn issue_13_the_setting_parses_as_kib() {
        assert_eq!(parse_kib("off"), Some(0));
        assert_eq!(parse_kib("0"), Some(0));
        assert_eq!(parse_kib("2064"), Some(2064 << 10));
        assert_eq!(parse_kib("lots"), None);
    }
}
