//! Noise traces as GOAL schedules for LogGOPSim (issue #18), beside the `start_ns duration_ns` text
//! form (`trace.rs`).
//!
//! GOAL (LogGOPSim's schedule language, as its `txt2bin` parses it): `num_ranks N`, then one
//! `rank R { … }` block per rank holding one statement per line — `LABEL: calc NS [cpu C]`,
//! `LABEL: send SIZEb to PEER [tag T] [cpu C] [nic I]`, `LABEL: recv SIZEb from PEER [tag T] …`,
//! `A requires B` (A starts after B ends), `A irequires B` (after B starts) — with `//` comments.
//!
//! The schedule written here is the bulk-synchronous program the noise is usually judged by: each
//! of `ranks` ranks computes `work_ns` per step and then joins a dissemination barrier (⌈log2 N⌉
//! rounds of 1-byte messages to rank + 2^k). A step's `calc` is `work_ns` plus the detour time the
//! measured trace holds in that step's window; rank r replays the trace cyclically from the offset
//! r·length/N, so the ranks' detours are not aligned. Simulated with noise-free LogGOP parameters,
//! the schedule's end time against `steps · work_ns` shows what this noise costs at that scale.

use crate::trace::NoiseTrace;
use std::fmt::Write as _;

#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    #[error("GOAL schedule: {what} must be at least 1")]
    Zero { what: &'static str },
    #[error("GOAL schedule: the trace covers no time (length 0): nothing to replay")]
    Empty,
}

/// The shape of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoalConfig {
    pub ranks: usize,
    pub steps: usize,
    /// Work per step per rank, ns (e.g. the FWQ quantum).
    pub work_ns: u64,
}

/// Detour time of `t` within the cyclic window [start, start + len), ns.
pub fn busy_in(t: &NoiseTrace, start: f64, len: f64) -> f64 {
    let l = t.length_ns;
    let mut busy = 0.0;
    let mut from = start.rem_euclid(l);
    let mut left = len;
    while left > 0.0 {
        let to = (from + left).min(l);
        busy += t
            .detours
            .iter()
            .map(|&(s, d)| ((s + d).min(to) - s.max(from)).max(0.0))
            .fold(0.0, |a, b| a + b);
        left -= to - from;
        from = 0.0;
    }
    busy
}

/// The GOAL text of the schedule described in the module docs.
pub fn goal(t: &NoiseTrace, cfg: &GoalConfig) -> Result<String, GoalError> {
    for (what, v) in [
        ("ranks", cfg.ranks),
        ("steps", cfg.steps),
        ("work_ns", cfg.work_ns as usize),
    ] {
        if v == 0 {
            return Err(GoalError::Zero { what });
        }
    }
    if t.length_ns <= 0.0 {
        return Err(GoalError::Empty);
    }
    let n = cfg.ranks;
    let rounds = usize::BITS as usize - (n - 1).leading_zeros() as usize; // ⌈log2 n⌉
    let w = cfg.work_ns as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "// multios noise trace as a GOAL schedule: {n} ranks × {} steps of {} ns work + a dissemination barrier;\n\
         // detours replayed from a {} ns trace ({:.4} % net noise), rank r offset by r·length/{n}\nnum_ranks {n}",
        cfg.steps,
        cfg.work_ns,
        t.length_ns as u64,
        100.0 * t.net_noise()
    );
    for r in 0..n {
        let _ = writeln!(o, "rank {r} {{");
        let offset = t.length_ns * r as f64 / n as f64;
        let mut prev: Option<String> = None;
        for s in 0..cfg.steps {
            let busy = busy_in(t, offset + s as f64 * w, w);
            let calc = format!("c{s}");
            let _ = writeln!(o, "{calc}: calc {}", (w + busy).round() as u64);
            if let Some(p) = &prev {
                let _ = writeln!(o, "{calc} requires {p}");
            }
            let mut before = calc;
            for k in 0..rounds {
                let step = 1usize << k;
                let tag = s * rounds + k;
                let (send, recv) = (format!("s{s}_{k}"), format!("r{s}_{k}"));
                let _ = writeln!(o, "{send}: send 1b to {} tag {tag}", (r + step) % n);
                let _ = writeln!(o, "{recv}: recv 1b from {} tag {tag}", (r + n - step % n) % n);
                let _ = writeln!(o, "{send} requires {before}");
                let _ = writeln!(o, "{recv} requires {before}");
                before = recv;
            }
            prev = Some(before);
        }
        let _ = writeln!(o, "}}");
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// LogGOPSim's GOAL grammar (txt2bin): checks every line and returns the matched messages and the
    /// per-rank operation counts. Panics with the line at fault.
    fn check_goal(text: &str) -> (usize, Vec<usize>) {
        let int = |s: &str| {
            s.parse::<u64>()
                .unwrap_or_else(|_| panic!("not an integer: '{s}'"))
        };
        let ident = |s: &str| {
            let b = s.as_bytes();
            assert!(
                !b.is_empty()
                    && b[0].is_ascii_alphabetic()
                    && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_'),
                "not a label: '{s}'"
            );
        };
        let mut num_ranks = None;
        let mut rank: Option<u64> = None;
        let mut seen_ranks = Vec::new();
        let mut labels = BTreeSet::new();
        let mut ops = Vec::new();
        let mut sends: BTreeMap<(u64, u64, u64), u64> = BTreeMap::new();
        let mut recvs: BTreeMap<(u64, u64, u64), u64> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split("//").next().unwrap_or("").trim();
            let w: Vec<&str> = line.split_whitespace().collect();
            let at = || format!("line {}: '{raw}'", i + 1);
            match (rank, w.as_slice()) {
                (_, []) => {}
                (None, ["num_ranks", n]) => num_ranks = Some(int(n)),
                (None, ["rank", r, "{"]) => {
                    rank = Some(int(r));
                    seen_ranks.push(int(r));
                    labels.clear();
                    ops.push(0);
                }
                (Some(_), ["}"]) => rank = None,
                (Some(me), [l, verb, rest @ ..]) if l.ends_with(':') => {
                    let l = &l[..l.len() - 1];
                    ident(l);
                    assert!(labels.insert(l.to_string()), "label {l} defined twice, {}", at());
                    *ops.last_mut().expect("rank") += 1;
                    match (*verb, rest) {
                        ("calc", [ns]) | ("calc", [ns, "cpu", _]) => {
                            int(ns);
                        }
                        ("send" | "recv", [size, dir, peer, opts @ ..]) => {
                            let size = int(size
                                .strip_suffix('b')
                                .unwrap_or_else(|| panic!("size without 'b', {}", at())));
                            assert_eq!(*dir, if *verb == "send" { "to" } else { "from" }, "{}", at());
                            let peer = int(peer);
                            let mut tag = 0;
                            let mut o = opts.iter();
                            while let Some(k) = o.next() {
                                let v = int(o
                                    .next()
                                    .unwrap_or_else(|| panic!("{k} without a value, {}", at())));
                                match *k {
                                    "tag" => tag = v,
                                    "cpu" | "nic" => {}
                                    _ => panic!("unexpected '{k}', {}", at()),
                                }
                            }
                            let key = if *verb == "send" {
                                (me, peer, tag)
                            } else {
                                (peer, me, tag)
                            };
                            *(if *verb == "send" { &mut sends } else { &mut recvs })
                                .entry(key)
                                .or_default() += size;
                        }
                        _ => panic!("not calc/send/recv, {}", at()),
                    }
                }
                (Some(_), [a, "requires" | "irequires", b]) => {
                    ident(a);
                    ident(b);
                    assert!(
                        labels.contains(*a) && labels.contains(*b),
                        "undefined label, {}",
                        at()
                    );
                }
                _ => panic!("not GOAL, {}", at()),
            }
        }
        assert!(rank.is_none(), "unclosed rank block");
        let n = num_ranks.expect("num_ranks") as usize;
        assert_eq!(seen_ranks, (0..n as u64).collect::<Vec<_>>());
        assert_eq!(sends, recvs, "every send has its receive");
        (sends.len(), ops)
    }

    fn trace() -> NoiseTrace {
        NoiseTrace::new(1_000_000.0, vec![(100_000.0, 20_000.0), (900_000.0, 20_000.0)])
    }

    #[test]
    fn issue_18_goal_follows_loggopsims_grammar() {
        let cfg = GoalConfig {
            ranks: 5,
            steps: 4,
            work_ns: 250_000,
        };
        let text = goal(&trace(), &cfg).expect("goal");
        let (messages, ops) = check_goal(&text);
        let rounds = 3; // ⌈log2 5⌉
        assert_eq!(messages, 5 * 4 * rounds);
        assert_eq!(ops, vec![4 * (1 + 2 * rounds); 5]);
        let one = goal(
            &trace(),
            &GoalConfig {
                ranks: 1,
                steps: 3,
                work_ns: 10,
            },
        )
        .expect("one rank");
        assert_eq!(check_goal(&one), (0, vec![3]));
    }

    #[test]
    fn issue_18_goal_calcs_hold_the_detours_of_their_window() {
        let t = trace();
        // 4 % busy: 20 µs detours at 100 µs and 900 µs of a 1 ms trace
        assert_eq!(busy_in(&t, 0.0, 1_000_000.0), 40_000.0);
        // a window that wraps: [910 µs, 1 ms) then [0, 110 µs)
        assert_eq!(busy_in(&t, 910_000.0, 200_000.0), 20_000.0);
        let text = goal(
            &t,
            &GoalConfig {
                ranks: 1,
                steps: 4,
                work_ns: 250_000,
            },
        )
        .expect("goal");
        let calcs: Vec<u64> = text
            .lines()
            .filter_map(|l| l.split_once(": calc ").map(|(_, v)| v.parse().expect("ns")))
            .collect();
        // the calcs add up to the work plus every detour of the trace, once
        assert_eq!(calcs.iter().sum::<u64>(), 1_000_000 + 40_000);
        assert_eq!(calcs, vec![270_000, 250_000, 250_000, 270_000]);
    }

    #[test]
    fn issue_18_goal_refuses_empty_shapes() {
        assert!(goal(
            &trace(),
            &GoalConfig {
                ranks: 0,
                steps: 1,
                work_ns: 1
            }
        )
        .is_err());
        assert!(goal(
            &NoiseTrace::new(0.0, vec![]),
            &GoalConfig {
                ranks: 1,
                steps: 1,
                work_ns: 1
            }
        )
        .is_err());
    }
}
