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
    fn finds_the_rank_a_launcher_set() {
        assert_eq!(super::rank_in(b"PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0"), Some(3));
        assert_eq!(super::rank_in(b"PMIX_RANK=7\0"), Some(7));
        assert_eq!(super::rank_in(b"OMPI_COMM_WORLD_RANKS=1\0HOME=/\0"), None);
    }
}
