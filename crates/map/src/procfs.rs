//! What /proc says about a process, for the recorder and `map run`.

/// The thread ids of process `pid` (none when it is gone).
pub(crate) fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` is a kernel thread (PF_KTHREAD in the flags of /proc/PID/stat).
pub(crate) fn is_kernel_thread(pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // after "pid (comm) ": state ppid pgrp session tty_nr tpgid flags
            let rest = s.rsplit_once(") ")?.1;
            rest.split_whitespace().nth(6)?.parse::<u64>().ok()
        })
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

/// The environment variables MPI launchers set to a process's rank (Open MPI, PMIx, MPICH's PMI).
const RANK_VARS: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"];

/// The MPI rank of process `pid`, from its environment (/proc/PID/environ), if a launcher set one.
pub(crate) fn mpi_rank(pid: u32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    rank_in(&env)
}

fn rank_in(environ: &[u8]) -> Option<u32> {
    RANK_VARS.iter().find_map(|var| {
        environ.split(|&b| b == 0).find_map(|kv| {
            let kv = std::str::from_utf8(kv).ok()?;
            kv.strip_prefix(var)?.strip_prefix('=')?.parse().ok()
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn kthreadd_is_a_kernel_thread_and_this_is_not() {
        assert!(super::is_kernel_thread(2));
        assert!(!super::is_kernel_thread(std::process::id()));
    }

    #[test]
    fn finds_the_rank_a_launcher_set() {
        assert_eq!(super::rank_in(b"PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0"), Some(3));
        assert_eq!(super::rank_in(b"PMIX_RANK=7\0"), Some(7));
        assert_eq!(super::rank_in(b"OMPI_COMM_WORLD_RANKS=1\0HOME=/\0"), None);
    }
}
