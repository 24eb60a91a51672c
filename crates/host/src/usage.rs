//! A child's resource usage as wait4(2) reports it: what `/usr/bin/time -v` shows, for one run.

use std::process::{Child, ExitStatus};
use std::time::Instant;

/// One finished child.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Usage {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    /// Minor + major page faults.
    pub page_faults: u64,
    /// Voluntary + involuntary context switches.
    pub context_switches: u64,
    /// The wait status (as `ExitStatus`'s raw value).
    #[serde(skip)]
    pub status: i32,
}

impl Usage {
    pub fn exit_status(&self) -> ExitStatus {
        std::os::unix::process::ExitStatusExt::from_raw(self.status)
    }
}

/// Waits for `child` (started at `t0`) with wait4 and returns its usage. The child is reaped here:
/// do not wait for it again.
pub fn wait(child: Child, t0: Instant) -> std::io::Result<Usage> {
    let (status, ru) = crate::sys::wait4(child.id() as libc::pid_t)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Usage {
        wall_s,
        user_s: secs(ru.ru_utime),
        sys_s: secs(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        page_faults: (ru.ru_minflt + ru.ru_majflt).max(0) as u64,
        context_switches: (ru.ru_nvcsw + ru.ru_nivcsw).max(0) as u64,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_touches_memory_reports_its_usage() {
        let t0 = Instant::now();
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .expect("sh");
        let u = wait(child, t0).expect("wait4");
        assert_eq!(u.exit_status().code(), Some(3));
        assert!(u.max_rss_kib > 0 && u.wall_s > 0.0);
    }
}
