//! `multios fc`: the paper's Table 3 forwarding microbenchmarks (crates/emulate's `fc`) for each
//! mechanism — which mechanisms run, and the table's rows from what they measured.

use crate::ExperimentError;
use multios_emulate::fc::{FcReport, CALLS};
use multios_emulate::Mechanism;

/// The mechanisms to measure: `requested`, or every one this build implements when empty.
pub fn mechanisms(requested: &[Mechanism]) -> Result<Vec<Mechanism>, ExperimentError> {
    let mechs: Vec<Mechanism> = if requested.is_empty() {
        Mechanism::ALL.into_iter().filter(|m| m.available()).collect()
    } else {
        requested.to_vec()
    };
    if let Some(m) = mechs.iter().find(|m| !m.available()) {
        return Err(ExperimentError::Config(format!(
            "mechanism '{}' is not available in this build: use proxy or migrate",
            m.name()
        )));
    }
    Ok(mechs)
}

/// The table's header: the call, native min/median, then per mechanism its min/median and the
/// median it adds to native.
pub fn header(mechs: &[Mechanism]) -> Vec<String> {
    let mut header = vec!["call".to_string(), "native min/med ns".to_string()];
    for m in mechs {
        header.push(format!("{} min/med ns", m.name()));
        header.push(format!("{} added med ns", m.name()));
    }
    header
}

/// One row per call measured natively (`-` where a mechanism has no cell), then the cross-core
/// cache-line round trip for reference. Times in whole ns.
pub fn rows(r: &FcReport, mechs: &[Mechanism]) -> Vec<Vec<String>> {
    let ns = |s: f64| format!("{:.0}", s * 1e9);
    let mut rows = Vec::new();
    for (call, _) in CALLS {
        let Some(nat) = r.get(call, "native") else {
            continue;
        };
        let mut row = vec![call.to_string(), format!("{}/{}", ns(nat.min), ns(nat.median))];
        for m in mechs {
            match r.get(call, m.name()) {
                Some(s) => {
                    row.push(format!("{}/{}", ns(s.min), ns(s.median)));
                    row.push(ns(s.median - nat.median));
                }
                None => row.extend(["-".to_string(), "-".to_string()]),
            }
        }
        rows.push(row);
    }
    let c = &r.cacheline;
    let mut row = vec![
        "cache-line round trip".to_string(),
        format!("{}/{}", ns(c.min), ns(c.median)),
    ];
    for _ in mechs {
        row.extend(["".to_string(), "".to_string()]);
    }
    rows.push(row);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_emulate::fc::Cell;
    use multios_emulate::Summary;

    fn summary(min: f64, median: f64) -> Summary {
        Summary {
            n: 10,
            min,
            median,
            p99: median,
            mean: median,
        }
    }

    #[test]
    fn issue_17_rows_add_the_mechanisms_median_to_native_and_end_with_the_cache_line() {
        let (call, _) = CALLS[0];
        let r = FcReport {
            trials: 10,
            compute_cpu: 0,
            control_cpu: 1,
            cells: vec![
                Cell {
                    call: call.into(),
                    mode: "native".into(),
                    time: summary(100e-9, 120e-9),
                },
                Cell {
                    call: call.into(),
                    mode: "proxy".into(),
                    time: summary(2000e-9, 2500e-9),
                },
            ],
            cacheline: summary(90e-9, 95e-9),
        };
        let mechs = [Mechanism::Proxy, Mechanism::Migrate];
        assert_eq!(header(&mechs).len(), 6);
        let rows = rows(&r, &mechs);
        assert_eq!(rows.len(), 2, "one call measured, then the cache line");
        assert_eq!(rows[0], [call, "100/120", "2000/2500", "2380", "-", "-"]);
        assert_eq!(rows[1], ["cache-line round trip", "90/95", "", "", "", ""]);
    }

    #[test]
    fn issue_17_the_default_is_every_available_mechanism() {
        let all = mechanisms(&[]).expect("available");
        assert!(all.iter().all(|m| m.available()));
    }
}
