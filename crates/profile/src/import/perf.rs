//! `perf trace -s` summaries: one table per thread, times in milliseconds.
//!
//! ```text
//!    syscall            calls  errors  total       min       avg       max       stddev
//!                                      (msec)    (msec)    (msec)    (msec)        (%)
//!    --------------- --------  ------ -------- --------- --------- ---------     ------
//!    read                  50      0     0.123     0.001     0.002     0.010      5.00%
//! ```
//! Older perf versions have no `errors` column; columns are located by the header's names.
//!
//! A thread or process made while perf traces sees its own return from the clone, clone3, fork
//! or vfork that made it, without the entry: perf counts that return as a call of 0 ms in the new
//! task's table (`clone3  1  0  0.000  0.000 …`), so summing every table counted each such call
//! twice (16 clone3 for 8 threads). A task is made once: in each table, one call of that family
//! whose time is 0 (the row's `min`, or its `total` without a `min` column) is its birth, not a
//! call, and is left out.

use super::{push_row, syscall_number};
use crate::error::ProfileError;
use crate::format::SyscallStats;

/// The calls that make a task: the new task returns from them too.
const CREATE: [&str; 4] = ["clone", "clone3", "fork", "vfork"];

struct Columns {
    calls: usize,
    errors: Option<usize>,
    total: usize,
    min: Option<usize>,
    max: Option<usize>,
}

pub(super) fn parse(origin: &str, text: &str) -> Result<Vec<SyscallStats>, ProfileError> {
    let mut out = Vec::new();
    let mut cols: Option<Columns> = None;
    // Whether this table's birth row (module comment) has been left out already.
    let mut born = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"syscall") && words.contains(&"calls") {
            let at = |n: &str| words.iter().position(|w| *w == n);
            let (Some(calls), Some(total)) = (at("calls"), at("total")) else {
                return Err(ProfileError::Import {
                    path: origin.into(),
                    line: i + 1,
                    msg: "perf header lacks 'calls' or 'total'".into(),
                });
            };
            born = false;
            cols = Some(Columns {
                calls,
                errors: at("errors"),
                total,
                min: at("min"),
                max: at("max"),
            });
            continue;
        }
        let Some(c) = &cols else { continue };
        if line.is_empty() {
            cols = None; // end of this thread's table
            continue;
        }
        if line.starts_with('(') || line.starts_with("---") {
            continue;
        }
        let bad = |msg: String| ProfileError::Import {
            path: origin.into(),
            line: i + 1,
            msg,
        };
        let num = |idx: usize, what: &str| -> Result<f64, ProfileError> {
            words
                .get(idx)
                .and_then(|w| w.trim_end_matches('%').parse::<f64>().ok())
                .ok_or_else(|| {
                    bad(format!(
                        "{what} column '{}' is not a number",
                        words.get(idx).copied().unwrap_or("")
                    ))
                })
        };
        let name = words[0];
        let mut count = num(c.calls, "calls")? as u64;
        let errors = match c.errors {
            Some(e) => num(e, "errors")? as u64,
            None => 0,
        };
        let ms = |v: f64| v * 1e-3;
        let total_s = ms(num(c.total, "total")?);
        let mut min_s = c.min.map(|k| num(k, "min")).transpose()?.map(ms);
        let max_s = c.max.map(|k| num(k, "max")).transpose()?.map(ms);
        if !born && CREATE.contains(&name) && count > 0 && min_s.unwrap_or(total_s) == 0.0 {
            // The new task's own return from the call that made it (module comment).
            born = true;
            count -= 1;
            if count == 0 {
                continue;
            }
            min_s = None; // the 0 was the birth's; the real calls' minimum is not printed
        }
        let nr = syscall_number(origin, i + 1, name)?;
        push_row(
            origin,
            i + 1,
            &mut out,
            SyscallStats {
                name: name.into(),
                nr,
                count,
                total_s,
                errors,
                min_s,
                max_s,
                ..Default::default()
            },
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "
 Summary of events:

 ls (2638), 290 events, 97.3%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   mmap                  30      0     0.311     0.008     0.010     0.026      6.40%
   openat                34     13     0.276     0.007     0.008     0.020      4.96%

 ls (2639), 10 events, 2.7%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   mmap                   2      0     0.020     0.004     0.010     0.016      6.40%
";

    #[test]
    fn sums_threads() {
        let rows = parse("p.txt", SAMPLE).unwrap_or_default();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].count, 32);
        assert!((rows[0].total_s - 0.000331).abs() < 1e-12);
        assert_eq!(rows[0].min_s, Some(0.004e-3));
        assert_eq!(rows[0].max_s, Some(0.026e-3));
        assert_eq!(rows[1].errors, 13);
    }
}
