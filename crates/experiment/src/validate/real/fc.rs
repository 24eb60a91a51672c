//! The LWK's f_c for a projection (issue #15): from the row of `multios lwk fc` whose path the
//! program's calls take — a rewritten `syscall` site delegating through the ring
//! ([`LWK_FC_ROW`]) — not the first "delegated getppid" row, which is the trapping `syscall`
//! instruction's and is bimodal (≈ 16.5 µs one-way when the proxy is parked and each call rings
//! its doorbell, ≈ 1.1 µs when it polls: which one a run caught decided the whole estimated
//! column, BENCHMARKS.md "The LWK's points of the suite on a quiet VM with this session's
//! merges"). A parked proxy's wake-up is the `wakeup` term's, measured at the workload's spacing
//! with the same back-to-back round trip taken off.

use crate::ExperimentError;

use multios_lwk::fc::Mechanism;

/// The `lwk fc` row whose path a program's calls take: delegated, through a rewritten site.
pub const LWK_FC_ROW: Mechanism = Mechanism::RewrittenDelegated;
/// The trapping `syscall` instruction's row (kept in the output for comparison).
pub const LWK_FC_RING_ROW: Mechanism = Mechanism::RingDelegated;
/// The host's getppid: what the delegated rows are taken relative to.
pub const LWK_FC_NATIVE_ROW: Mechanism = Mechanism::Native;

/// The medians (ns) of the rows of one `multios --json lwk fc` run that a projection uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FcRows {
    pub native_ns: f64,
    pub rewritten_ns: f64,
    /// The trapping site's row, if the run had it.
    pub ring_ns: Option<f64>,
}

impl FcRows {
    /// One-way f_c in seconds: half of (rewritten-site delegated − native getppid), at least 0.
    pub fn one_way_s(&self) -> f64 {
        ((self.rewritten_ns - self.native_ns) / 2.0).max(0.0) * 1e-9
    }

    /// The same from the trapping site's row (what the estimated column used before).
    pub fn ring_one_way_s(&self) -> Option<f64> {
        self.ring_ns.map(|r| ((r - self.native_ns) / 2.0).max(0.0) * 1e-9)
    }
}

/// A run more than this many times the lowest one measured a parked proxy (the two states are
/// ≈ 50× apart; the cross-CPU levels move a polled run by at most ≈ 3×).
pub const PARKED_RATIO: f64 = 5.0;

/// The one-way f_c of several runs: the median of those that met a polling proxy. Each run's
/// median is of thousands of calls back to back, which meet a polling proxy — unless the proxy
/// stayed parked for the whole run (2 runs in 8 at 15:35 UTC on 2026-11-26, 27.4–27.8 µs one-way
/// against 0.40–0.62 µs, on this very row): such a run measures the doorbell, which the `wakeup`
/// term prices at the workload's own spacing, and must not set the round trip of every call. A
/// run above [`PARKED_RATIO`] × the lowest is left out; the median of the others keeps the
/// cross-CPU level most of them saw (the lowest alone would pick a run at a level the others did
/// not see: 0.14 µs at 100 ns against 0.44 µs at 380–390 ns at 16:00). NaN without runs.
pub fn polling_one_way_s(runs: &[FcRows]) -> f64 {
    let all: Vec<f64> = runs.iter().map(FcRows::one_way_s).collect();
    let lowest = all.iter().copied().fold(f64::NAN, f64::min);
    let polled: Vec<f64> = all
        .into_iter()
        .filter(|&v| v <= PARKED_RATIO * lowest.max(1e-9))
        .collect();
    multios_stats::median(&polled).unwrap_or(f64::NAN)
}

/// The rows of `multios --json lwk fc`'s output (an array of `{mechanism, summary: {median_ns}}`).
pub fn parse_fc_rows(v: &serde_json::Value) -> Result<FcRows, ExperimentError> {
    let median = |m: Mechanism| {
        v.as_array()?
            .iter()
            .find(|r| r["mechanism"].as_str() == Some(m.name()))?["summary"]["median_ns"]
            .as_f64()
    };
    match (median(LWK_FC_ROW), median(LWK_FC_NATIVE_ROW)) {
        (Some(rewritten_ns), Some(native_ns)) => Ok(FcRows {
            native_ns,
            rewritten_ns,
            ring_ns: median(LWK_FC_RING_ROW),
        }),
        _ => Err(ExperimentError::Run(format!(
            "multios lwk fc --json has no '{}' or '{}' row",
            LWK_FC_ROW.name(),
            LWK_FC_NATIVE_ROW.name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(ring: f64, rewritten: f64) -> serde_json::Value {
        let row = |m: &str, ns: f64| serde_json::json!({"mechanism": m, "summary": {"median_ns": ns}});
        serde_json::json!([
            row("native getppid (host)", 100.0),
            row("guest syscall→LSTAR stub→return", 300.0),
            row("LWK-local getpid via ring", 900.0),
            row("delegated getppid via ring", ring),
            row("delegated getppid via MMIO exit", 40_000.0),
            row("LWK-local getpid, rewritten site", 700.0),
            row("delegated getppid, rewritten site", rewritten),
        ])
    }

    /// Regression (issue #15): the estimated column followed whichever state the trapping row
    /// caught the proxy in (33 µs parked, 2.4 µs polling). f_c now comes from the rewritten
    /// site's row, whatever the trapping row says.
    #[test]
    fn issue_15_lwk_fc_takes_the_rewritten_site_row_not_the_trapping_one() {
        for ring in [33_000.0, 2_400.0] {
            let r = parse_fc_rows(&rows(ring, 2_100.0)).expect("rows");
            assert!((r.one_way_s() - 1.0e-6).abs() < 1e-15, "{r:?}");
            assert!((r.ring_one_way_s().expect("ring") - (ring - 100.0) / 2.0 * 1e-9).abs() < 1e-15);
        }
        let v = serde_json::json!([{"mechanism": "native getppid (host)", "summary": {"median_ns": 90.0}}]);
        let e = parse_fc_rows(&v).expect_err("no rewritten row").to_string();
        assert!(e.contains(LWK_FC_ROW.name()), "{e}");
        // Below native (noise): 0, not negative.
        assert_eq!(
            parse_fc_rows(&rows(2_000.0, 50.0)).expect("rows").one_way_s(),
            0.0
        );
        // Of three runs, one whose proxy stayed parked does not set the round trip: the median of
        // the two others.
        let runs = |rw: [f64; 3]| -> Vec<FcRows> {
            rw.iter()
                .map(|&r| parse_fc_rows(&rows(2_500.0, r)).expect("rows"))
                .collect()
        };
        let want = ((1_192.0 + 1_343.0) / 2.0 - 100.0) / 2.0 * 1e-9;
        assert!((polling_one_way_s(&runs([1_192.0, 55_634.0, 1_343.0])) - want).abs() < 1e-15);
        // Three polled runs at two cross-CPU levels: the median, not the lowest.
        let v = polling_one_way_s(&runs([531.0, 1_052.0, 1_062.0]));
        assert!((v - (1_052.0 - 100.0) / 2.0 * 1e-9).abs() < 1e-15, "{v}");
        assert!(polling_one_way_s(&[]).is_nan());
    }
}
