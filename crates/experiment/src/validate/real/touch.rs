//! The `touch` term's microbenchmark (issue #15): what a first touch of a 4 KiB page costs the LWK
//! more than natively — `csrc/touchbench.c` (shared with `bench multiverse`, which prices its
//! first touches with it), first writes to [`TOUCH_MIB`] MiB of fresh anonymous memory — and,
//! since the LWK populates new memory at map time by default, what a page populated in its
//! mapping call costs: the call's time per page with `--populate-at-map` on less off, and a touch
//! of the populated page (touchbench.c's `populate` phase: chunks of 1 MiB + 4 KiB mapped one by
//! one, then written). Natively on the compute CPUs and in `multios lwk run --policy all` with
//! at-map off and on, [`TOUCH_ROUNDS`] rounds, the three sides' order rotated each round,
//! medians. The pages a workload touches come from its own native runs
//! (`super::lwk_pairs_counted`), never from the LWK's; the pages populated at map time from its
//! profile's anonymous ranges ([`at_map_pages`]).

use super::Config;
use crate::ExperimentError;
use multios_model::{AtMapTouch, Touch};
use std::path::Path;
use std::process::{Command, Stdio};

/// The `touch` microbenchmark's source (`csrc/touchbench.c`, shared with `bench multiverse`), the
/// memory it touches and its rounds.
pub const TOUCH_SOURCE: &str = include_str!("../../../csrc/touchbench.c");
pub const TOUCH_MIB: u64 = 32;
pub const TOUCH_ROUNDS: usize = 3;

/// One touchbench.c run with its `populate` phase (ns per 4 KiB page).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TouchRun {
    /// A first write to fresh memory.
    pub first: f64,
    /// The mmap calls of the populate phase, per page mapped.
    pub map: f64,
    /// The first write to each page of those chunks.
    pub touch: f64,
}

/// The medians of each side: native, the LWK with at-map off, the LWK with it on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TouchMedians {
    pub native: TouchRun,
    pub lwk_off: TouchRun,
    pub lwk_on: TouchRun,
}

impl TouchMedians {
    /// The term's prices (pages left at 0 for the workload to fill): T_touch = the LWK's first
    /// touch (at-map off) less native's, at least 0 (as before the split); T_pop = the LWK's
    /// mapping call per page with at-map on less off, at least 0; T_after = a touch of a
    /// populated page in the LWK less a native first touch (may be below 0).
    pub fn prices(&self) -> (Touch, AtMapTouch) {
        (
            Touch {
                pages: 0.0,
                per_page_s: ((self.lwk_off.first - self.native.first) * 1e-9).max(0.0),
            },
            AtMapTouch {
                pages: 0.0,
                touchable: 0.0,
                populate_s: ((self.lwk_on.map - self.lwk_off.map) * 1e-9).max(0.0),
                touch_s: (self.lwk_on.touch - self.native.first) * 1e-9,
            },
        )
    }
}

/// touchbench.c with its populate phase natively, in the LWK with at-map off and on
/// ([`TOUCH_ROUNDS`] rounds, order rotated): the medians of each side.
pub fn touch_lwk(cfg: &Config, exe: &Path, scratch: &Path) -> Result<TouchMedians, ExperimentError> {
    let argv = vec![
        exe.display().to_string(),
        TOUCH_MIB.to_string(),
        "populate".to_string(),
    ];
    let sides = [
        Side::Native,
        Side::Lwk { at_map: false },
        Side::Lwk { at_map: true },
    ];
    let runs = rotate(cfg, &argv, scratch, "touch", TOUCH_ROUNDS, &sides, |text| {
        parse_touch_run(text).ok_or("first_touch_ns or populate_map_ns line")
    })?;
    let med = |v: &[TouchRun], f: fn(&TouchRun) -> f64| {
        crate::stats::median(&v.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    let side = |v: &[TouchRun]| TouchRun {
        first: med(v, |r| r.first),
        map: med(v, |r| r.map),
        touch: med(v, |r| r.touch),
    };
    Ok(TouchMedians {
        native: side(&runs[0][..]),
        lwk_off: side(&runs[1][..]),
        lwk_on: side(&runs[2][..]),
    })
}

/// Where a microbenchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Natively on the compute CPUs.
    Native,
    /// In `multios lwk run --policy all`, with `--populate-at-map` off or at its default.
    Lwk { at_map: bool },
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Native => "native",
            Side::Lwk { at_map: false } => "lwk",
            Side::Lwk { at_map: true } => "lwk at-map",
        }
    }
}

/// The pages the LWK populates at map time for a profile: per process Σ min(length, `cap`) over
/// its new anonymous ranges, at most `budget` bytes a process, in 4 KiB pages; `None` when the
/// profile does not record the ranges (schema < 6, a backend or a run without `--per-process`).
pub fn populated_pages(prof: &multios_profile::Profile, cap: u64, budget: u64) -> Option<f64> {
    prof.has_anon_maps().then(|| {
        prof.processes
            .iter()
            .filter_map(|q| q.anon_maps.as_ref())
            .map(|a| a.populated_bytes(cap).min(budget as f64) / 4096.0)
            .sum()
    })
}

/// `at-map`'s counts for `prof` against `base` (the empty run whose start-up is counted, with
/// `base_faults` native minor faults): (P_pop, P_in) — the pages populated beyond the empty
/// run's, and the populated pages the workload's touches beyond the empty run's can land in
/// (all of its own, less as many of the empty run's as it may have touched: at most its
/// faults), at least P_pop. `None` when `prof` does not record its ranges.
pub fn at_map_pages(
    prof: &multios_profile::Profile,
    base: Option<&multios_profile::Profile>,
    base_faults: f64,
    cap: u64,
    budget: u64,
) -> Option<(f64, f64)> {
    let full = populated_pages(prof, cap, budget)?;
    let empty = base.and_then(|b| populated_pages(b, cap, budget)).unwrap_or(0.0);
    let pages = (full - empty).max(0.0);
    let touched_before = empty.min(base_faults.max(0.0));
    Some((pages, (full - touched_before).max(pages)))
}

/// Sets `at-map`'s counts ([`at_map_pages`], the LWK's cap and budget as `lwk run` will use them)
/// when `touch` and `at-map` are on; without the ranges, or with at-map off, `at-map` is turned
/// off (`touch` then prices every page as a first touch, as before the split) and a note says so.
pub fn fill_terms(
    terms: &mut multios_model::Terms,
    prof: &multios_profile::Profile,
    base: Option<&multios_profile::Profile>,
    base_faults: f64,
    notes: &mut Vec<String>,
) {
    if terms.touch.is_none() {
        return;
    }
    let Some(m) = terms.at_map.as_mut() else {
        return;
    };
    let cap = multios_lwk::atmap::AtMap::per_range_from_env(multios_lwk::atmap::DEFAULT_PER_RANGE);
    let budget = cap.saturating_mul(multios_lwk::atmap::BUDGET_RANGES);
    let note = match (cap, at_map_pages(prof, base, base_faults, cap, budget)) {
        (0, _) => "at-map: populate-at-map is off (MULTIOS_LWK_POPULATE_SYNC): touch prices every page as a first touch",
        (_, None) => "at-map: the profile records no anonymous ranges (processes[].anon_maps, schema 6: `multios profile --per-process`): touch prices every page as a first touch, as if nothing were populated at map time",
        (_, Some((pages, touchable))) => {
            m.pages = pages;
            m.touchable = touchable;
            return;
        }
    };
    terms.at_map = None;
    if !notes.iter().any(|n| n == note) {
        notes.push(note.to_string());
    }
}

/// A microbenchmark `argv` natively on the compute CPUs and in `multios lwk run --policy all
/// --populate-at-map off --populate-next off`, `rounds` runs a side in alternating order (native
/// first in even rounds), each in a fresh directory under `scratch`: what `parse` reads from each
/// run's output, per side. A run that fails or prints nothing `parse` takes is an error naming
/// `label` and what was missing.
pub fn alternate<T>(
    cfg: &Config,
    argv: &[String],
    scratch: &Path,
    label: &str,
    rounds: usize,
    parse: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<(Vec<T>, Vec<T>), ExperimentError> {
    let sides = [Side::Native, Side::Lwk { at_map: false }];
    let mut runs = rotate(cfg, argv, scratch, label, rounds, &sides, parse)?.into_iter();
    let native = runs.next().unwrap_or_default();
    let lwk = runs.next().unwrap_or_default();
    Ok((native, lwk))
}

/// [`alternate`] over any `sides`, their order rotated by one each round: what `parse` reads
/// from each run, per side (in the order of `sides`).
pub fn rotate<T>(
    cfg: &Config,
    argv: &[String],
    scratch: &Path,
    label: &str,
    rounds: usize,
    sides: &[Side],
    parse: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<Vec<Vec<T>>, ExperimentError> {
    let mut out: Vec<Vec<T>> = sides.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for k in 0..sides.len() {
            let i = (k + round) % sides.len();
            let side = sides[i];
            let dir = scratch.join(format!("{label}-{round}-{i}"));
            std::fs::create_dir_all(&dir)
                .map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
            let mut cmd = match side {
                Side::Lwk { at_map } => {
                    let mut c = Command::new(&cfg.exe);
                    c.args(["lwk", "run", "--policy", "all"]);
                    // `memcalls`' prices and `touch`'s first touch are a call's and a first
                    // touch's own cost: with the LWK populating new memory in the mapping call
                    // (its default since the seventh session) the mmap would carry the touches'
                    // work and the touches none. `touch` measures the populating apart, with
                    // at-map on (its default cap), beside. Nor does the proxy make the next
                    // mappings' pages ahead (`--populate-next`, off by default, kept off here
                    // should the default change): the mmap would find them made.
                    c.args(["--populate-next", "off"]);
                    if !at_map {
                        c.args(["--populate-at-map", "off"]);
                    }
                    c.arg("--").args(argv);
                    c
                }
                Side::Native => {
                    let mut c = Command::new("taskset");
                    c.arg("-c").arg(cfg.compute.to_string()).args(argv);
                    c
                }
            };
            let o = cmd
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .map_err(ExperimentError::io(format!("running the {label} microbenchmark")))?;
            std::fs::remove_dir_all(&dir).ok();
            let text = String::from_utf8_lossy(&o.stdout);
            let name = side.name();
            let v = match parse(&text) {
                Ok(v) if o.status.success() => v,
                Ok(_) => {
                    return Err(ExperimentError::Run(format!(
                        "the {label} microbenchmark ({name}) failed ({}): {}",
                        o.status,
                        text.trim()
                    )))
                }
                Err(what) => {
                    return Err(ExperimentError::Run(format!(
                        "the {label} microbenchmark ({name}) printed no {what}: {}",
                        text.trim()
                    )))
                }
            };
            out[i].push(v);
        }
    }
    Ok(out)
}

/// touchbench.c's `first_touch_ns N …` line: N.
pub fn parse_touch(text: &str) -> Option<f64> {
    field(text, "first_touch_ns")
}

/// The number after `key` in `text`.
fn field(text: &str, key: &str) -> Option<f64> {
    let mut w = text.split_whitespace();
    w.by_ref().find(|t| *t == key)?;
    w.next()?.parse().ok()
}

/// touchbench.c's two lines with its `populate` phase.
pub fn parse_touch_run(text: &str) -> Option<TouchRun> {
    Some(TouchRun {
        first: field(text, "first_touch_ns")?,
        map: field(text, "populate_map_ns")?,
        touch: field(text, "populated_touch_ns")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_touchbench_lines_parse() {
        assert_eq!(
            parse_touch("first_touch_ns 873 shadow_fault_ns 2100 warm_ns 3 pages 8192\n"),
            Some(873.0)
        );
        assert_eq!(parse_touch("nothing"), None);
        let both = "first_touch_ns 2100 shadow_fault_ns 900 warm_ns 3 kvm_fault_ns 800 pages 8192\n\
                    populate_map_ns 1850.5 populated_touch_ns 1100 chunk_pages 257 chunks 32\n";
        assert_eq!(
            parse_touch_run(both),
            Some(TouchRun {
                first: 2100.0,
                map: 1850.5,
                touch: 1100.0
            })
        );
        assert_eq!(parse_touch_run("first_touch_ns 2100 pages 8192\n"), None);
    }

    /// Medians like a quiet run's: native, the LWK with at-map off and on (ns a page).
    fn sample_medians() -> TouchMedians {
        TouchMedians {
            native: TouchRun {
                first: 2100.0,
                map: 10.0,
                touch: 2200.0,
            },
            lwk_off: TouchRun {
                first: 5500.0,
                map: 250.0,
                touch: 5400.0,
            },
            lwk_on: TouchRun {
                first: 4000.0,
                map: 2250.0,
                touch: 1200.0,
            },
        }
    }

    #[test]
    fn issue_15_touch_prices_split_the_populated_pages_from_the_first_touches() {
        let m = sample_medians();
        let (t, a) = m.prices();
        let close = |x: f64, y: f64| (x - y).abs() < 1e-15;
        assert!(close(t.per_page_s, 3.4e-6), "{t:?}");
        assert!(close(a.populate_s, 2.0e-6), "{a:?}");
        assert!(close(a.touch_s, -0.9e-6), "{a:?}");
        // The LWK's first touch measured below native (noise): no negative premium, as before;
        // at-map's call measured cheaper than without it: no negative populating.
        let noisy = TouchMedians {
            lwk_off: TouchRun {
                first: 2000.0,
                ..m.lwk_off
            },
            lwk_on: TouchRun {
                map: 100.0,
                ..m.lwk_on
            },
            ..m
        };
        let (t, a) = noisy.prices();
        assert_eq!((t.per_page_s, a.populate_s), (0.0, 0.0));
    }

    fn profile_with(anon: &[&[u64]]) -> multios_profile::Profile {
        let mut p = multios_profile::Profile::new(vec!["xz".into()], "multios-ebpf", "high");
        for (i, lens) in anon.iter().enumerate() {
            let mut a = multios_profile::AnonMaps::default();
            for &l in *lens {
                a.record(l);
            }
            p.processes.push(multios_profile::ProcessStats {
                pid: 100 + i as u32,
                name: "xz".into(),
                anon_maps: Some(a),
                ..Default::default()
            });
        }
        p
    }

    #[test]
    fn issue_15_populated_pages_are_each_range_s_head_per_process_less_the_empty_run_s() {
        let cap = 4u64 << 20;
        // xz: a 64 MiB dictionary (its first 4 MiB), two 1 MiB buffers, 132 KiB of heap; a
        // child with 12 MiB in 3 ranges of 4 MiB under a budget of 8 MiB.
        let w = profile_with(&[
            &[64 << 20, 1 << 20, 1 << 20, 132 << 10],
            &[4 << 20, 4 << 20, 4 << 20],
        ]);
        let base = profile_with(&[&[132 << 10]]);
        let (pages, touchable) = at_map_pages(&w, Some(&base), 100.0, cap, 8 << 20).expect("recorded");
        let full = ((6u64 << 20) + (8 << 20) + (132 << 10)) as f64 / 4096.0;
        assert_eq!(pages, full - 33.0);
        // The empty run's 33 populated pages: at most all of them touched (100 faults).
        assert_eq!(touchable, full - 33.0);
        // sort: the empty run maps the same head (8.5 MB buffer, 4 MiB populated) but touches
        // only 150 pages: nothing more to populate, most of the head left for the touches.
        let sort = profile_with(&[&[545 << 20]]);
        let empty = profile_with(&[&[8 << 20]]);
        assert_eq!(
            at_map_pages(&sort, Some(&empty), 150.0, cap, 1 << 30),
            Some((0.0, 1024.0 - 150.0))
        );
        // No ranges recorded (an older profile): no split.
        let old = multios_profile::Profile::new(vec!["xz".into()], "multios-ebpf", "high");
        assert_eq!(at_map_pages(&old, None, 0.0, cap, 8 << 20), None);
        // The empty run larger than the workload: 0, not below.
        assert_eq!(
            at_map_pages(&base, Some(&w), 0.0, cap, 1 << 30).map(|p| p.0),
            Some(0.0)
        );
    }

    #[test]
    fn issue_15_a_profile_without_ranges_falls_back_to_the_first_touch_price_and_says_so() {
        let (touch, at_map) = sample_medians().prices();
        let on = multios_model::Terms {
            touch: Some(touch),
            at_map: Some(at_map),
            ..multios_model::Terms::none()
        };
        let mut terms = on.clone();
        let mut notes = Vec::new();
        let old = multios_profile::Profile::new(vec!["xz".into()], "multios-ebpf", "high");
        fill_terms(&mut terms, &old, None, 0.0, &mut notes);
        assert_eq!(terms.at_map, None);
        assert_eq!(terms.touch, Some(touch));
        assert!(notes.iter().any(|n| n.contains("anon_maps")), "{notes:?}");
        // With ranges: the split kept and its pages set (the default cap, unless the environment
        // turns at-map off for the LWK runs as well).
        if std::env::var_os("MULTIOS_LWK_POPULATE_SYNC").is_none() {
            let mut terms = on.clone();
            fill_terms(&mut terms, &profile_with(&[&[1 << 20]]), None, 0.0, &mut notes);
            assert_eq!(terms.at_map.map(|a| a.pages), Some(256.0));
        }
        // `touch` off: nothing to split, nothing noted.
        let mut terms = multios_model::Terms { touch: None, ..on };
        let mut notes = Vec::new();
        fill_terms(&mut terms, &old, None, 0.0, &mut notes);
        assert!(notes.is_empty() && terms.at_map == Some(at_map));
    }
}
