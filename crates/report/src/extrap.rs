//! Per-rank profiles of MPI runs as Extra-P input (its text format: `PARAMETER`, `POINTS`, then per
//! `REGION` and `METRIC` one `DATA` line per point whose values are the repetitions), so that a user
//! can fit scaling models of the time and the syscall share over the rank count.
//!
//! Each input is one merged profile (`multios profile merge`) of a run on p ranks; its per-rank
//! summaries are the repetitions at point p. Metrics: `time` (a rank's wall time, s),
//! `syscall_time` (its Σg, s) and `syscall_share` (Σg / wall).

use crate::error::ReportError;
use multios_profile::Profile;
use std::fmt::Write as _;

/// The Extra-P text for `runs` (source name, merged profile); points are the runs' rank counts.
pub fn extrap_text(runs: &[(String, Profile)]) -> Result<String, ReportError> {
    let mut points: Vec<(usize, &str, &Profile)> = Vec::new();
    for (src, p) in runs {
        if p.ranks.is_empty() {
            return Err(ReportError::Extrap(format!(
                "{src}: no per-rank summaries (write one with `multios profile merge -o FILE prof.*.json`)"
            )));
        }
        if let Some((_, other, _)) = points.iter().find(|x| x.0 == p.ranks.len()) {
            return Err(ReportError::Extrap(format!(
                "{src} and {other} both have {} ranks: give one run per rank count",
                p.ranks.len()
            )));
        }
        points.push((p.ranks.len(), src, p));
    }
    if points.is_empty() {
        return Err(ReportError::Extrap("no runs given".into()));
    }
    points.sort_by_key(|x| x.0);
    let mut o = String::new();
    let _ = writeln!(o, "PARAMETER p");
    let _ = writeln!(
        o,
        "POINTS {}",
        points
            .iter()
            .map(|x| x.0.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(o, "REGION syscalls");
    type Metric = fn(&multios_profile::RankSummary) -> f64;
    let metrics: [(&str, Metric); 3] = [
        ("time", |r| r.wall_time_s),
        ("syscall_time", |r| r.syscall_time_s),
        ("syscall_share", |r| {
            if r.wall_time_s > 0.0 {
                r.syscall_time_s / r.wall_time_s
            } else {
                0.0
            }
        }),
    ];
    for (name, f) in metrics {
        let _ = writeln!(o, "METRIC {name}");
        for (_, _, p) in &points {
            let vals: Vec<String> = p.ranks.iter().map(|r| format!("{:e}", f(r))).collect();
            let _ = writeln!(o, "DATA {}", vals.join(" "));
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_profile::RankSummary;

    fn run(ranks: u32) -> Profile {
        let text = include_str!("../../../examples/bzip2/profile.json");
        let mut p = multios_profile::from_json_str("bzip2.json", text).expect("profile");
        p.ranks = (0..ranks)
            .map(|r| RankSummary {
                rank: r,
                source: format!("prof.{r}.json"),
                wall_time_s: 1.0 + f64::from(r),
                compute_time_s: 0.5,
                syscall_time_s: 0.25,
                syscalls: 10,
                partial: false,
            })
            .collect();
        p
    }

    #[test]
    fn issue_18_extrap_text_has_one_data_line_per_point_and_metric() {
        let t = extrap_text(&[("b".into(), run(4)), ("a".into(), run(2))]).expect("text");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[..3], ["PARAMETER p", "POINTS 2 4", "REGION syscalls"]);
        assert_eq!(lines.iter().filter(|l| l.starts_with("METRIC ")).count(), 3);
        assert_eq!(lines.iter().filter(|l| l.starts_with("DATA ")).count(), 3 * 2);
        // time at p = 2: the two ranks' wall times; the share at p = 4: Σg / wall per rank
        assert_eq!(lines[4], "DATA 1e0 2e0");
        let share: Vec<f64> = lines[lines.len() - 1][5..]
            .split(' ')
            .map(|v| v.parse().expect("number"))
            .collect();
        assert_eq!(share, vec![0.25, 0.125, 0.25 / 3.0, 0.0625]);
    }

    #[test]
    fn issue_18_extrap_refuses_runs_without_ranks_and_duplicate_points() {
        let mut single = run(2);
        single.ranks.clear();
        assert!(extrap_text(&[("x.json".into(), single)])
            .expect_err("no ranks")
            .to_string()
            .contains("x.json"));
        assert!(extrap_text(&[("a".into(), run(2)), ("b".into(), run(2))]).is_err());
    }
}
