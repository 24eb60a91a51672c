//! The host calls the conformance runner needs: becoming the subreaper of what it starts (so a
//! test's orphaned daemons stay findable), listing a process's descendants from /proc, killing
//! and reaping them.

use std::collections::BTreeMap;

/// Makes this process the child subreaper: orphans of the processes it starts are reparented to
/// it instead of init, so `descendants(own pid)` still finds them.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes one integer argument and touches no memory of ours.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Every live descendant of `root` (not `root` itself), from the parent links in /proc/PID/stat.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid …": comm may hold spaces and parentheses; the last ')' ends it.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

/// SIGKILL to one process (ESRCH, already gone, is not an error worth reporting).
pub fn kill(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a positive pid and a valid signal touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// SIGKILL to a process group.
pub fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid (a group) and a valid signal touches no memory.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Reaps one exited child of this process if any is waiting (orphans reparented to us, the
/// subreaper); false when none is.
pub fn reap_one() -> bool {
    let mut status = 0;
    // SAFETY: waitpid writes only the status integer we pass.
    let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    r > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_grandchild_is_a_descendant_and_dies() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .expect("sh runs");
        let mut found = Vec::new();
        for _ in 0..200 {
            found = descendants(sh.id());
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(found.len(), 1, "sh's sleep: {found:?}");
        assert!(descendants(std::process::id()).contains(&sh.id()));
        // sh first: once its sleep is dead, `wait` returns 0 and sh could exit with success
        // before a later kill reached it.
        kill(sh.id());
        for p in &found {
            kill(*p);
        }
        let st = sh.wait().expect("wait sh");
        assert!(!st.success());
    }
}
