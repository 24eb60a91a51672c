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
