//! Named corrections to the refined model for blind spots found on real programs (issue #15). The
//! paper's models (`naive`, `refined`) stay as they are; a correction is applied to a refined
//! [`Projection`] only when it is turned on, and with every term off ([`Terms::none`]) the
//! corrected speedup *is* the projection's `speedup`, bit for bit (a property test checks it).
//!
//! Each is measured by a microbenchmark that is not the run being predicted
//! (`multios_experiment::validate::real::micro`), and applied in this order:
//!
//! ```text
//! t_d' = ( t_d + T_startup + n_D·T_wakeup + T_first + T_mem − Σ_k ω_k·G_k − S_cache/γ ) / (1 − u)
//! T_first = P·T_touch (`touch`), or with `at-map` (pages populated at map time)
//!           P_pop·T_pop + min(P_in, P)·T_after + (P − min(P_in, P))·T_touch
//! T_mem = Σ_m (n_m·a_m + B_m·b_m)   over mmap (anonymous), mmap of a file, munmap, mremap (`memcalls`)
//! S_cache = r·n_D + Σ_k ρ_k·G_k   (within the measured gains)
//! S'   = t_nd / t_d'
//! ```
//!
//! - **`startup`**: the fixed cost of starting a program under interception — loading the preload
//!   library, rewriting every `syscall` site of the program and its libraries, starting the
//!   delegate threads (emulator), or building the VM (LWK) — paid once per run (per exec'd process
//!   with `procs`), not per call. Measured as the paired difference of an empty program run
//!   natively and intercepted. On the emulator the mechanism is set up in full but none of the
//!   program's calls is delegated: their round trips are the model's n(s)·2f_c already (measured
//!   with every call delegated, proxy's `true` took 2.99 ms against 0.71 ms). In the LWK every
//!   call it does not serve is forwarded, as in any run.
//! - **`startup-own`**: the same cost measured on the *workload's own* program doing nothing
//!   (`perl -e 1`, `python3 -c 'import json'`, `lmp` on an input with no run: the same binary,
//!   libraries, interpreter start-up and, for an MPI singleton, the forked `orted`), natively and
//!   intercepted, in the same minutes. It replaces `startup`'s `true` for the workload's own
//!   process (the root of the tree with `procs`); off, or without such a command, `startup` stands.
//! - **`wakeup`**: per delegated call (n_D of them), waking a delegate that slept between calls,
//!   or, for a delegate that polls (the AAM's OS machine), waiting while its CPU runs something
//!   else (the stall measured at the workload's call spacing, `multios_aam::bench::beside`).
//! - **`overlap`** and **`cache`**: what delegation spares the compute core ([`spare`]): part of a
//!   delegated call's time no longer on its clock (ω per class of call, G_k the delegated calls'
//!   time of class k), and the cache refill after a local call that a delegated one does not cause
//!   (S_cache, a γ for delegation).
//! - **`touch`** (the LWK): the first touches of memory the program makes beyond its empty run's.
//!   A page the guest touches first costs the LWK a host fault and a KVM shadow fault on top of
//!   what the native fault costs (T_touch per 4 KiB page, a microbenchmark's first writes to fresh
//!   memory natively and in the LWK); P is the program's native minor faults (its native runs)
//!   less those of the program whose start-up `startup`/`startup-own` already counted. The LWK
//!   populates the head of each new anonymous range at map time (its default): those P_pop pages
//!   cost the mapping call T_pop each and a touch then T_after, not T_touch: with **`at-map`**
//!   on ([`AtMapTouch`]) P·T_touch becomes P_pop·T_pop + min(P_in, P)·T_after +
//!   (P − min(P_in, P))·T_touch, P_in the populated pages the extra touches can land in
//!   (`at-map` refines `touch` and adds nothing without it). A target
//!   without guest pages (the emulator) has both off.
//! - **`memcalls`** (the LWK): the LWK serves mmap, munmap and mremap itself (bookkeeping, zeroing,
//!   giving pages back with MADV_DONTNEED, a moving mremap's copy, a host mapping per file), while
//!   the paper's model prices every local call at its native time. Per kind m, the extra cost
//!   over native is a per-call a_m plus a per-byte b_m of the call's length (mremap: the old
//!   length), both from a microbenchmark at two lengths natively and in the LWK; n_m and B_m
//!   (calls and bytes) come from the workload's profile less its empty run's ([`MemCalls`]).
//! - **`images`** (the LWK): a process's start-up priced by the image it exec'd,
//!   T = a + b·L + c·X + d·X_lib ([`images`]), instead of `startup`'s empty program — its loaded
//!   and executable bytes and its libraries' text, from the profile (schema 5); `startup-own`
//!   still stands for the root when it is on, and a process whose image sizes are unknown keeps
//!   `startup`'s.
//! - **`procs`**: a multi-process program is projected per process and composed along its process
//!   tree (a pipeline's critical path, not the sum of its processes) — [`crate::tree`].
//! - **`share`** (issue #11, the AAM): the fraction u of the time the delegate is descheduled.
//! - **`anchor`**: t_nd from the program's native runs (the median of the native side of the
//!   paired runs, never the target's), instead of the one profiled run. A short program's profiled
//!   run can take 0.85–1.5× its median native time (the profiler's start-up, a single run on a
//!   shared machine); the difference Δ = T_n − t_nd is taken as native compute, kept by the
//!   delegated run at γ: S' = T_n / (t_d' + Δ/γ), applied last ([`anchored`]).

pub mod images;
pub mod spare;

use crate::{ModelError, Projection};
pub use images::{ImageBytes, ImagePrice, Images};
pub use spare::{ByClass, Cache, CallClass};

/// One named term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Term {
    Startup,
    #[serde(rename = "startup-own")]
    StartupOwn,
    Wakeup,
    Overlap,
    Cache,
    Procs,
    Share,
    Anchor,
    Touch,
    Memcalls,
    Images,
    #[serde(rename = "at-map")]
    AtMap,
}

impl Term {
    /// Every term, in the order they are applied.
    pub const ALL: [Term; 12] = [
        Term::Startup,
        Term::StartupOwn,
        Term::Wakeup,
        Term::Overlap,
        Term::Cache,
        Term::Procs,
        Term::Share,
        Term::Anchor,
        Term::Touch,
        Term::Memcalls,
        Term::Images,
        Term::AtMap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Term::Startup => "startup",
            Term::StartupOwn => "startup-own",
            Term::Wakeup => "wakeup",
            Term::Overlap => "overlap",
            Term::Cache => "cache",
            Term::Procs => "procs",
            Term::Share => "share",
            Term::Anchor => "anchor",
            Term::Touch => "touch",
            Term::Memcalls => "memcalls",
            Term::Images => "images",
            Term::AtMap => "at-map",
        }
    }
}

/// Which terms are on, and their measured values.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Terms {
    /// Seconds added to t_d once per run (`startup`); `None`: off.
    pub startup_s: Option<f64>,
    /// Seconds added to t_d once per run instead of `startup_s`, measured on the workload's own
    /// program doing nothing (`startup-own`; only the workload's own process); `None`: off.
    pub startup_own_s: Option<f64>,
    /// Seconds added to t_d per delegated call (`wakeup`); `None`: off.
    pub wakeup_s: Option<f64>,
    /// ω per class of call: the share of a delegated call's native time off the caller's clock
    /// (`overlap`); `None`: off.
    pub overlap: Option<ByClass>,
    /// The compute refill spared per second of delegated call time (`cache`); `None`: off.
    pub cache: Option<Cache>,
    /// Compose per-process projections along the process tree (`procs`; needs a profile with
    /// `processes[]`, see [`crate::tree`]).
    pub procs: bool,
    /// Fraction of the delegate's time it is descheduled, in [0, 1) (`share`); `None`: off.
    pub share: Option<f64>,
    /// The program's median native time T_n that replaces the profiled t_nd (`anchor`); `None`: off.
    pub anchor_native_s: Option<f64>,
    /// The first touches of memory beyond the empty run's and what each costs more than natively
    /// (`touch`, the LWK); `None`: off.
    pub touch: Option<Touch>,
    /// The LWK's own memory calls: their counts and lengths and what each costs more than
    /// natively (`memcalls`, the LWK); `None`: off.
    pub memcalls: Option<MemCalls>,
    /// The start-up price of an image and the bytes of the process it applies to (`images`, the
    /// LWK); `None`: off.
    pub images: Option<Images>,
    /// The pages the LWK populates at map time and their prices (`at-map`, a refinement of
    /// `touch`: it changes how `touch` prices its pages and adds nothing without it); `None`: off,
    /// or nothing to split (the profile does not record its anonymous ranges, or the LWK
    /// populates nothing at map time), and `touch` prices every page as a first touch.
    pub at_map: Option<AtMapTouch>,
}

/// The `touch` term's inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Touch {
    /// P: pages the program touches first beyond those of the empty run whose start-up is counted
    /// (its native minor faults less the empty program's; below 0 counts as 0).
    pub pages: f64,
    /// T_touch: seconds a first touch of a 4 KiB page costs the target more than natively (the
    /// LWK with nothing populated at map time).
    pub per_page_s: f64,
}

/// The part of `touch` the LWK populates at map time (`--populate-at-map`, on by default): each
/// new anonymous range's head, up to the per-range cap, gets its host pages in the call that maps
/// it; a first touch there then costs the guest less than a fresh page's, and the populating
/// costs the mapping call a price per page whether the program touches the page or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct AtMapTouch {
    /// P_pop: pages populated at map time beyond the empty run's (from the profile's anonymous
    /// ranges, Σ min(length, cap) per process within the run's budget; below 0 counts as 0): the
    /// populating the empty run's start-up does not already hold.
    pub pages: f64,
    /// P_in: the populated pages the program's touches beyond the empty run's can land in — every
    /// page it populates, less those the empty run may have touched itself (at most its own
    /// populated pages, at most its faults); at least `pages`. The touched pages are taken to
    /// lie there first.
    pub touchable: f64,
    /// T_pop: seconds the mapping call takes more per page it populates (populate-at-map on less
    /// off, in the LWK).
    pub populate_s: f64,
    /// T_after: seconds a touch of a populated page costs the LWK more than a native first touch
    /// (often below 0: the host page is there).
    pub touch_s: f64,
}

impl Touch {
    /// P·T_touch, seconds (0 for a negative or non-finite count): every page at the first-touch
    /// price.
    pub fn seconds(&self) -> f64 {
        self.seconds_with(None)
    }

    /// The term's seconds with the pages populated at map time priced apart (`at-map`), never
    /// below 0 and 0 for non-finite inputs; without `at_map`, [`Touch::seconds`]. The touched
    /// pages are taken to lie in the populated heads first:
    /// P_pop·T_pop + min(P_in, P)·T_after + (P − min(P_in, P))·T_touch, P_in ≥ P_pop.
    pub fn seconds_with(&self, at_map: Option<&AtMapTouch>) -> f64 {
        let count = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
        let p = count(self.pages);
        let Some(m) = at_map else {
            return p * self.per_page_s;
        };
        let pop = count(m.pages);
        let touched = count(m.touchable).max(pop).min(p);
        let s = pop * m.populate_s + touched * m.touch_s + (p - touched) * self.per_page_s;
        if s.is_finite() {
            s.max(0.0)
        } else {
            0.0
        }
    }
}

/// One kind of memory call of the `memcalls` term: how many the program makes and with how many
/// bytes (its profile), and the target's extra cost per call and per byte (a microbenchmark).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct MemCall {
    /// n_m: calls of this kind.
    pub calls: f64,
    /// B_m: the bytes they asked for (mmap's and munmap's length, mremap's old length).
    pub bytes: f64,
    /// a_m: seconds per call more than natively.
    pub per_call_s: f64,
    /// b_m: seconds per byte more than natively.
    pub per_byte_s: f64,
}

impl MemCall {
    /// n_m·a_m + B_m·b_m, never below 0 (a price measured below native adds nothing) and 0 for
    /// non-finite inputs.
    pub fn seconds(&self) -> f64 {
        let s = self.calls * self.per_call_s + self.bytes * self.per_byte_s;
        if s.is_finite() {
            s.max(0.0)
        } else {
            0.0
        }
    }
}

/// The `memcalls` term's inputs: mmap of anonymous memory, mmap of a file, munmap and mremap.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct MemCalls {
    pub mmap: MemCall,
    pub mmap_file: MemCall,
    pub munmap: MemCall,
    pub mremap: MemCall,
}

impl MemCalls {
    /// T_mem: the four kinds' extra seconds.
    pub fn seconds(&self) -> f64 {
        self.mmap.seconds() + self.mmap_file.seconds() + self.munmap.seconds() + self.mremap.seconds()
    }
}

impl Terms {
    /// Every term off: the paper's refined model.
    pub fn none() -> Terms {
        Terms::default()
    }

    /// True when no term is on.
    pub fn is_none(&self) -> bool {
        self.on_projection_is_none() && !self.procs
    }

    /// True when no term that changes one projection's t_d is on (`procs` composes projections).
    fn on_projection_is_none(&self) -> bool {
        self.startup_s.is_none()
            && self.startup_own_s.is_none()
            && self.wakeup_s.is_none()
            && self.overlap.is_none()
            && self.cache.is_none()
            && self.share.is_none()
            && self.anchor_native_s.is_none()
            && self.touch.is_none()
            && self.memcalls.is_none()
            && self.images.is_none()
            && self.at_map.is_none()
    }

    /// Only `term` of these (its measured value kept), every other one off.
    pub fn only(&self, term: Term) -> Terms {
        let mut t = Terms::none();
        match term {
            Term::Startup => t.startup_s = self.startup_s,
            Term::StartupOwn => t.startup_own_s = self.startup_own_s,
            Term::Wakeup => t.wakeup_s = self.wakeup_s,
            Term::Overlap => t.overlap = self.overlap,
            Term::Cache => t.cache = self.cache,
            Term::Procs => t.procs = self.procs,
            Term::Share => t.share = self.share,
            Term::Anchor => t.anchor_native_s = self.anchor_native_s,
            Term::Touch => t.touch = self.touch,
            Term::Memcalls => t.memcalls = self.memcalls,
            Term::Images => t.images = self.images,
            Term::AtMap => t.at_map = self.at_map,
        }
        t
    }
}

impl Terms {
    /// Every term of these but `term` (turned off).
    pub fn without(&self, term: Term) -> Terms {
        let mut t = self.clone();
        match term {
            Term::Startup => t.startup_s = None,
            Term::StartupOwn => t.startup_own_s = None,
            Term::Wakeup => t.wakeup_s = None,
            Term::Overlap => t.overlap = None,
            Term::Cache => t.cache = None,
            Term::Procs => t.procs = false,
            Term::Share => t.share = None,
            Term::Anchor => t.anchor_native_s = None,
            Term::Touch => t.touch = None,
            Term::Memcalls => t.memcalls = None,
            Term::Images => t.images = None,
            Term::AtMap => t.at_map = None,
        }
        t
    }
}

/// Parses `--terms` text: `none`, `all`, or a comma-separated list of term names.
pub fn parse_terms(text: &str) -> Result<Vec<Term>, ModelError> {
    match text.trim() {
        "none" => Ok(Vec::new()),
        "all" => Ok(Term::ALL.to_vec()),
        list => list
            .split(',')
            .map(|t| {
                Term::ALL
                    .into_iter()
                    .find(|x| x.name() == t.trim())
                    .ok_or_else(|| ModelError::Term {
                        term: t.trim().to_string(),
                        known: Term::ALL.iter().map(|x| x.name()).collect::<Vec<_>>().join(", "),
                    })
            })
            .collect(),
    }
}

/// The speedup of `p` with `terms` applied: exactly `p.speedup` when every term is off.
pub fn corrected(p: &Projection, terms: &Terms) -> f64 {
    if terms.on_projection_is_none() {
        return p.speedup;
    }
    anchored(p.t_nd, corrected_t_d(p, terms), p.gamma, terms)
}

/// t_nd / t_d, or with `anchor` on T_n / (t_d + (T_n − t_nd)/γ): the projection moved onto the
/// program's median native time T_n, the difference counted as compute (module docs). A T_n that
/// is not a positive time leaves the projection as it is.
pub fn anchored(t_nd: f64, t_d: f64, gamma: f64, terms: &Terms) -> f64 {
    match terms.anchor_native_s {
        Some(t_n) if t_n.is_finite() && t_n > 0.0 && gamma > 0.0 => t_n / (t_d + (t_n - t_nd) / gamma),
        _ => t_nd / t_d,
    }
}

/// The start-up a run pays: `startup-own`'s when it is on, else its image's (`images`, when its
/// bytes are known), else `startup`'s, else 0.
pub fn startup_of(terms: &Terms) -> f64 {
    // A process forked inside the target whose image's sizes are unknown: `startup`'s empty
    // program, started the fork's way.
    let spawn = terms.images.map_or(0.0, |i| i.spawn_extra());
    terms
        .startup_own_s
        .or_else(|| terms.images.and_then(|i| i.seconds()))
        .or(terms.startup_s.map(|s| s + spawn))
        .unwrap_or(0.0)
}

/// The delegated run's time t_d with `terms` applied (startup, wakeup, touch and memcalls added, overlap and the
/// cache's spared compute taken off, then `share`'s stretch 1 / (1 − u)); `p.t_d` when no term that
/// acts on one projection is on.
pub fn corrected_t_d(p: &Projection, terms: &Terms) -> f64 {
    if terms.on_projection_is_none() {
        return p.t_d;
    }
    let startup = startup_of(terms);
    let wakeup = terms.wakeup_s.unwrap_or(0.0) * p.delegated_calls as f64;
    let touch = terms.touch.map_or(0.0, |t| t.seconds_with(terms.at_map.as_ref()));
    let mem = terms.memcalls.map_or(0.0, |m| m.seconds());
    let overlap = terms.overlap.map_or(0.0, |w| spare::overlap_s(p, &w));
    let cache = terms
        .cache
        .map_or(0.0, |c| spare::cache_saving_s(p, &c) / p.gamma);
    let u = terms.share.unwrap_or(0.0).clamp(0.0, 0.999);
    (p.t_d + startup + wakeup + touch + mem - overlap - cache) / (1.0 - u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{refined, Call, Params, Workload};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// `--terms none` reproduces the paper's refined model bit for bit.
        #[test]
        fn issue_15_terms_none_is_the_papers_model(
            c in 1e-6f64..10.0,
            calls in proptest::collection::vec((1u64..100_000, 0.0f64..1.0), 1..8),
            gamma in 0.25f64..8.0,
            fc in 0.0f64..1e-3,
            delegate_mask in 0u32..256,
        ) {
            let w = Workload {
                c,
                calls: calls
                    .iter()
                    .enumerate()
                    .map(|(i, &(n, g))| Call { name: format!("call{i}"), n, g })
                    .collect(),
            };
            let d: BTreeSet<String> = (0..calls.len())
                .filter(|i| delegate_mask & (1 << i) != 0)
                .map(|i| format!("call{i}"))
                .collect();
            let p = refined(&w, &d, &Params::new(gamma, fc)).expect("valid inputs");
            prop_assert_eq!(corrected(&p, &Terms::none()).to_bits(), p.speedup.to_bits());
        }

        /// Each term off — or on with a value that changes nothing (0 s, ω = 0, ρ = 0) — gives the
        /// paper's refined model bit for bit; `procs` alone acts on a tree, not on one projection.
        #[test]
        fn issue_15_each_term_off_or_zero_is_the_papers_model(
            c in 1e-6f64..10.0,
            calls in proptest::collection::vec((1u64..100_000, 0.0f64..1.0), 1..8),
            gamma in 0.25f64..8.0,
            fc in 0.0f64..1e-3,
            delegate_mask in 0u32..256,
            value in 1e-7f64..1e-2,
            omega in -1.0f64..1.0,
        ) {
            let names = ["read", "write", "wait4", "openat", "getppid", "fstat", "close", "mmap"];
            let w = Workload {
                c,
                calls: calls
                    .iter()
                    .enumerate()
                    .map(|(i, &(n, g))| Call { name: names[i].to_string(), n, g })
                    .collect(),
            };
            let d: BTreeSet<String> = (0..calls.len())
                .filter(|i| delegate_mask & (1 << i) != 0)
                .map(|i| names[i].to_string())
                .collect();
            let p = refined(&w, &d, &Params::new(gamma, fc)).expect("valid inputs");
            let on = Terms {
                startup_s: Some(value),
                startup_own_s: Some(2.0 * value),
                wakeup_s: Some(value),
                overlap: Some(ByClass { data_in: omega, data_out: omega, other: omega }),
                cache: Some(Cache {
                    per_call_s: value * omega,
                    rho: ByClass { data_in: omega, data_out: omega, other: omega },
                    gain_high: 2.0,
                    gain_low: 0.5,
                    chase_s: value,
                }),
                procs: true,
                share: Some(0.5),
                anchor_native_s: Some(3.0 * p.t_nd),
                touch: Some(Touch { pages: 1e4 * value, per_page_s: value }),
                memcalls: Some(MemCalls {
                    mmap: MemCall { calls: 30.0, bytes: 1e7, per_call_s: value, per_byte_s: value * 1e-6 },
                    ..MemCalls::default()
                }),
                images: Some(Images {
                    price: ImagePrice { fixed_s: value, per_loaded_byte_s: value * 1e-7, per_exec_byte_s: value * 1e-7, per_library_byte_s: 0.0, spawn_s: value },
                    bytes: Some(ImageBytes { loaded: 3e7, exec: 2e7, libraries: 1e6 }),
                    spawned: true,
                }),
                at_map: Some(AtMapTouch { pages: 5e3 * value, touchable: 6e3 * value, populate_s: value, touch_s: -0.1 * value }),
            };
            let paper = p.speedup.to_bits();
            for t in Term::ALL {
                // That term alone, off: the paper.
                let off = on.only(t).without(t);
                prop_assert!(off.is_none());
                prop_assert_eq!(corrected(&p, &off).to_bits(), paper, "{} off", t.name());
            }
            let zero = Terms {
                startup_s: Some(0.0),
                startup_own_s: Some(0.0),
                wakeup_s: Some(0.0),
                overlap: Some(ByClass::default()),
                cache: Some(Cache { per_call_s: 0.0, rho: ByClass::default(), gain_high: 2.0, gain_low: 0.5, chase_s: 1e-4 }),
                procs: true,
                share: Some(0.0),
                // T_n equal to the profiled t_nd: nothing to move.
                anchor_native_s: Some(p.t_nd),
                touch: Some(Touch { pages: 0.0, per_page_s: value }),
                // No memory calls in the profile: nothing to price.
                memcalls: Some(MemCalls {
                    mmap: MemCall { calls: 0.0, bytes: 0.0, per_call_s: value, per_byte_s: value },
                    ..MemCalls::default()
                }),
                // A free image: nothing to add.
                images: Some(Images {
                    price: ImagePrice::default(),
                    bytes: Some(ImageBytes { loaded: 3e7, exec: 2e7, libraries: 1e6 }),
                    spawned: true,
                }),
                // Nothing populated at map time: `touch` as it was (and alone, nothing).
                at_map: Some(AtMapTouch { pages: 0.0, touchable: 0.0, populate_s: value, touch_s: value }),
            };
            for t in Term::ALL {
                prop_assert_eq!(corrected(&p, &zero.only(t)).to_bits(), paper, "{} at 0", t.name());
            }
            prop_assert_eq!(corrected(&p, &zero).to_bits(), paper, "all at 0");
        }
    }

    #[test]
    fn issue_15_startup_is_added_once_and_wakeup_per_delegated_call() {
        let w = Workload {
            c: 1.0,
            calls: vec![Call {
                name: "write".into(),
                n: 1000,
                g: 0.0,
            }],
        };
        let d: BTreeSet<String> = ["write".to_string()].into();
        let p = refined(&w, &d, &Params::new(1.0, 10e-6)).expect("projects");
        let s = corrected(
            &p,
            &Terms {
                startup_s: Some(0.05),
                ..Terms::none()
            },
        );
        assert!((s - 1.0 / 1.07).abs() < 1e-12, "{s}");
        let s = corrected(
            &p,
            &Terms {
                wakeup_s: Some(100e-6),
                ..Terms::none()
            },
        );
        assert!((s - 1.0 / 1.12).abs() < 1e-12, "{s}");
    }

    proptest! {
        /// `startup-own` replaces `startup`'s value (not added to it): t_d + T_own whatever
        /// `startup` measured, and off it leaves `startup` alone.
        #[test]
        fn issue_15_startup_own_replaces_startup(
            c in 1e-3f64..10.0,
            n in 1u64..100_000,
            fc in 0.0f64..1e-4,
            true_s in 0.0f64..0.2,
            own_s in 0.0f64..0.5,
        ) {
            let w = Workload { c, calls: vec![Call { name: "write".into(), n, g: 0.1 }] };
            let d: BTreeSet<String> = ["write".to_string()].into();
            let p = refined(&w, &d, &Params::new(1.0, fc)).expect("projects");
            let both = Terms { startup_s: Some(true_s), startup_own_s: Some(own_s), ..Terms::none() };
            let want = p.t_nd / (p.t_d + own_s);
            prop_assert!((corrected(&p, &both) - want).abs() <= 1e-12 * want);
            prop_assert_eq!(corrected(&p, &both.only(Term::StartupOwn)).to_bits(), corrected(&p, &both).to_bits());
            let only_true = Terms { startup_own_s: None, ..both };
            let want = p.t_nd / (p.t_d + true_s);
            prop_assert!((corrected(&p, &only_true) - want).abs() <= 1e-12 * want);
        }
    }

    #[test]
    fn issue_11_share_stretches_the_delegated_run() {
        let w = Workload {
            c: 1.0,
            calls: vec![Call {
                name: "pread64".into(),
                n: 1000,
                g: 0.0,
            }],
        };
        let d: BTreeSet<String> = ["pread64".to_string()].into();
        let p = refined(&w, &d, &Params::new(1.0, 0.0)).expect("projects");
        let t = corrected_t_d(
            &p,
            &Terms {
                share: Some(0.5),
                ..Terms::none()
            },
        );
        assert!((t - 2.0).abs() < 1e-12, "{t}");
    }

    /// C = 10 ms, 100 writes of 10 µs, all delegated at f_c = 50 µs: t_nd = 11 ms, t_d = 21 ms.
    fn ten_ms_and_100_writes() -> crate::Projection {
        let w = Workload {
            c: 0.010,
            calls: vec![Call {
                name: "write".into(),
                n: 100,
                g: 0.001,
            }],
        };
        let d: BTreeSet<String> = ["write".to_string()].into();
        refined(&w, &d, &Params::new(1.0, 50e-6)).expect("projects")
    }

    #[test]
    fn issue_15_anchor_moves_the_projection_onto_the_measured_native_time() {
        // Natively the program took 7 ms: 4 ms less compute, kept by the delegated run.
        let p = ten_ms_and_100_writes();
        assert!(
            (p.t_nd - 0.011).abs() < 1e-12 && (p.t_d - 0.021).abs() < 1e-12,
            "{p:?}"
        );
        let t = Terms {
            anchor_native_s: Some(0.007),
            ..Terms::none()
        };
        let s = corrected(&p, &t);
        assert!((s - 0.007 / 0.017).abs() < 1e-12, "{s}");
        // Not a time: left as projected.
        let bad = Terms {
            anchor_native_s: Some(f64::NAN),
            ..Terms::none()
        };
        assert_eq!(corrected(&p, &bad).to_bits(), p.speedup.to_bits());
    }

    #[test]
    fn issue_15_touch_adds_the_pages_beyond_the_empty_run_at_their_price() {
        let p = ten_ms_and_100_writes();
        // 2 000 pages at 3 µs more each: 6 ms more.
        let t = Terms {
            touch: Some(Touch {
                pages: 2000.0,
                per_page_s: 3e-6,
            }),
            ..Terms::none()
        };
        let s = corrected(&p, &t);
        assert!((s - 0.011 / 0.027).abs() < 1e-12, "{s}");
        // Fewer pages than the empty run's (noise in the counts), or none counted: nothing added.
        for pages in [-50.0, f64::NAN] {
            let t = Terms {
                touch: Some(Touch {
                    pages,
                    per_page_s: 3e-6,
                }),
                ..Terms::none()
            };
            assert_eq!(corrected(&p, &t).to_bits(), p.speedup.to_bits(), "{pages}");
        }
        assert_eq!(parse_terms("touch").expect("one"), [Term::Touch]);
    }

    #[test]
    fn issue_15_at_map_splits_the_pages_populated_at_map_time_from_the_first_touches() {
        let p = ten_ms_and_100_writes();
        // 2 000 pages touched, 1 500 of them populated at map time: 1 500 × 2 µs to populate,
        // 1 500 touches at 0.8 µs less than natively, 500 first touches at 3.4 µs more.
        let at_map = AtMapTouch {
            pages: 1500.0,
            touchable: 1500.0,
            populate_s: 2e-6,
            touch_s: -0.8e-6,
        };
        let t = Touch {
            pages: 2000.0,
            per_page_s: 3.4e-6,
        };
        let want = 1500.0 * 2e-6 - 1500.0 * 0.8e-6 + 500.0 * 3.4e-6;
        assert!((t.seconds_with(Some(&at_map)) - want).abs() < 1e-15);
        let on = Terms {
            touch: Some(t),
            at_map: Some(at_map),
            ..Terms::none()
        };
        assert!((corrected(&p, &on) - 0.011 / (0.021 + want)).abs() < 1e-12);
        // `at-map` off: every page at the first-touch price, as before the split; alone (without
        // `touch`): nothing.
        let today = 0.011 / (0.021 + 2000.0 * 3.4e-6);
        assert!((corrected(&p, &on.without(Term::AtMap)) - today).abs() < 1e-12);
        assert_eq!(
            corrected(&p, &on.only(Term::AtMap)).to_bits(),
            p.speedup.to_bits()
        );
        // More populated than touched (a buffer mapped whole, touched in part): every populated
        // page pays its populating, the touched ones the touch after it, none the first touch.
        let part = Touch { pages: 1000.0, ..t };
        let want = 1500.0 * 2e-6 - 1000.0 * 0.8e-6;
        assert!((part.seconds_with(Some(&at_map)) - want).abs() < 1e-15);
        // The empty run populated the same heads (their populating is in its start-up) but
        // touched few of them: no populating to add, the touches that land there at T_after.
        let same = AtMapTouch {
            pages: 0.0,
            touchable: 1200.0,
            ..at_map
        };
        let want = -1200.0 * 0.8e-6 + 800.0 * 3.4e-6;
        assert!((t.seconds_with(Some(&same)) - want).abs() < 1e-15);
        // Nothing populated: the first-touch price, bit for bit.
        let none = AtMapTouch {
            pages: 0.0,
            touchable: 0.0,
            ..at_map
        };
        assert_eq!(t.seconds_with(Some(&none)).to_bits(), t.seconds().to_bits());
        assert_eq!(t.seconds(), 2000.0 * 3.4e-6);
        // A populated touch far below native never makes the term negative; a NaN count of
        // populated pages counts 0.
        let cheap = AtMapTouch {
            pages: 100.0,
            touchable: 100.0,
            populate_s: 0.0,
            touch_s: -5e-6,
        };
        assert_eq!(Touch { pages: 100.0, ..t }.seconds_with(Some(&cheap)), 0.0);
        let nan = AtMapTouch {
            pages: f64::NAN,
            touchable: f64::NAN,
            ..at_map
        };
        assert_eq!(t.seconds_with(Some(&nan)).to_bits(), t.seconds().to_bits());
        assert_eq!(
            parse_terms("touch,at-map").expect("two"),
            [Term::Touch, Term::AtMap]
        );
        assert_eq!(Term::AtMap.name(), "at-map");
    }

    #[test]
    fn issue_15_memcalls_adds_each_kinds_calls_and_bytes_at_their_price() {
        let p = ten_ms_and_100_writes();
        // 3 mremaps of 3.5 MiB in all at 1 ms a call and 2 ns a byte more, 30 mmaps at 50 µs:
        // 3 ms + 7.34 ms + 1.5 ms.
        let m = MemCalls {
            mmap: MemCall {
                calls: 30.0,
                bytes: 9.0 * 1048576.0,
                per_call_s: 50e-6,
                per_byte_s: 0.0,
            },
            mremap: MemCall {
                calls: 3.0,
                bytes: 3.5 * 1048576.0,
                per_call_s: 1e-3,
                per_byte_s: 2e-9,
            },
            ..MemCalls::default()
        };
        let want_s = 30.0 * 50e-6 + 3.0 * 1e-3 + 3.5 * 1048576.0 * 2e-9;
        assert!((m.seconds() - want_s).abs() < 1e-15, "{}", m.seconds());
        let t = Terms {
            memcalls: Some(m),
            ..Terms::none()
        };
        let s = corrected(&p, &t);
        assert!((s - 0.011 / (0.021 + want_s)).abs() < 1e-12, "{s}");
        // A kind priced below native (noise) adds nothing, and does not cancel another kind's cost.
        let below = MemCalls {
            munmap: MemCall {
                calls: 10.0,
                bytes: 1e6,
                per_call_s: -1e-3,
                per_byte_s: 0.0,
            },
            ..m
        };
        assert_eq!(below.seconds().to_bits(), m.seconds().to_bits());
        let nan = MemCall {
            calls: f64::NAN,
            ..m.mmap
        };
        assert_eq!(nan.seconds(), 0.0);
        assert_eq!(parse_terms("memcalls").expect("one"), [Term::Memcalls]);
    }

    #[test]
    fn issue_15_images_replaces_startup_s_true_and_yields_to_startup_own() {
        let p = ten_ms_and_100_writes();
        let images = Images {
            price: ImagePrice {
                fixed_s: 4e-3,
                per_loaded_byte_s: 1e-9,
                per_exec_byte_s: 0.5e-9,
                per_library_byte_s: 0.0,
                spawn_s: 0.0,
            },
            bytes: Some(ImageBytes {
                loaded: 2e6,
                exec: 4e6,
                libraries: 0.0,
            }),
            spawned: false,
        };
        // 4 ms + 2 ms + 2 ms = 8 ms instead of `true`'s 9 ms.
        let t = Terms {
            startup_s: Some(9e-3),
            images: Some(images),
            ..Terms::none()
        };
        assert!((startup_of(&t) - 8e-3).abs() < 1e-15, "{}", startup_of(&t));
        let s = corrected(&p, &t);
        assert!((s - 0.011 / 0.029).abs() < 1e-12, "{s}");
        assert_eq!(corrected(&p, &t.only(Term::Images)).to_bits(), s.to_bits());
        // Sizes unknown: `startup`'s `true` stands.
        let unknown = Terms {
            images: Some(images.with_bytes(None)),
            ..t.clone()
        };
        assert!((corrected(&p, &unknown) - 0.011 / 0.030).abs() < 1e-12);
        // `startup-own` (measured on the workload's own program) stands for the run.
        let own = Terms {
            startup_own_s: Some(20e-3),
            ..t
        };
        assert!((corrected(&p, &own) - 0.011 / 0.041).abs() < 1e-12);
        assert_eq!(parse_terms("images").expect("one"), [Term::Images]);
        assert_eq!(Term::Images.name(), "images");
    }

    #[test]
    fn issue_15_terms_parse_by_name_and_unknown_ones_are_named() {
        assert_eq!(parse_terms("none").expect("none"), []);
        assert_eq!(parse_terms("all").expect("all"), Term::ALL);
        assert_eq!(
            parse_terms("overlap,cache,procs").expect("three"),
            [Term::Overlap, Term::Cache, Term::Procs]
        );
        assert_eq!(parse_terms("wakeup").expect("one"), [Term::Wakeup]);
        assert_eq!(parse_terms("startup").expect("one"), [Term::Startup]);
        assert_eq!(parse_terms("startup-own").expect("one"), [Term::StartupOwn]);
        assert_eq!(Term::StartupOwn.name(), "startup-own");
        let e = parse_terms("startup,tlb").expect_err("unknown").to_string();
        assert!(e.contains("'tlb'") && e.contains("startup"), "{e}");
    }
}
