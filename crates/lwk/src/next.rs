//! Populating the free window memory the next anonymous mappings will get, while the proxy
//! idles (issue #13, `--populate-next`).
//!
//! With `--populate-at-map` the call that maps new anonymous memory makes its host pages before
//! it returns: ≈ 2.7–3.4 µs a page of a Racket boot's ≈ 17 000, on the guest's critical path. But
//! the LWK's mmap is deterministic ([`Mm::place`]: top-down first fit, 2 MiB-aligned from 2 MiB
//! up), so where the next mappings land can be foreseen, and their host pages made beforehand by
//! the proxy between calls, on its own CPU; the mapping call then finds them made and populates
//! only what is missing.
//!
//! The forecast: the next mappings repeat the sizes of the last [`SIZES`] anonymous mappings in
//! turn — of the last [`HISTORY`], those whose size came more than once, when some did (a
//! runtime maps its heap in a rhythm: Racket a chunk of 2 MiB + 16 KiB, then 24 KiB for its
//! bookkeeping, with a few one-off sizes between) — each placed as [`Mm::place`] would on a copy
//! of the memory manager, and of each the head `--populate-at-map` would populate, until `ahead`
//! bytes are foreseen. It is made again after every call that changes the address space.
//!
//! What stays safe: only free memory of the mmap area is populated, checked under the
//! address-space lock (`AddressSpace::map`) batch by batch. Free window memory reads zero (munmap,
//! brk shrink and exec give its host pages back), and populating makes missing pages zeroed and
//! changes no content, so a range handed out reads zero whether it was populated or not. The
//! guest's page tables do not map free memory (`syscall/protect.rs`) and populating does not
//! change them, so the guest cannot touch what it did not map. The price is memory: pages made
//! that no mapping gets. They are bounded: what is made beyond the forecast is given back
//! (`MADV_DONTNEED`) once it exceeds [`KEEP`] × `ahead`, and the forecasting stops for the run
//! when the pages wasted exceed the pages used by [`GIVE_UP`] × `ahead`.

use crate::mm::{Mm, RangeSet, PAGE};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

/// The bytes of foreseen mappings kept populated when it is on (`--populate-next on`: two of
/// Racket's heap chunks).
pub const AHEAD: u64 = 4 << 20;
/// The default: off. On the loaded machine of 2026-11-26 21:15–21:38 no paired interval decided
/// either way (docs/BENCHMARKS.md, "The next mappings populated while the proxy idles"); a quiet
/// paired run decides.
pub const DEFAULT_AHEAD: u64 = 0;
/// How many of the last mappings' sizes the forecast repeats.
pub const SIZES: usize = 2;
/// How many mappings' sizes are kept to tell recurring sizes from one-off ones.
pub const HISTORY: usize = 8;
/// The most mappings foreseen at once (a forecast of many small mappings stays short).
const MAX_FORESEEN: usize = 64;
/// Made memory outside the forecast is given back once all that is made exceeds this many
/// times `ahead`.
pub const KEEP: u64 = 2;
/// The forecasting stops when the pages wasted exceed the pages used by this many times
/// `ahead`.
pub const GIVE_UP: u64 = 4;

/// The free memory populated ahead of the next mappings, its plan and its counts.
#[derive(Debug, Default)]
pub struct Next {
    ahead: u64,
    state: Mutex<State>,
    /// A forecast or a batch is due (read on every idle poll without the lock).
    pending: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Free memory whose host pages were made and that no mapping has got since.
    made: RangeSet,
    /// What is left to populate of the forecast, the next range last.
    plan: Vec<(u64, u64)>,
    /// The address space changed since the forecast.
    stale: bool,
    /// The sizes of the last anonymous mappings, the newest last.
    sizes: Vec<u64>,
    counts: NextCounts,
    ns: u64,
}

/// `costs.populate.next` of a run's summary: what populating the next mappings did.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct NextCounts {
    /// Bytes of foreseen mappings kept populated (0: off).
    pub ahead_bytes: u64,
    /// Pages populated ahead of the mapping that would get them, in how many batches, and the
    /// proxy's time doing it.
    pub pages: u64,
    pub batches: u64,
    pub seconds: f64,
    /// Of those, pages a mapping of the guest's own memory got (its call did not make them).
    pub hits: u64,
    /// Pages given back unused: zeroed by a munmap, madvise or exec over free memory, replaced
    /// by a host mapping, or given back because the forecast moved.
    pub dropped: u64,
    /// Pages still free and populated at the end.
    pub left: u64,
    /// Forecasts made.
    pub forecasts: u64,
    /// The forecasting stopped for the run (too many pages wasted).
    pub gave_up: bool,
}

impl Next {
    /// Keeping `ahead` bytes of the foreseen mappings populated (0: off).
    pub fn new(ahead: u64) -> Self {
        let ahead = ahead / PAGE * PAGE;
        Next {
            ahead,
            state: Mutex::new(State {
                counts: NextCounts {
                    ahead_bytes: ahead,
                    ..Default::default()
                },
                ..Default::default()
            }),
            pending: AtomicBool::new(false),
        }
    }

    /// `MULTIOS_LWK_POPULATE_NEXT` ([`parse_ahead`]) when set and understood, else `default`
    /// (bytes).
    pub fn ahead_from_env(default: u64) -> u64 {
        std::env::var("MULTIOS_LWK_POPULATE_NEXT")
            .ok()
            .and_then(|v| parse_ahead(&v))
            .unwrap_or(default)
    }

    /// True when the next mappings are populated ahead.
    pub fn on(&self) -> bool {
        self.ahead > 0
    }

    /// True while a forecast or a batch is due.
    pub fn pending(&self) -> bool {
        self.pending.load(Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The address space is changing (the caller holds `space.map`): the forecast is made again
    /// before the next batch.
    pub fn changed(&self) {
        if self.on() {
            self.state().stale = true;
            self.pending.store(true, Relaxed);
        }
    }

    /// A new anonymous mapping of `len` bytes of the kind populated at map time: its size is
    /// the forecast's.
    pub fn note_size(&self, len: u64) {
        if !self.on() {
            return;
        }
        let mut st = self.state();
        if st.sizes.len() == HISTORY {
            st.sizes.remove(0);
        }
        st.sizes.push(len.div_ceil(PAGE) * PAGE);
    }

    /// `[a, b)` became the guest's own memory (the caller holds `space.map`): the parts of it
    /// populated ahead, now no longer free, counted as hits.
    pub fn hand_out(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        if !self.on() {
            return Vec::new();
        }
        let mut st = self.state();
        let got = st.made.intersections(a, b);
        if !got.is_empty() {
            st.made.remove(a, b);
            st.counts.hits += pages(&got);
        }
        got
    }

    /// `[a, b)` was zeroed (its host pages given back): what was populated in it is dropped.
    pub fn dropped(&self, a: u64, b: u64) {
        if !self.on() {
            return;
        }
        let mut st = self.state();
        let gone = st.made.intersections(a, b);
        if !gone.is_empty() {
            st.made.remove(a, b);
            st.counts.dropped += pages(&gone);
            give_up_if_wasteful(&mut st, self.ahead);
        }
    }

    /// A new program (execve): its window was zeroed, its mappings' sizes say nothing of the
    /// new one's.
    pub fn exec(&self, window: (u64, u64)) {
        self.dropped(window.0, window.1);
        if self.on() {
            self.state().sizes.clear();
            self.changed();
        }
    }

    /// Makes the forecast again if the address space changed (the caller holds `space.map`; `mm`
    /// and `shared` are the memory manager and the host's own mappings, `head` the most of a
    /// mapping populated at map time). Returns the made ranges to give back (no longer
    /// foreseen, or the forecasting gave up), already counted as dropped.
    pub fn forecast(&self, mm: &Mm, shared: &RangeSet, head: u64) -> Vec<(u64, u64)> {
        let mut st = self.state();
        if !st.stale {
            return Vec::new();
        }
        st.stale = false;
        st.counts.forecasts += 1;
        // Made memory that is no longer free went to a call that did not count it: the guest's
        // own (a file's private copy, an mremap), or under a host mapping of its own.
        let taken: Vec<(u64, u64)> = st
            .made
            .intersections(0, u64::MAX)
            .into_iter()
            .flat_map(|(s, e)| mm.maps.intersections(s, e))
            .collect();
        for (s, e) in taken {
            st.made.remove(s, e);
            let host = pages(&shared.intersections(s, e));
            st.counts.dropped += host;
            st.counts.hits += (e - s) / PAGE - host;
        }
        give_up_if_wasteful(&mut st, self.ahead);
        let want = if st.counts.gave_up {
            Vec::new()
        } else {
            foresee(mm, &rhythm(&st.sizes), head, self.ahead)
        };
        let mut plan = Vec::new();
        for &(s, e) in &want {
            plan.extend(outside(s, e, &st.made.intersections(s, e)));
        }
        plan.reverse();
        st.plan = plan;
        // What is made beyond the forecast is given back once there is too much of it.
        let mut back = Vec::new();
        if st.counts.gave_up || st.made.bytes() > KEEP * self.ahead {
            let mut keep = RangeSet::default();
            for &(s, e) in &want {
                keep.insert(s, e);
            }
            for (s, e) in st.made.intersections(0, u64::MAX) {
                back.extend(outside(s, e, &keep.intersections(s, e)));
            }
            for &(s, e) in &back {
                st.made.remove(s, e);
            }
            st.counts.dropped += pages(&back);
            give_up_if_wasteful(&mut st, self.ahead);
        }
        self.pending.store(!st.plan.is_empty(), Relaxed);
        back
    }

    /// The next batch of the plan: at most `max` bytes from the low end of the next foreseen
    /// range, ending on a multiple of `max` where it can.
    pub fn take(&self, max: u64) -> Option<(u64, u64)> {
        let mut st = self.state();
        let (a, b) = st.plan.pop()?;
        let end = b.min((a / max + 1) * max);
        if end < b {
            st.plan.push((end, b));
        }
        self.pending.store(!st.plan.is_empty() || st.stale, Relaxed);
        Some((a, end))
    }

    /// A batch `[a, b)` taken from the plan was populated (`ok`; else it was found not free
    /// and left alone) in `ns`.
    pub fn made(&self, a: u64, b: u64, ok: bool, ns: u64) {
        let mut st = self.state();
        st.ns += ns;
        if ok {
            st.made.insert_joined(a, b);
            st.counts.pages += (b - a) / PAGE;
            st.counts.batches += 1;
        }
    }

    /// What was done so far.
    pub fn counts(&self) -> NextCounts {
        let st = self.state();
        NextCounts {
            left: st.made.bytes() / PAGE,
            seconds: st.ns as f64 * 1e-9,
            ..st.counts
        }
    }
}

/// `--populate-next`'s value as bytes: `on` ([`AHEAD`]), `off` or `0` (0), or KiB; None when not
/// understood.
pub fn parse_ahead(v: &str) -> Option<u64> {
    match v.trim() {
        "on" => Some(AHEAD),
        n => crate::atmap::parse_kib(n),
    }
}

/// Stops the forecasting when the pages wasted exceed the pages used by [`GIVE_UP`] × `ahead`.
fn give_up_if_wasteful(st: &mut State, ahead: u64) {
    if st.counts.dropped > st.counts.hits + GIVE_UP * ahead / PAGE {
        st.counts.gave_up = true;
        st.plan.clear();
    }
}

/// The sizes the forecast repeats, from the last mappings' (`history`, the newest last): the
/// last [`SIZES`] of those whose size came more than once, or the last [`SIZES`] when none did.
pub fn rhythm(history: &[u64]) -> Vec<u64> {
    let recurring: Vec<u64> = history
        .iter()
        .copied()
        .filter(|s| history.iter().filter(|t| *t == s).count() > 1)
        .collect();
    let from = if recurring.is_empty() { history } else { &recurring };
    from[from.len().saturating_sub(SIZES)..].to_vec()
}

/// Pages of page-aligned ranges.
fn pages(ranges: &[(u64, u64)]) -> u64 {
    ranges.iter().map(|(s, e)| (e - s) / PAGE).sum()
}

/// The heads (at most `head` bytes from the low end) of the next mappings, as [`Mm::place`]
/// would place them if they repeat `sizes` (the newest last) in turn, until `ahead` bytes are
/// foreseen, the next first.
pub fn foresee(mm: &Mm, sizes: &[u64], head: u64, ahead: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if sizes.is_empty() || head == 0 || ahead == 0 {
        return out;
    }
    let mut scratch = mm.clone();
    let mut total = 0;
    for &len in sizes.iter().cycle().take(MAX_FORESEEN) {
        let Some(a) = scratch.place(len) else { break };
        scratch.maps.insert(a, a + len);
        let h = len.min(head).min(ahead - total) / PAGE * PAGE;
        if h > 0 {
            out.push((a, a + h));
            total += h;
        }
        if total >= ahead {
            break;
        }
    }
    out
}

/// The parts of `[a, b)` outside `inside` (sorted, disjoint ranges within `[a, b)`).
pub fn outside(a: u64, b: u64, inside: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = a;
    for &(s, e) in inside {
        if s > pos {
            out.push((pos, s));
        }
        pos = pos.max(e);
    }
    if pos < b {
        out.push((pos, b));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::Effects;

    const MIB: u64 = 1 << 20;
    const CHUNK: u64 = 2 * MIB + (16 << 10);
    const META: u64 = 24 << 10;

    fn mm() -> Mm {
        Mm::new(0x4000_0000, 0x4000_0000 + (512 * MIB), 0x4010_1234)
    }

    /// Populates the whole plan, as the proxy does batch by batch.
    fn run_plan(n: &Next) -> Vec<(u64, u64)> {
        let mut done = Vec::new();
        while let Some((a, b)) = n.take(32 << 10) {
            assert!(b - a <= 32 << 10);
            n.made(a, b, true, 1000);
            done.push((a, b));
        }
        done
    }

    #[test]
    fn issue_13_the_forecast_is_where_mmap_puts_the_next_mappings() {
        // Racket's rhythm: a heap chunk, then its bookkeeping; the forecast repeats the last two.
        let mut m = mm();
        let mut fx = Effects::default();
        let seen = foresee(&m, &[CHUNK, META], 4 * MIB, 4 * MIB);
        assert_eq!(seen.len(), 3, "{seen:x?}");
        // Exactly `ahead` bytes: the last head is cut short.
        assert_eq!(seen.iter().map(|(s, e)| e - s).sum::<u64>(), 4 * MIB);
        for (k, &(s, e)) in seen.iter().enumerate() {
            let len = [CHUNK, META][k % 2];
            let got = m.mmap(0, len, false, &mut fx).unwrap_or(0);
            assert_eq!(got, s, "foreseen {seen:x?}");
            assert!(e > s && e - s <= len, "foreseen {seen:x?}");
        }
        // A large mapping: only its head, as at map time.
        let big = foresee(&m, &[10 * MIB], 4 * MIB, 4 * MIB);
        let got = m.mmap(0, 10 * MIB, false, &mut fx).unwrap_or(0);
        assert_eq!(big, vec![(got, got + 4 * MIB)]);
        // Nothing is foreseen without sizes, a head or a budget.
        assert!(foresee(&m, &[], 4 * MIB, 4 * MIB).is_empty());
        assert!(foresee(&m, &[CHUNK], 0, 4 * MIB).is_empty());
        assert!(foresee(&m, &[CHUNK], 4 * MIB, 0).is_empty());
        // Small sizes stop at the most mappings foreseen.
        assert_eq!(foresee(&m, &[4096], 4 * MIB, 4 * MIB).len(), MAX_FORESEEN);
    }

    #[test]
    fn issue_13_a_mapping_that_lands_on_made_memory_is_a_hit_and_the_rest_is_planned() {
        let n = Next::new(4 * MIB);
        let mut m = mm();
        let mut fx = Effects::default();
        // Nothing foreseen before the first mapping.
        n.changed();
        assert!(n.pending());
        assert!(n.forecast(&m, &RangeSet::default(), 4 * MIB).is_empty());
        assert_eq!(n.take(32 << 10), None);
        assert!(!n.pending());
        for len in [CHUNK, META] {
            n.changed();
            let a = m.mmap(0, len, false, &mut fx).unwrap_or(0);
            assert!(n.hand_out(a, a + len).is_empty());
            n.note_size(len);
        }
        n.forecast(&m, &RangeSet::default(), 4 * MIB);
        let done = run_plan(&n);
        let made: u64 = done.iter().map(|(a, b)| b - a).sum();
        // A chunk, a bookkeeping area and the head of the next chunk: `ahead` bytes.
        assert_eq!(made, 4 * MIB, "{done:x?}");
        // The next chunk lands on made memory: a hit, all of it.
        n.changed();
        let a = m.mmap(0, CHUNK, false, &mut fx).unwrap_or(0);
        let got = n.hand_out(a, a + CHUNK);
        assert_eq!(got, vec![(a, a + CHUNK)]);
        assert_eq!(outside(a, a + CHUNK, &got), vec![]);
        n.note_size(CHUNK);
        // The forecast moves on; only what is not made yet is planned.
        n.forecast(&m, &RangeSet::default(), 4 * MIB);
        let more: u64 = run_plan(&n).iter().map(|(a, b)| b - a).sum();
        // The chunk size now recurs, the bookkeeping's not yet: two chunks foreseen, the rest of
        // the second (its head made before) and the third's head.
        assert_eq!(
            more,
            (CHUNK - (4 * MIB - CHUNK - META)) + (4 * MIB - CHUNK),
            "{more}"
        );
        let c = n.counts();
        assert_eq!(c.hits, CHUNK / PAGE);
        assert_eq!(c.pages, (made + more) / PAGE);
        assert_eq!(c.left, c.pages - c.hits);
        assert_eq!((c.dropped, c.ahead_bytes, c.gave_up), (0, 4 * MIB, false));
    }

    #[test]
    fn issue_13_zeroed_free_memory_is_dropped_and_taken_memory_counted_when_foreseen_again() {
        let n = Next::new(4 * MIB);
        let mut m = mm();
        let mut fx = Effects::default();
        let a = m.mmap(0, CHUNK, false, &mut fx).unwrap_or(0);
        n.note_size(CHUNK);
        n.changed();
        n.forecast(&m, &RangeSet::default(), 4 * MIB);
        let done = run_plan(&n);
        assert_eq!(done.first().map(|d| d.0), Some(a - 4 * MIB), "{done:x?}");
        // A munmap over free memory zeroes it: its made pages are dropped.
        n.dropped(a - 4 * MIB, a - 2 * MIB);
        assert_eq!(n.counts().dropped, (2 * MIB) / PAGE);
        // A file's copy lands on made memory (not through hand_out): a hit at the next forecast;
        // a host mapping over made memory: dropped.
        let (f, g) = (a - 8 * MIB, a - 7 * MIB);
        m.mmap(f, MIB, true, &mut fx).unwrap_or(0);
        m.mmap(g, MIB, true, &mut fx).unwrap_or(0);
        let mut shared = RangeSet::default();
        shared.insert(g, g + MIB);
        n.changed();
        n.forecast(&m, &shared, 4 * MIB);
        let c = n.counts();
        // The second chunk foreseen was cut short at `ahead`: its 2 MiB less 1 MiB went to the
        // host mapping.
        let second = 4 * MIB - CHUNK;
        assert_eq!(c.hits, MIB / PAGE);
        assert_eq!(c.dropped, (2 * MIB + second - MIB) / PAGE);
        // Left: the first chunk's 16 KiB tail.
        assert_eq!(c.left, (CHUNK - 2 * MIB) / PAGE, "{c:?}");
        // An exec drops all and forgets the sizes.
        n.exec(m.window);
        assert_eq!(n.counts().left, 0);
        n.forecast(&m, &shared, 4 * MIB);
        assert_eq!(n.take(32 << 10), None);
    }

    #[test]
    fn issue_13_made_memory_beyond_the_forecast_is_given_back_and_waste_stops_it() {
        let n = Next::new(MIB);
        n.note_size(MIB);
        // Each forecast on a window 16 MiB lower: the foreseen MiB moves, what was made stays
        // free and is no longer foreseen.
        let window = |k: u64| Mm::new(0x4000_0000, 0x4000_0000 + (512 - 16 * k) * MIB, 0x4010_1234);
        let mut back = Vec::new();
        for k in 0..4 {
            n.changed();
            back = n.forecast(&window(k), &RangeSet::default(), 4 * MIB);
            if k < 3 {
                assert!(back.is_empty(), "forecast {k}: {back:x?}");
            }
            assert_eq!(run_plan(&n).iter().map(|(a, b)| b - a).sum::<u64>(), MIB);
        }
        // The fourth found 3 MiB made, more than KEEP × ahead, none of it foreseen.
        assert_eq!(pages(&back), 3 * MIB / PAGE, "{back:x?}");
        let c = n.counts();
        assert_eq!((c.pages, c.dropped, c.left, c.hits), (1024, 768, 256, 0));
        assert!(!c.gave_up);
        // Waste beyond the hits by GIVE_UP × ahead stops the forecasting, and gives all back.
        let mut k = 4;
        while !n.counts().gave_up && k < 20 {
            n.changed();
            n.forecast(&window(k), &RangeSet::default(), 4 * MIB);
            run_plan(&n);
            k += 1;
        }
        let c = n.counts();
        assert!(c.gave_up && c.dropped > GIVE_UP * MIB / PAGE, "{c:?}");
        n.changed();
        n.forecast(&window(k), &RangeSet::default(), 4 * MIB);
        assert_eq!(n.take(32 << 10), None);
        assert_eq!(n.counts().left, 0);
        assert_eq!(n.counts().dropped, n.counts().pages);
    }

    #[test]
    fn issue_13_the_forecast_repeats_the_recurring_sizes() {
        // Racket: chunks and their bookkeeping, with a one-off 10 MiB code area between.
        assert_eq!(rhythm(&[CHUNK, META, CHUNK, META, 10 * MIB]), vec![CHUNK, META]);
        assert_eq!(
            rhythm(&[CHUNK, META, CHUNK, 10 * MIB, META, 3 * MIB]),
            vec![CHUNK, META]
        );
        // Nothing recurs yet: the last two.
        assert_eq!(rhythm(&[MIB, CHUNK, META]), vec![CHUNK, META]);
        assert_eq!(rhythm(&[MIB]), vec![MIB]);
        assert!(rhythm(&[]).is_empty());
        // One size over and over.
        assert_eq!(rhythm(&[MIB; HISTORY]), vec![MIB, MIB]);
        // The history keeps the last HISTORY sizes.
        let n = Next::new(MIB);
        for k in 0..(HISTORY as u64 + 3) {
            n.note_size((k + 1) * PAGE);
        }
        assert_eq!(n.state().sizes.len(), HISTORY);
    }

    #[test]
    fn issue_13_off_does_nothing_and_outside_splits_a_range() {
        let n = Next::new(0);
        assert!(!n.on());
        n.changed();
        n.note_size(MIB);
        assert!(!n.pending());
        assert!(n.hand_out(0, MIB).is_empty());
        assert_eq!(n.counts(), NextCounts::default());
        assert_eq!(outside(0, 100, &[(10, 20), (50, 100)]), vec![(0, 10), (20, 50)]);
        assert_eq!(outside(0, 100, &[]), vec![(0, 100)]);
        assert_eq!(outside(0, 100, &[(0, 100)]), vec![]);
        assert_eq!(parse_ahead("on"), Some(AHEAD));
        assert_eq!(parse_ahead("off"), Some(0));
        assert_eq!(parse_ahead("8192"), Some(8 << 20));
        assert_eq!(parse_ahead("lots"), None);
    }
}
