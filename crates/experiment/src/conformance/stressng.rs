//! stress-ng's verdict on one stressor: its exit status (stress-ng(1), "EXIT STATUS") and the
//! bogo-ops figure of `--metrics-brief`.

use super::junit::Outcome;

/// What stress-ng's exit status says (stress-ng 0.15, `--STRESSOR 1 -t 2s --verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0: success.
    Passed,
    /// 1: bad options or a fatal resource problem in the harness.
    HarnessError,
    /// 2: the stressor failed (with `--verify`: a wrong result).
    Failed,
    /// 3: no resource: ENOMEM, ENOSPC, a missing or unimplemented system call.
    NoResource,
    /// 4: not implemented on this architecture or OS.
    NotImplemented,
    /// 5: killed by an unexpected signal.
    Signalled,
    /// 6: exited unexpectedly; no metrics.
    UnexpectedExit,
    /// 7: the bogo-ops counters may be untrustworthy.
    BadMetrics,
    /// Any other status.
    Other(i32),
}

impl Status {
    pub fn from_code(code: i32) -> Status {
        match code {
            0 => Status::Passed,
            1 => Status::HarnessError,
            2 => Status::Failed,
            3 => Status::NoResource,
            4 => Status::NotImplemented,
            5 => Status::Signalled,
            6 => Status::UnexpectedExit,
            7 => Status::BadMetrics,
            c => Status::Other(c),
        }
    }

    /// Passed, failed or skipped: a stressor that could not run (no resource, not implemented)
    /// is skipped, every other non-zero status is a failure.
    pub fn outcome(self) -> Outcome {
        match self {
            Status::Passed => Outcome::Passed,
            Status::NoResource | Status::NotImplemented => Outcome::Skipped,
            _ => Outcome::Failed,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Status::Passed => "passed".into(),
            Status::HarnessError => "harness error (exit 1)".into(),
            Status::Failed => "failed (exit 2)".into(),
            Status::NoResource => "no resource (exit 3)".into(),
            Status::NotImplemented => "not implemented (exit 4)".into(),
            Status::Signalled => "killed by a signal (exit 5)".into(),
            Status::UnexpectedExit => "unexpected exit (exit 6)".into(),
            Status::BadMetrics => "untrustworthy metrics (exit 7)".into(),
            Status::Other(c) => format!("exit {c}"),
        }
    }
}

/// The stressor's bogo ops from `--metrics-brief` (`stress-ng: metrc: [pid] NAME OPS REAL USR SYS
/// RATE RATE`), when stress-ng printed the row.
pub fn bogo_ops(output: &str, stressor: &str) -> Option<u64> {
    output.lines().find_map(|line| {
        let rest = line.split_once("metrc:")?.1;
        let mut words = rest.split_whitespace().skip(1);
        (words.next()? == stressor).then_some(())?;
        words.next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from `stress-ng --pipe 1 -t 2s --verify --metrics-brief` natively.
    const NATIVE: &str = "\
stress-ng: info:  [26780] setting to a 2 second run per stressor
stress-ng: info:  [26780] dispatching hogs: 1 pipe
stress-ng: metrc: [26780] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [26780]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [26780] pipe             533111      2.00      0.39      1.12    266490.57      353839.12
stress-ng: metrc: [26780] miscellaneous metrics:
stress-ng: metrc: [26780] pipe                 130.18 MB per sec pipe write rate (geometic mean of 1 instances)
stress-ng: info:  [26780] successful run completed in 2.00s
";

    #[test]
    fn exit_codes_map_to_outcomes() {
        let want = [
            (0, Outcome::Passed),
            (1, Outcome::Failed),
            (2, Outcome::Failed),
            (3, Outcome::Skipped),
            (4, Outcome::Skipped),
            (5, Outcome::Failed),
            (6, Outcome::Failed),
            (7, Outcome::Failed),
            (99, Outcome::Failed),
        ];
        for (code, outcome) in want {
            assert_eq!(Status::from_code(code).outcome(), outcome, "exit {code}");
        }
        assert_eq!(Status::from_code(4).describe(), "not implemented (exit 4)");
    }

    #[test]
    fn bogo_ops_from_metrics_brief() {
        assert_eq!(bogo_ops(NATIVE, "pipe"), Some(533_111));
        assert_eq!(bogo_ops(NATIVE, "fifo"), None);
        // The header row and the miscellaneous rows are not a count.
        assert_eq!(bogo_ops(NATIVE, "stressor"), None);
    }
}
