//! `strace -c [-w] [-f]` summary tables.
//!
//! ```text
//! % time     seconds  usecs/call     calls    errors syscall
//! ------ ----------- ----------- --------- --------- ----------------
//!  54.32    0.003125           4       751           write
//! ------ ----------- ----------- --------- --------- ----------------
//! 100.00    0.005753           3      1812         2 total
//! ```
//! The errors column is blank when zero. strace prints one table per personality; all are read.

use super::{push_row, syscall_number};
use crate::error::ProfileError;
use crate::format::SyscallStats;

pub(super) fn parse(origin: &str, text: &str) -> Result<Vec<SyscallStats>, ProfileError> {
    let mut out = Vec::new();
    let mut in_table = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("% time") {
            in_table = true;
            continue;
        }
        if !in_table || line.is_empty() || line.starts_with("---") {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let bad = |msg: String| ProfileError::Import {
            path: origin.into(),
            line: i + 1,
            msg,
        };
        let Some(&name) = cols.last() else { continue };
        if name == "total" {
            in_table = false;
            continue;
        }
        // % time, seconds, usecs/call, calls, [errors], name
        if !(5..=6).contains(&cols.len()) {
            return Err(bad(format!(
                "expected 5 or 6 columns (% time, seconds, usecs/call, calls, [errors], syscall), found {}",
                cols.len()
            )));
        }
        let secs: f64 = cols[1]
            .parse()
            .map_err(|_| bad(format!("seconds column '{}' is not a number", cols[1])))?;
        let calls: u64 = cols[3]
            .parse()
            .map_err(|_| bad(format!("calls column '{}' is not an integer", cols[3])))?;
        let errors: u64 = if cols.len() == 6 {
            cols[4]
                .parse()
                .map_err(|_| bad(format!("errors column '{}' is not an integer", cols[4])))?
        } else {
            0
        };
        let nr = syscall_number(origin, i + 1, name)?;
        push_row(
            origin,
            i + 1,
            &mut out,
            SyscallStats {
                name: name.into(),
                nr,
                count: calls,
                total_s: secs,
                errors,
                ..Default::default()
            },
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 54.32    0.003125           4       751           write
 40.76    0.002345           2       993           read
  0.20    0.000012           1        13         3 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.005482           3      1757         3 total
";

    #[test]
    fn reads_rows() {
        let rows = parse("s.txt", SAMPLE).unwrap_or_default();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].name, "write");
        assert_eq!(rows[0].count, 751);
        assert_eq!(rows[2].errors, 3);
        assert!((rows[1].total_s - 0.002345).abs() < 1e-12);
    }

    #[test]
    fn bad_line_is_named() {
        let e = parse("s.txt", &SAMPLE.replace("993", "lots"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "s.txt:4: calls column 'lots' is not an integer");
        let e = parse("s.txt", &SAMPLE.replace(" read", " raed"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("s.txt:4: unknown system call 'raed'"), "{e}");
    }

    #[test]
    fn issue_16_counts_that_overflow_over_rows_name_the_row() {
        let text = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 54.32    0.003125           4 18446744073709551615           write
 40.76    0.002345           2       993           write
";
        let e = parse("s.txt", text).expect_err("wraps").to_string();
        assert!(
            e.contains("s.txt:4") && e.contains("'write'") && e.contains("2^64"),
            "{e}"
        );
    }
}
