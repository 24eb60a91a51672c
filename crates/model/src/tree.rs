//! The `procs` term (issue #15): a multi-process program projected per process and composed along
//! its process tree, instead of the paper's one projection of the summed profile.
//!
//! The paper sums C and g(s) over every process (t_nd = C + Σg), which for a parallel build or a
//! pipeline is far above the run's wall time, and makes every process's forwarding cost add up as
//! if the processes ran one after another. Here each process i (from `processes[]` of a profile
//! taken with `multios profile --per-process`) is projected on its own — its C_i and g_i(s), the
//! same policy, parameters and other terms, its own start-up T_i if it exec'd — giving the time it
//! adds, Δ_i = t_d,i − t_nd,i. The start-up delays it at its start; the rest lands on the threads
//! that make the calls, so its life is stretched by δ_i = T_i + (Δ_i − T_i) · h_i, where h_i is the
//! share of the process's calls made by its busiest thread (the profile's per-thread counts): the
//! calls of one thread are paid one after another, so the process ends no earlier than that thread
//! does. Without per-thread counts, h_i = (e_i − s_i) / L_i (L_i: Σ of its threads' lifetimes), the
//! share of evenly busy threads. One thread: δ_i = Δ_i either way.
//!
//! Why not always the lifetime share: an MPI rank's Open MPI progress threads live as long as the
//! rank and sleep in `epoll_wait`; with them, L_i was 2.9× the span of `lmp`, and the rank's delay a
//! third of what its main thread (94 % of the calls) pays. The quiet suite of 2026-11-26 12:16
//! (docs/BENCHMARKS.md) measured the whole of it.
//!
//! The delays then travel along the tree in native time order. σ_i(t), how much later the native
//! moment t of process i happens when delegated, jumps by T_i at its start, grows at
//! (δ_i − T_i) / (e_i − s_i) over its life and:
//!
//! ```text
//! σ_child(s_child) = σ_parent(s_child) + T_child           a fork happens when the parent gets there
//! σ_parent(e_child) ← max(σ_parent(e_child), σ_child(e_child))   the parent reaps the child: it
//!                                                          cannot go on before the child's end
//! D_span = max_i (e_i + σ_i(e_i)) − max_i e_i                    the critical path's delay
//! D_work = Σ_i δ_i / P                                            the added work on P CPUs
//! W_nd = max_i e_i − min_i s_i,   W_d = W_nd + max(D_span, D_work),   S = W_nd / W_d
//!                                 (W_d = W_nd + D_span when the processes' delays add up to < 0)
//! ```
//!
//! Children run side by side (a pipeline, `make -j`, MPI ranks) add their delays as a maximum — the
//! critical path — as long as they have CPUs of their own; on P CPUs the added work Σδ_i cannot take
//! less than Σδ_i / P (the bound of a greedy schedule, as in Brent's theorem), so on one CPU the
//! delays add up whatever the tree. Children run one after another add them up. For one process
//! S = L/(L + Δ), the
//! paper's t_nd / t_d (for one thread, or without start-up; a property test checks it). Not
//! modelled: data dependencies between siblings (a pipe's reader waiting on its writer) beyond the
//! reap; a parent that reaps a child long after it ended (taken as reaped at once); and when in its
//! life a process pays its per-call delay (spread evenly, waits included).

use crate::terms::{corrected_t_d, Terms};
use crate::{refined, Call, ModelError, Params, Workload};
use multios_profile::{Profile, ThreadStats};
use std::collections::BTreeSet;

/// One process of the tree.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessNode {
    pub pid: u32,
    pub ppid: Option<u32>,
    /// The MPI rank it belongs to (merged profiles: parents are looked up within a rank).
    pub rank: Option<u32>,
    pub name: String,
    pub start_s: f64,
    pub end_s: f64,
    /// Σ of its threads' lifetimes (its t_nd).
    pub lifetime_s: f64,
    /// It exec'd an image (it pays the start-up of the interception).
    pub execs: bool,
    /// The bytes of the images it exec'd and of its libraries' text (schema 5), for `images`;
    /// `None` when the profile does not know them.
    pub image: Option<crate::ImageBytes>,
    /// The share of its calls made by its busiest thread (h_i), when the profile counted calls per
    /// thread; `None`: the lifetime share is used.
    pub busiest_share: Option<f64>,
    /// It runs on Linux beside the target (the LWK's `--linux-exec` programs): it pays no
    /// delegation and no start-up, and adds no delay of its own.
    pub on_linux: bool,
    pub workload: Workload,
}

/// A profile's processes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessTree {
    pub processes: Vec<ProcessNode>,
}

impl ProcessTree {
    /// The tree of a profile taken per process; `None` without `processes[]`.
    pub fn from_profile(p: &Profile) -> Option<ProcessTree> {
        if p.processes.is_empty() {
            return None;
        }
        Some(ProcessTree {
            processes: p
                .processes
                .iter()
                .map(|q| ProcessNode {
                    pid: q.pid,
                    ppid: q.ppid,
                    rank: q.rank,
                    name: q.name.clone(),
                    start_s: q.start_s,
                    end_s: q.end_s,
                    lifetime_s: q.lifetime_s,
                    execs: q.count_of("execve") + q.count_of("execveat") > 0 || !q.images.is_empty(),
                    image: crate::ImageBytes::of_process(q),
                    busiest_share: busiest_share(&p.threads, q.pid, q.rank),
                    on_linux: false,
                    workload: Workload {
                        c: q.compute_time_s,
                        calls: q
                            .syscalls
                            .iter()
                            .map(|c| Call {
                                name: c.name.clone(),
                                n: c.count,
                                g: c.total_s,
                            })
                            .collect(),
                    },
                })
                .collect(),
        })
    }

    /// The same tree with the processes named in `names` (by their command name, as the LWK's
    /// `--linux-exec` matches them) run on Linux: what the LWK target runs.
    pub fn with_on_linux(&self, names: &[&str]) -> ProcessTree {
        let mut t = self.clone();
        for q in &mut t.processes {
            if names.contains(&q.name.as_str()) {
                q.on_linux = true;
            }
        }
        t
    }

    /// The index of `i`'s parent: the process with its ppid (in its rank) alive when it started.
    fn parent(&self, i: usize) -> Option<usize> {
        let c = &self.processes[i];
        let pp = c.ppid?;
        self.processes
            .iter()
            .position(|p| p.pid == pp && p.rank == c.rank && p.start_s <= c.start_s && c.start_s <= p.end_s)
    }
}

/// The share of process `pid`'s (in `rank`) calls made by its busiest thread; `None` when the
/// profile has no per-thread counts for it or it made no calls.
fn busiest_share(threads: &[ThreadStats], pid: u32, rank: Option<u32>) -> Option<f64> {
    let counts: Vec<u64> = threads
        .iter()
        .filter(|t| t.pid == Some(pid) && t.rank == rank)
        .map(|t| t.syscalls)
        .collect();
    let total: u64 = counts.iter().sum();
    let most = counts.iter().copied().max()?;
    (total > 0).then(|| most as f64 / total as f64)
}

/// One process's share of the composed projection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessShift {
    pub pid: u32,
    pub name: String,
    /// Δ_i: the time its own projection adds (t_d,i − t_nd,i).
    pub extra_s: f64,
    /// T_i: its start-up (0 unless it exec'd and the term is on), paid at its start.
    pub startup_s: f64,
    /// δ_i: how much longer its life gets (T_i, and the rest of Δ_i shared by its threads).
    pub stretch_s: f64,
    /// σ_i(e_i): how much later it ends, with what it waited for.
    pub delay_s: f64,
}

/// The composed projection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TreeProjection {
    pub wall_nd: f64,
    pub wall_d: f64,
    /// The critical path's delay D_span and the added work per CPU D_work.
    pub span_delay_s: f64,
    pub work_delay_s: f64,
    /// W_nd / W_d: the processes composed along the tree.
    pub speedup: f64,
    /// W_nd / (W_nd + Σ δ_i): every process's delay added up, as if they ran one after another.
    pub serial_speedup: f64,
    pub processes: Vec<ProcessShift>,
}

/// Projects each process of `tree` with `delegated`, `params` and `terms` (start-up only for the
/// processes that exec'd) and composes them along the tree on `cpus` CPUs (module docs).
pub fn compose(
    tree: &ProcessTree,
    delegated: &BTreeSet<String>,
    params: &Params,
    terms: &Terms,
    cpus: usize,
) -> Result<TreeProjection, ModelError> {
    let n = tree.processes.len();
    if n == 0 {
        return Err(ModelError::EmptyWorkload);
    }
    if cpus == 0 {
        return Err(ModelError::Positive {
            what: "the CPUs the processes run on".into(),
            value: 0.0,
        });
    }
    let mut shifts = Vec::with_capacity(n);
    let root = (0..n).find(|&i| tree.parent(i).is_none());
    for (i, q) in tree.processes.iter().enumerate() {
        // `startup-own` was measured on the workload's own program: its root process pays it,
        // every other process that exec'd pays `startup`'s (an empty program's).
        let own = Terms {
            startup_s: terms.startup_s.filter(|_| q.execs),
            startup_own_s: terms.startup_own_s.filter(|_| Some(i) == root),
            // `images`: the process's own image (its bytes; unknown ones fall back to `startup`);
            // forked inside the target (every process but the root) it pays the fork path's extra.
            images: terms
                .images
                .filter(|_| q.execs)
                .map(|im| im.with_bytes(q.image).with_spawned(Some(i) != root)),
            procs: false,
            // The tree as a whole is anchored, after composing.
            anchor_native_s: None,
            // The tree's first touches (all its processes' native faults) are counted once, on
            // its root, as `startup-own`.
            touch: terms.touch.filter(|_| Some(i) == root),
            // So are the memory calls (the summed profile's counts and lengths).
            memcalls: terms.memcalls.filter(|_| Some(i) == root),
            ..terms.clone()
        };
        let extra = if q.on_linux {
            0.0
        } else if q.workload.t_nd() > 0.0 {
            let p = refined(&q.workload, delegated, params)?;
            corrected_t_d(&p, &own) - p.t_nd
        } else {
            crate::terms::startup_of(&own)
        };
        let startup = if q.on_linux {
            0.0
        } else {
            crate::terms::startup_of(&own)
        };
        let span = q.end_s - q.start_s;
        let share = match q.busiest_share {
            Some(h) if h > 0.0 && h <= 1.0 => Some(h),
            _ if q.lifetime_s > 0.0 && span > 0.0 => Some(span / q.lifetime_s),
            _ => None,
        };
        let stretch = share.map_or(extra, |h| startup + (extra - startup) * h);
        shifts.push(ProcessShift {
            pid: q.pid,
            name: q.name.clone(),
            extra_s: extra,
            startup_s: startup,
            stretch_s: stretch,
            delay_s: 0.0,
        });
    }
    let parents: Vec<Option<usize>> = (0..n).map(|i| tree.parent(i)).collect();
    let depth = |mut i: usize| {
        let mut d = 0usize;
        while let Some(p) = parents[i] {
            d += 1;
            i = p;
            if d > n {
                break; // a cycle in corrupt input: stop
            }
        }
        d
    };
    // Events in native time order; at one instant ends before starts (a shell reaps one child,
    // then forks the next), children's ends before their parents', parents' starts before their
    // children's. A process that starts and ends at one instant ends at its start event.
    let mut events: Vec<(f64, u8, isize, usize)> = Vec::with_capacity(2 * n);
    for (i, q) in tree.processes.iter().enumerate() {
        let d = depth(i) as isize;
        events.push((q.start_s, 1, d, i));
        if q.end_s > q.start_s {
            events.push((q.end_s, 0, -d, i));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    // Per process: σ at `at`, and its rate.
    let mut sigma = vec![0.0f64; n];
    let mut at = vec![0.0f64; n];
    let mut alive = vec![false; n];
    let rate: Vec<f64> = tree
        .processes
        .iter()
        .zip(&shifts)
        .map(|(q, s)| {
            let span = q.end_s - q.start_s;
            if span > 0.0 {
                (s.stretch_s - s.startup_s) / span
            } else {
                0.0
            }
        })
        .collect();
    let sigma_at = |sigma: &[f64], at: &[f64], i: usize, t: f64| sigma[i] + rate[i] * (t - at[i]);
    for (t, kind, _, i) in events {
        let instant = tree.processes[i].end_s <= tree.processes[i].start_s;
        if kind == 1 {
            sigma[i] = shifts[i].startup_s
                + match parents[i] {
                    Some(p) if alive[p] => sigma_at(&sigma, &at, p, t),
                    _ => 0.0,
                };
            at[i] = t;
            alive[i] = true;
            if !instant {
                continue;
            }
        }
        let end = if instant {
            sigma[i] + shifts[i].stretch_s - shifts[i].startup_s
        } else {
            sigma_at(&sigma, &at, i, t)
        };
        shifts[i].delay_s = end;
        alive[i] = false;
        if let Some(p) = parents[i] {
            if alive[p] && end > sigma_at(&sigma, &at, p, t) {
                sigma[p] = end;
                at[p] = t;
            }
        }
    }
    let start = tree
        .processes
        .iter()
        .map(|q| q.start_s)
        .fold(f64::INFINITY, f64::min);
    let end_nd = tree
        .processes
        .iter()
        .map(|q| q.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let end_d = tree
        .processes
        .iter()
        .zip(&shifts)
        .map(|(q, s)| q.end_s + s.delay_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let wall_nd = end_nd - start;
    if wall_nd.is_nan() || wall_nd <= 0.0 {
        return Err(ModelError::EmptyWorkload);
    }
    let serial: f64 = shifts.iter().map(|s| s.stretch_s).fold(0.0, |a, b| a + b);
    let span_delay_s = end_d - end_nd;
    let work_delay_s = serial / cpus as f64;
    // Added work cannot take less than its share of the CPUs; work taken away (γ > 1, a term that
    // spares time) shortens the run along its critical path.
    let wall_d = wall_nd
        + if work_delay_s > 0.0 {
            span_delay_s.max(work_delay_s)
        } else {
            span_delay_s
        };
    Ok(TreeProjection {
        wall_nd,
        wall_d,
        span_delay_s,
        work_delay_s,
        // `anchor`: the tree's native wall moved onto the measured one (crate::terms::anchored).
        speedup: crate::terms::anchored(wall_nd, wall_d, params.gamma, terms),
        serial_speedup: crate::terms::anchored(wall_nd, wall_nd + serial, params.gamma, terms),
        processes: shifts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{corrected, Terms};
    use proptest::prelude::*;

    fn node(pid: u32, ppid: Option<u32>, start: f64, end: f64, c: f64, writes: u64) -> ProcessNode {
        ProcessNode {
            pid,
            ppid,
            rank: None,
            name: format!("p{pid}"),
            start_s: start,
            end_s: end,
            lifetime_s: end - start,
            execs: true,
            image: None,
            busiest_share: None,
            on_linux: false,
            workload: Workload {
                c,
                calls: vec![Call {
                    name: "write".into(),
                    n: writes,
                    g: (end - start) - c,
                }],
            },
        }
    }

    fn all() -> BTreeSet<String> {
        ["write".to_string()].into()
    }

    /// A shell waiting for two children that run side by side, each 1 s with 10 000 writes: at
    /// f_c = 10 µs each child gains 0.2 s, and the run 0.2 s (the critical path), not 0.4 s.
    #[test]
    fn issue_15_a_pipeline_adds_its_critical_path_not_its_sum() {
        let tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 1.2, 0.0, 0),
                node(2, Some(1), 0.1, 1.1, 0.9, 10_000),
                node(3, Some(1), 0.1, 1.1, 0.9, 10_000),
            ],
        };
        let r = compose(&tree, &all(), &Params::new(1.0, 10e-6), &Terms::none(), 2).expect("composes");
        assert!((r.wall_d - 1.4).abs() < 1e-9, "{r:?}");
        assert!((r.speedup - 1.2 / 1.4).abs() < 1e-9);
        assert!((r.serial_speedup - 1.2 / 1.6).abs() < 1e-9);
        assert!((r.processes[0].delay_s - 0.2).abs() < 1e-9);
        // On one CPU the two children's added work cannot overlap: it adds up.
        let r = compose(&tree, &all(), &Params::new(1.0, 10e-6), &Terms::none(), 1).expect("composes");
        assert!((r.wall_d - 1.6).abs() < 1e-9, "{r:?}");
        assert!((r.work_delay_s - 0.4).abs() < 1e-9 && (r.span_delay_s - 0.2).abs() < 1e-9);
    }

    /// The same children one after another: the second starts when the first was reaped, so the
    /// delays add up.
    #[test]
    fn issue_15_processes_one_after_another_add_up() {
        let tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 2.2, 0.0, 0),
                node(2, Some(1), 0.1, 1.1, 0.9, 10_000),
                node(3, Some(1), 1.1, 2.1, 0.9, 10_000),
            ],
        };
        let r = compose(&tree, &all(), &Params::new(1.0, 10e-6), &Terms::none(), 4).expect("composes");
        assert!((r.wall_d - 2.6).abs() < 1e-9, "{r:?}");
        assert!((r.processes[2].delay_s - 0.4).abs() < 1e-9, "{r:?}");
    }

    /// Start-up is paid by every process that exec'd, once.
    #[test]
    fn issue_15_startup_per_exec_d_process() {
        let mut tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 2.0, 1.0, 0),
                node(2, Some(1), 0.5, 1.5, 1.0, 0),
            ],
        };
        let t = Terms {
            startup_s: Some(0.1),
            ..Terms::none()
        };
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        assert!((r.wall_d - 2.2).abs() < 1e-9, "{r:?}");
        tree.processes[1].execs = false;
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        assert!((r.wall_d - 2.1).abs() < 1e-9, "{r:?}");
    }

    /// `images`: each process that exec'd pays its own image's start-up instead of `true`'s; one
    /// whose sizes are unknown keeps `startup`'s, one that did not exec pays none.
    #[test]
    fn issue_15_images_charges_each_process_its_own_image() {
        let mut tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 2.0, 1.0, 0),
                node(2, Some(1), 0.5, 1.5, 1.0, 0),
            ],
        };
        let bytes = |mb: f64| crate::ImageBytes {
            loaded: mb * 1e6,
            exec: 0.0,
            libraries: 0.0,
        };
        tree.processes[0].image = Some(bytes(1.0));
        tree.processes[1].image = Some(bytes(30.0));
        // a = 10 ms, 1 ms per loaded MB: the root 11 ms, the child 40 ms (instead of 100 ms each).
        let t = Terms {
            startup_s: Some(0.1),
            images: Some(crate::Images {
                price: crate::ImagePrice {
                    fixed_s: 0.010,
                    per_loaded_byte_s: 1e-9,
                    per_exec_byte_s: 0.0,
                    per_library_byte_s: 0.0,
                    spawn_s: 0.0,
                },
                bytes: None,
                spawned: false,
            }),
            ..Terms::none()
        };
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        let starts: Vec<f64> = r.processes.iter().map(|p| p.startup_s).collect();
        assert!(
            (starts[0] - 0.011).abs() < 1e-12 && (starts[1] - 0.040).abs() < 1e-12,
            "{starts:?}"
        );
        // The child starts 11 ms late and pays 40 ms, and its parent waits for it: 2.051.
        assert!((r.wall_d - 2.051).abs() < 1e-9, "{r:?}");
        // The fork path's extra (e = 25 ms): the child, forked inside the target, pays it; the
        // root, started afresh, does not.
        let mut forked = t.clone();
        if let Some(im) = forked.images.as_mut() {
            im.price.spawn_s = 0.025;
        }
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &forked, 2).expect("composes");
        let starts: Vec<f64> = r.processes.iter().map(|p| p.startup_s).collect();
        assert!(
            (starts[0] - 0.011).abs() < 1e-12 && (starts[1] - 0.065).abs() < 1e-12,
            "{starts:?}"
        );
        tree.processes[1].image = None;
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        assert!((r.processes[1].startup_s - 0.1).abs() < 1e-12, "{r:?}");
        // Its sizes unknown: `startup`'s empty program, and the fork path's extra.
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &forked, 2).expect("composes");
        assert!((r.processes[1].startup_s - 0.125).abs() < 1e-12, "{r:?}");
        tree.processes[1].execs = false;
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        assert_eq!(r.processes[1].startup_s, 0.0, "{r:?}");
    }

    /// `startup-own` is paid by the workload's own process (the root) alone; the other processes
    /// that exec'd pay `startup`'s.
    #[test]
    fn issue_15_startup_own_is_the_root_process_s() {
        let tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 2.0, 1.0, 0),
                node(2, Some(1), 0.5, 1.5, 1.0, 0),
            ],
        };
        let t = Terms {
            startup_s: Some(0.1),
            startup_own_s: Some(0.3),
            ..Terms::none()
        };
        let r = compose(&tree, &all(), &Params::new(1.0, 0.0), &t, 2).expect("composes");
        assert!((r.processes[0].startup_s - 0.3).abs() < 1e-12, "{r:?}");
        assert!((r.processes[1].startup_s - 0.1).abs() < 1e-12, "{r:?}");
        assert!((r.wall_d - 2.4).abs() < 1e-9, "{r:?}");
    }

    /// issue #15: a rank whose main thread makes 94 % of the calls, beside two progress threads
    /// that sleep as long as it lives, is delayed by what its main thread pays, not by a third of
    /// it (the lifetime share).
    #[test]
    fn issue_15_the_busiest_thread_carries_the_delay_not_the_lifetime_share() {
        let mut rank = node(1, None, 0.0, 1.0, 0.6, 10_000);
        rank.lifetime_s = 3.0; // three threads alive for the whole second
        let tree = |q: &ProcessNode| ProcessTree {
            processes: vec![q.clone()],
        };
        let params = Params::new(1.0, 10e-6);
        let diluted = compose(&tree(&rank), &all(), &params, &Terms::none(), 1).expect("composes");
        assert!((diluted.wall_d - (1.0 + 0.2 / 3.0)).abs() < 1e-9, "{diluted:?}");
        rank.busiest_share = Some(0.94);
        let r = compose(&tree(&rank), &all(), &params, &Terms::none(), 1).expect("composes");
        assert!((r.wall_d - (1.0 + 0.188)).abs() < 1e-9, "{r:?}");
        // evenly busy threads: the busiest share is the lifetime share, nothing changes
        rank.busiest_share = Some(1.0 / 3.0);
        let even = compose(&tree(&rank), &all(), &params, &Terms::none(), 1).expect("composes");
        assert!((even.wall_d - diluted.wall_d).abs() < 1e-12, "{even:?}");
    }

    /// issue #15: the LWK execs Open MPI's daemon on Linux; its calls are not delegated, so it
    /// delays nothing (the emulator intercepts it, and there it does).
    #[test]
    fn issue_15_a_process_on_linux_adds_no_delay() {
        let mut tree = ProcessTree {
            processes: vec![
                node(1, None, 0.0, 1.0, 0.6, 10_000),
                node(2, Some(1), 0.0, 1.0, 0.6, 10_000),
            ],
        };
        tree.processes[1].name = "orted".into();
        let t = Terms {
            startup_s: Some(0.01),
            ..Terms::none()
        };
        let params = Params::new(1.0, 10e-6);
        let both = compose(&tree, &all(), &params, &t, 1).expect("composes");
        assert!((both.wall_d - 1.42).abs() < 1e-9, "{both:?}");
        let lwk =
            compose(&tree.with_on_linux(&["orted", "prted"]), &all(), &params, &t, 1).expect("composes");
        assert!((lwk.wall_d - 1.21).abs() < 1e-9, "{lwk:?}");
        assert_eq!(lwk.processes[1].stretch_s, 0.0);
    }

    /// The share is read from the profile's per-thread counts, per process and rank.
    #[test]
    fn issue_15_busiest_share_from_the_profile_s_threads() {
        let t = |tid: u32, pid: u32, rank: Option<u32>, syscalls: u64| ThreadStats {
            tid,
            pid: Some(pid),
            rank,
            syscalls,
            syscall_time_s: 0.0,
            lifetime_s: 1.0,
        };
        let p = [
            t(10, 10, None, 94),
            t(11, 10, None, 6),
            t(12, 12, None, 0),
            t(10, 10, Some(1), 5),
        ];
        assert_eq!(busiest_share(&p, 10, None), Some(0.94));
        assert_eq!(busiest_share(&p, 12, None), None, "no calls: the lifetime share");
        assert_eq!(busiest_share(&p, 99, None), None, "no threads of that process");
        assert_eq!(
            busiest_share(&p, 10, Some(1)),
            Some(1.0),
            "rank 1's process 10 is its own"
        );
    }

    proptest! {
        /// One process: the composition is the paper's t_nd / t_d' (with the same terms), to
        /// rounding — with any number of threads when there is no start-up (which is paid before
        /// the threads exist), with one thread when there is.
        #[test]
        fn issue_15_one_process_composes_to_the_papers_projection(
            c in 1e-3f64..10.0,
            n in 1u64..100_000,
            g in 0.0f64..2.0,
            threads in 1.0f64..8.0,
            cpus in 1usize..64,
            fc in 0.0f64..1e-4,
            gamma in 0.5f64..4.0,
            startup in 0.0f64..0.1,
            with_startup in proptest::bool::ANY,
        ) {
            let (threads, startup) = if with_startup { (1.0, startup) } else { (threads, 0.0) };
            let life = c + g;
            let q = ProcessNode {
                pid: 1,
                ppid: None,
                rank: None,
                name: "p".into(),
                start_s: 0.0,
                end_s: life / threads,
                lifetime_s: life,
                execs: true,
                image: None,
                busiest_share: None,
                on_linux: false,
                workload: Workload { c, calls: vec![Call { name: "write".into(), n, g }] },
            };
            let tree = ProcessTree { processes: vec![q.clone()] };
            let params = Params::new(gamma, fc);
            let terms = Terms { startup_s: Some(startup), ..Terms::none() };
            let r = compose(&tree, &all(), &params, &terms, cpus).expect("composes");
            let p = refined(&q.workload, &all(), &params).expect("projects");
            let paper = corrected(&p, &terms);
            prop_assert!((r.speedup - paper).abs() <= 1e-9 * paper, "{} vs {}", r.speedup, paper);
        }
    }
}
