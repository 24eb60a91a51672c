//! One run of a program with a time limit: output to a log file, stdin empty, its own process
//! group; at the end (a timeout, or a clean exit that left processes behind) every process it
//! started is killed and reaped, wherever it went (the caller is the subreaper, `sys`).

use super::sys;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ran {
    /// The exit code; None when it was killed by a signal or timed out.
    pub code: Option<i32>,
    /// The signal that ended it (ours, SIGKILL, after a timeout).
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    /// Processes still alive after it ended (or when it was killed), now killed.
    pub leftovers: usize,
}

impl Ran {
    pub fn describe(&self) -> String {
        let left = if self.leftovers > 0 {
            format!(", {} leftover process(es) killed", self.leftovers)
        } else {
            String::new()
        };
        match (self.timed_out, self.code, self.signal) {
            (true, _, _) => format!("timed out after {:.0} s{left}", self.seconds),
            (_, Some(c), _) => format!("exit {c}{left}"),
            (_, None, Some(s)) => format!("killed by signal {s}{left}"),
            _ => format!("ended{left}"),
        }
    }
}

/// Runs `cmd` with its stdout and stderr in `log`, killing its whole tree after `limit`.
pub fn run(cmd: &mut Command, limit: Duration, log: &Path) -> std::io::Result<Ran> {
    let out = std::fs::File::create(log)?;
    let err = out.try_clone()?;
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0)
        .spawn()?;
    let pid = child.id();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if t0.elapsed() >= limit {
            timed_out = true;
            // Its descendants first, while they are still linked to it.
            for p in sys::descendants(pid) {
                sys::kill(p);
            }
            sys::kill_group(pid);
            sys::kill(pid);
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = t0.elapsed().as_secs_f64();
    let leftovers = kill_tree(std::process::id());
    Ok(Ran {
        code: if timed_out { None } else { status.code() },
        signal: status.signal(),
        timed_out,
        seconds,
        leftovers,
    })
}

/// Kills every descendant of `root` until none is left, reaps what was ours, and returns how
/// many processes it killed.
fn kill_tree(root: u32) -> usize {
    let mut killed = std::collections::BTreeSet::new();
    for _ in 0..100 {
        let left: Vec<u32> = sys::descendants(root)
            .into_iter()
            .filter(|p| !is_zombie(*p))
            .collect();
        while sys::reap_one() {}
        if left.is_empty() {
            break;
        }
        for p in left {
            sys::kill(p);
            killed.insert(p);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    while sys::reap_one() {}
    killed.len()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next().map(|st| st == "Z"))
        })
        .unwrap_or(true)
}
