//! `perf trace` records (the default output, not `-s`): one line per call,
//! `  0.052 ( 0.007 ms): comm/tid name(args…) = ret`. Times are milliseconds from the start. A call
//! that blocked is printed twice: its entry without a duration (`( )`, skipped here) and later
//! `… [continued]: name()) = ret` with its duration, which counts. Other lines (signals, page
//! faults, the `[continued]` of a call whose entry perf did not time: `? ( )`) are skipped.

use super::records::CallRecord;
use crate::error::ProfileError;

/// Whether `text` looks like `perf trace` records.
pub fn detect(text: &str) -> bool {
    text.lines().take(50).any(|l| parse_line(l).is_some())
}

/// The records of `text`; `origin` names it in errors.
pub fn parse(origin: &str, text: &str) -> Result<Vec<CallRecord>, ProfileError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(r) = parse_line(line) else { continue };
        let nr = super::syscall_number(origin, i + 1, &r.name)?;
        out.push(CallRecord { nr, ..r });
    }
    Ok(out)
}

/// One timed call line, with `nr` left 0 (the caller looks the name up).
fn parse_line(line: &str) -> Option<CallRecord> {
    let t = line.trim_start();
    let (ts, rest) = t.split_once(" (")?;
    let start_ms: f64 = ts.trim().parse().ok()?;
    let (dur, rest) = rest.split_once("):")?;
    let dur = dur.trim().strip_suffix("ms")?.trim();
    let duration_ms: f64 = dur.parse().ok()?;
    let rest = rest.trim_start();
    // comm/tid: the first "/digits " (a comm may contain '/')
    let (comm, tid, after) = comm_tid(rest)?;
    let after = after.trim_start();
    let call = after
        .strip_prefix("... [continued]:")
        .map_or(after, str::trim_start);
    let paren = call.find('(')?;
    let name = &call[..paren];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let ret = call.rsplit_once(" = ").map(|(_, r)| r.trim());
    let error = ret.is_some_and(|r| {
        r.starts_with('-') && r.split_whitespace().nth(1).is_some_and(|e| e.starts_with('E'))
    });
    Some(CallRecord {
        tid,
        pid: None,
        comm: comm.to_string(),
        name: name.to_string(),
        nr: 0,
        start_s: start_ms * 1e-3,
        duration_s: duration_ms * 1e-3,
        error,
    })
}

fn comm_tid(s: &str) -> Option<(&str, u32, &str)> {
    for (i, _) in s.match_indices('/') {
        let tail = &s[i + 1..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(' ') {
            return Some((&s[..i], tail[..digits].parse().ok()?, &tail[digits..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
         ? (         ): sh/26221  ... [continued]: execve())                                           = 0
     0.052 ( 0.007 ms): sh/26221 brk()                                                                 = 0x55d3027cc000
     0.155 ( 0.009 ms): sh/26221 access(filename: 0x6d7e32a0, mode: R)                                 = -1 ENOENT (No such file or directory)
     0.170 ( 0.009 ms): sh/26221 openat(dfd: CWD, filename: 0x6d7e20b1, flags: RDONLY|CLOEXEC)         = 4
     1.000 (         ): sh/26221 wait4(upid: -1, stat_addr: 0x7ffc3c1b1a3c)                       ...
     1.100 ( 0.012 ms): ls/26222 write(fd: 1, buf: 0x55, count: 4)                                    = 4
     1.000 ( 0.500 ms): sh/26221  ... [continued]: wait4())                                            = 26222
";

    #[test]
    fn issue_18_perf_trace_records_parse_into_calls() {
        let r = parse("pt.txt", SAMPLE).expect("parse");
        let names: Vec<&str> = r.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["brk", "access", "openat", "write", "wait4"]);
        assert_eq!(r[0].tid, 26221);
        assert_eq!(r[0].comm, "sh");
        assert!((r[0].start_s - 52e-6).abs() < 1e-12 && (r[0].duration_s - 7e-6).abs() < 1e-12);
        assert!(r[1].error && !r[2].error);
        assert_eq!(r[3].tid, 26222);
        assert!((r[4].duration_s - 5e-4).abs() < 1e-12);
        assert!(detect(SAMPLE));
        assert!(!detect("Summary of events:\n"));
    }

    #[test]
    fn issue_18_perf_trace_records_make_a_profile() {
        let r = parse("pt.txt", SAMPLE).expect("parse");
        let p = super::super::records::profile_of("pt.txt", "perf trace", vec!["sh".into()], &r)
            .expect("profile");
        assert_eq!(p.syscall_count(), 5);
        assert_eq!(p.threads.len(), 2);
        // first entry 0.052 ms, last exit 1.5 ms
        assert!(
            (p.wall_time_s - (1.5e-3 - 52e-6)).abs() < 1e-12,
            "{}",
            p.wall_time_s
        );
        let wait4 = p.syscalls.iter().find(|s| s.name == "wait4").expect("wait4");
        assert_eq!(wait4.count, 1);
        assert_eq!(p.syscalls[0].name, "wait4", "sorted by g(s)");
        let access = p.syscalls.iter().find(|s| s.name == "access").expect("access");
        assert_eq!(access.errors, 1);
    }

    #[test]
    fn issue_18_unknown_calls_name_the_line() {
        let e = parse("pt.txt", "     0.1 ( 0.001 ms): x/1 nosuchcall() = 0\n").expect_err("unknown");
        assert!(
            e.to_string().contains("pt.txt") && e.to_string().contains("nosuchcall"),
            "{e}"
        );
    }
}
