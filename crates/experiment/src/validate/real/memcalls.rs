//! The `memcalls` term (issue #15): the LWK serves mmap, munmap and mremap itself — bookkeeping,
//! zeroing, the host pages given back with MADV_DONTNEED, a moving mremap's copy — at a cost that
//! grows with the mapping, where the paper's model prices every local call at its native time.
//!
//! The price: `csrc/memcalls.c` at two lengths ([`MEMCALLS_KIB`]), natively on the compute CPUs
//! and in `multios lwk run --policy all`, [`MEMCALLS_ROUNDS`] runs a side in alternating order,
//! medians. Per kind (mmap of anonymous memory, mmap of a file, munmap, mremap), a line through
//! the two lengths gives a per-call and a per-byte cost on each side; the term's price is the
//! LWK's less native's ([`prices`]). The calls and their bytes come from the workload's profile
//! ([`fill`]: `memory_bytes`, recorded by the eBPF profiler), less those of the empty program
//! whose start-up `startup`/`startup-own` already counts (profiled too, [`base_profile`]) —
//! never from the LWK's runs.

use super::{Config, Workload};
use crate::ExperimentError;
use multios_model::{MemCall, MemCalls, Terms};
use std::path::Path;

/// The microbenchmark's source, the two lengths it is run at (KiB), its runs per side and length,
/// and the rounds inside each run.
pub const MEMCALLS_SOURCE: &str = include_str!("../../../csrc/memcalls.c");
pub const MEMCALLS_KIB: [u64; 2] = [64, 4096];
pub const MEMCALLS_ROUNDS: usize = 3;
pub const MEMCALLS_INNER: u32 = 5;

/// One run's medians per call, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemRun {
    pub kib: u64,
    pub mmap: f64,
    pub mremap: f64,
    pub munmap: f64,
    /// mmap of a file (private, read-only).
    pub fmmap: f64,
}

/// `memcalls kib K mmap_ns X mremap_ns Y munmap_ns Z fmmap_ns F …`.
pub fn parse_memcalls(text: &str) -> Option<MemRun> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let get = |key: &str| -> Option<f64> {
        let i = w.iter().position(|t| *t == key)?;
        w.get(i + 1)?.parse().ok()
    };
    w.first().filter(|t| **t == "memcalls")?;
    Some(MemRun {
        kib: get("kib")? as u64,
        mmap: get("mmap_ns")?,
        mremap: get("mremap_ns")?,
        munmap: get("munmap_ns")?,
        fmmap: get("fmmap_ns")?,
    })
}

/// The medians of each side at each length: `native[i]`, `lwk[i]` at `MEMCALLS_KIB[i]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemMedians {
    pub native: [MemRun; 2],
    pub lwk: [MemRun; 2],
}

/// The bytes each call of the microbenchmark names at `kib`: mmap its length, mremap its old
/// length, munmap the grown (twice) length, the file's mmap its length — what the profile records
/// for the same calls.
fn bench_bytes(kib: u64) -> [f64; 4] {
    let b = (kib << 10) as f64;
    [b, b, 2.0 * b, b]
}

/// Per kind (mmap, mremap, munmap, mmap of a file), the LWK's extra time per call over native's
/// at each length, ns.
fn extras(m: &MemMedians) -> [[f64; 4]; 2] {
    let kinds = |r: &MemRun| [r.mmap, r.mremap, r.munmap, r.fmmap];
    std::array::from_fn(|i| {
        let (n, l) = (kinds(&m.native[i]), kinds(&m.lwk[i]));
        std::array::from_fn(|k| l[k] - n[k])
    })
}

/// The term's prices: per kind, the line through the LWK's extra time over native's at the two
/// lengths — a per-call and a per-byte price — with the per-byte price at least 0 (a longer
/// call never costs the LWK less than a shorter one; a negative slope is noise, e.g. a native
/// munmap of 8 MiB that took 14 ms on a loaded machine) and the per-call price then what the
/// short length leaves (`calls` and `bytes` left at 0 for [`fill`]).
pub fn prices(m: &MemMedians) -> MemCalls {
    let [lo, hi] = extras(m);
    let (blo, bhi) = (bench_bytes(m.native[0].kib), bench_bytes(m.native[1].kib));
    let price = |k: usize| {
        let slope = ((hi[k] - lo[k]) / (bhi[k] - blo[k])).max(0.0);
        MemCall {
            calls: 0.0,
            bytes: 0.0,
            per_call_s: (lo[k] - slope * blo[k]) * 1e-9,
            per_byte_s: slope * 1e-9,
        }
    };
    MemCalls {
        mmap: price(0),
        mremap: price(1),
        munmap: price(2),
        mmap_file: price(3),
    }
}

/// The calls and bytes of a profile per kind: (calls, bytes) of anonymous mmaps, file mmaps,
/// munmaps and mremaps (old length); `None` for the bytes when it records no lengths.
fn counts(prof: &multios_profile::Profile) -> ([f64; 4], Option<[f64; 4]>) {
    let n = |name: &str| prof.syscall(name).map_or(0.0, |s| s.count as f64);
    let b = prof.memory_bytes;
    let file_calls = b.map_or(0.0, |b| b.mmap_file_calls as f64);
    let calls = [
        (n("mmap") - file_calls).max(0.0),
        file_calls,
        n("munmap"),
        n("mremap"),
    ];
    let bytes = b.map(|b| {
        [
            b.mmap.saturating_sub(b.mmap_file) as f64,
            b.mmap_file as f64,
            b.munmap as f64,
            b.mremap_old as f64,
        ]
    });
    (calls, bytes)
}

/// Sets the calls and bytes of `m` from the workload's profile less `base`'s (the empty program
/// whose start-up is counted; each kind at least 0): the counts of mmap (anonymous and of a file
/// apart), munmap and mremap, and `memory_bytes` (mmap and munmap length, mremap old length). A
/// profile without lengths (a backend that does not record them) gives 0 bytes and every mmap
/// as anonymous — the per-call price alone — and false is returned so that the caller notes it.
pub fn fill(
    m: &mut MemCalls,
    prof: &multios_profile::Profile,
    base: Option<&multios_profile::Profile>,
) -> bool {
    let (calls, bytes) = counts(prof);
    let (base_calls, base_bytes) = base.map_or(([0.0; 4], None), counts);
    let bytes_known = bytes.is_some();
    let bytes = bytes.unwrap_or_default();
    let base_bytes = base_bytes.unwrap_or_default();
    for (k, c) in [&mut m.mmap, &mut m.mmap_file, &mut m.munmap, &mut m.mremap]
        .into_iter()
        .enumerate()
    {
        c.calls = (calls[k] - base_calls[k]).max(0.0);
        c.bytes = (bytes[k] - base_bytes[k]).max(0.0);
    }
    bytes_known
}

/// The empty program whose start-up a point of `w` counts (its own `startup_argv` when
/// `startup-own` is on and was measured, else `true` when `startup` is on, else none), profiled
/// like the workload ([`super::profile`]): its memory calls are already in the start-up term.
pub fn base_profile(
    cfg: &Config,
    w: &Workload,
    terms: &Terms,
    scratch: &Path,
) -> Result<Option<multios_profile::Profile>, ExperimentError> {
    let argv = match (&w.startup_argv, terms.startup_own_s, terms.startup_s) {
        (Some(a), Some(_), _) => a.clone(),
        (_, _, Some(_)) => vec!["true".to_string()],
        _ => return Ok(None),
    };
    let empty = Workload {
        name: format!("{}-empty", w.name),
        argv: argv.into_iter().map(Into::into).collect(),
        workdir: w.workdir.clone(),
        ..Workload::command("", Vec::<String>::new())
    };
    let (p, _, dir) = super::profile(cfg, &empty, scratch)?;
    if let Some(d) = dir {
        std::fs::remove_dir_all(d).ok();
    }
    Ok(Some(p))
}

/// The empty run's profile when a term that subtracts it is on (`memcalls`, `touch`):
/// [`base_profile`], else `None`.
pub fn base_for_terms(
    cfg: &Config,
    w: &Workload,
    terms: &Terms,
    scratch: &Path,
) -> Result<Option<multios_profile::Profile>, ExperimentError> {
    if terms.memcalls.is_none() && terms.touch.is_none() {
        return Ok(None);
    }
    base_profile(cfg, w, terms, scratch)
}

/// [`fill`] on `terms` when `memcalls` is on, less the empty run's calls (`base`,
/// [`base_for_terms`]); a note when the profile has no lengths.
pub fn fill_terms(
    terms: &mut Terms,
    prof: &multios_profile::Profile,
    base: Option<&multios_profile::Profile>,
    notes: &mut Vec<String>,
) {
    let Some(m) = terms.memcalls.as_mut() else {
        return;
    };
    if !fill(m, prof, base) {
        let note =
            "memcalls: the profile records no memory_bytes (not the eBPF profiler): the per-call price alone"
                .to_string();
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
}

/// memcalls.c natively and in the LWK at each length of [`MEMCALLS_KIB`], [`MEMCALLS_ROUNDS`] runs
/// a side, alternating: the medians.
pub fn memcalls_lwk(cfg: &Config, exe: &Path, scratch: &Path) -> Result<MemMedians, ExperimentError> {
    let mut out = MemMedians::default();
    for (i, kib) in MEMCALLS_KIB.into_iter().enumerate() {
        let argv = vec![
            exe.display().to_string(),
            kib.to_string(),
            MEMCALLS_INNER.to_string(),
        ];
        let label = format!("memcalls-{kib}kib");
        let (native, lwk) = super::touch::alternate(cfg, &argv, scratch, &label, MEMCALLS_ROUNDS, |t| {
            parse_memcalls(t).ok_or("memcalls line")
        })?;
        out.native[i] = medians(kib, &native);
        out.lwk[i] = medians(kib, &lwk);
    }
    Ok(out)
}

fn medians(kib: u64, runs: &[MemRun]) -> MemRun {
    let med = |f: fn(&MemRun) -> f64| {
        crate::stats::median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    MemRun {
        kib,
        mmap: med(|r| r.mmap),
        mremap: med(|r| r.mremap),
        munmap: med(|r| r.munmap),
        fmmap: med(|r| r.fmmap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_memcalls_lines_parse() {
        assert_eq!(
            parse_memcalls(
                "memcalls kib 64 mmap_ns 1200 mremap_ns 3400 munmap_ns 5600 fmmap_ns 7000 fmunmap_ns 80 rounds 5\n"
            ),
            Some(MemRun {
                kib: 64,
                mmap: 1200.0,
                mremap: 3400.0,
                munmap: 5600.0,
                fmmap: 7000.0,
            })
        );
        assert_eq!(parse_memcalls("mmap: Cannot allocate memory"), None);
        assert_eq!(parse_memcalls("memcalls kib 64 mmap_ns 1"), None);
    }

    #[test]
    fn issue_15_memcalls_prices_are_the_lwk_s_line_less_native_s() {
        // Native: mmap 1 µs flat; mremap 2 µs + 0.1 ns/B; munmap 3 µs + 0.2 ns/B of its (doubled)
        // length; a file's mmap 3 µs. LWK: mmap 10 µs + 1 ns/B, mremap 50 µs + 3 ns/B, munmap
        // 20 µs + 0.7 ns/B, a file's mmap 100 µs + 0.5 ns/B.
        let at = |kib: u64, a: [f64; 4], b: [f64; 4]| {
            let bytes = bench_bytes(kib);
            MemRun {
                kib,
                mmap: a[0] + b[0] * bytes[0],
                mremap: a[1] + b[1] * bytes[1],
                munmap: a[2] + b[2] * bytes[2],
                fmmap: a[3] + b[3] * bytes[3],
            }
        };
        let (na, nb) = ([1000.0, 2000.0, 3000.0, 3000.0], [0.0, 0.1, 0.2, 0.0]);
        let (la, lb) = ([10_000.0, 50_000.0, 20_000.0, 100_000.0], [1.0, 3.0, 0.7, 0.5]);
        let m = MemMedians {
            native: [at(64, na, nb), at(4096, na, nb)],
            lwk: [at(64, la, lb), at(4096, la, lb)],
        };
        let p = prices(&m);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1e-15);
        assert!(
            close(p.mmap.per_call_s, 9e-6) && close(p.mmap.per_byte_s, 1e-9),
            "{p:?}"
        );
        assert!(
            close(p.mremap.per_call_s, 48e-6) && close(p.mremap.per_byte_s, 2.9e-9),
            "{p:?}"
        );
        assert!(
            close(p.munmap.per_call_s, 17e-6) && close(p.munmap.per_byte_s, 0.5e-9),
            "{p:?}"
        );
        assert!(
            close(p.mmap_file.per_call_s, 97e-6) && close(p.mmap_file.per_byte_s, 0.5e-9),
            "{p:?}"
        );
        // A long call that took natively more than in the LWK (noise): no negative per-byte
        // price, the short length's extra per call.
        let mut noisy = m;
        noisy.native[1].munmap = 14e6;
        let p = prices(&noisy);
        let short = m.lwk[0].munmap - m.native[0].munmap;
        assert_eq!(p.munmap.per_byte_s, 0.0, "{p:?}");
        assert!(close(p.munmap.per_call_s, short * 1e-9), "{p:?}");
    }

    fn profile(counts: [u64; 3], bytes: Option<multios_profile::MemoryBytes>) -> multios_profile::Profile {
        let mut p = multios_profile::Profile::new(vec!["sqlite3".into()], "multios-ebpf", "high");
        let calls = [
            ("mmap", 9, counts[0]),
            ("munmap", 11, counts[1]),
            ("mremap", 25, counts[2]),
        ];
        for (name, nr, count) in calls.into_iter().chain([("read", 0, 900)]) {
            p.syscalls.push(multios_profile::SyscallStats {
                name: name.into(),
                nr,
                count,
                total_s: 1e-3,
                ..Default::default()
            });
        }
        p.memory_bytes = bytes;
        p
    }

    fn bytes(mmap: u64, file: (u64, u64), munmap: u64, mremap: u64) -> multios_profile::MemoryBytes {
        multios_profile::MemoryBytes {
            mmap,
            munmap,
            mremap_old: mremap,
            mremap_new: 2 * mremap,
            mmap_file_calls: file.0,
            mmap_file: file.1,
        }
    }

    #[test]
    fn issue_15_memcalls_takes_counts_and_lengths_from_the_profile_less_the_empty_run() {
        let w = profile([31, 12, 3], Some(bytes(9 << 20, (14, 2 << 20), 5 << 20, 3 << 20)));
        let mut m = MemCalls::default();
        assert!(fill(&mut m, &w, None));
        assert_eq!((m.mmap.calls, m.mmap_file.calls), (17.0, 14.0));
        assert_eq!((m.munmap.calls, m.mremap.calls), (12.0, 3.0));
        assert_eq!(
            m.mmap.bytes,
            (7u64 << 20) as f64,
            "anonymous: every mmap less the files'"
        );
        assert_eq!(m.mmap_file.bytes, (2u64 << 20) as f64);
        assert_eq!(m.munmap.bytes, (5u64 << 20) as f64);
        assert_eq!(
            m.mremap.bytes,
            (3u64 << 20) as f64,
            "mremap is priced on its old length"
        );
        // Less the empty run's (its start-up term holds them); a kind it has more of counts 0.
        let empty = profile([20, 1, 0], Some(bytes(3 << 20, (12, 1 << 20), 8 << 20, 0)));
        assert!(fill(&mut m, &w, Some(&empty)));
        assert_eq!(
            (m.mmap.calls, m.mmap_file.calls, m.munmap.calls),
            (9.0, 2.0, 11.0)
        );
        assert_eq!(m.mmap.bytes, (5u64 << 20) as f64);
        assert_eq!(m.munmap.bytes, 0.0);
        // Without lengths: the counts (every mmap as anonymous), no bytes, and false.
        let mut m = MemCalls::default();
        assert!(!fill(&mut m, &profile([31, 12, 3], None), None));
        assert_eq!((m.mmap.calls, m.mmap.bytes, m.mmap_file.calls), (31.0, 0.0, 0.0));
    }
}
