//! The emulator's CPU split: the program runs on the compute CPUs, the delegates (Linux's side)
//! on the control CPUs. CPU sets themselves belong to `multios-host`.

pub use multios_host::cpus::pin_current_thread;
pub use multios_host::{CpuListError, CpuSet};

/// A CPU list given for a flag that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{flag}: {cause}")]
pub struct CpuError {
    pub flag: &'static str,
    pub cause: CpuListError,
}

/// Parses the CPU list given for `flag` and checks every CPU against `available`.
pub fn parse_flag(flag: &'static str, input: &str, available: &CpuSet) -> Result<CpuSet, CpuError> {
    CpuSet::parse_within(input, available).map_err(|cause| CpuError { flag, cause })
}

/// The default split: the program on the first available CPU, Linux on the last.
pub fn default_split(available: &CpuSet) -> (CpuSet, CpuSet) {
    let first = available.first().unwrap_or(0);
    let last = available.last().unwrap_or(0);
    (CpuSet([first].into()), CpuSet([last].into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avail() -> CpuSet {
        CpuSet((0..4).collect())
    }

    #[test]
    fn parses_lists_and_ranges() {
        let s = parse_flag("--compute-cpus", "0,2-3", &avail()).ok();
        assert_eq!(s.map(|s| s.to_vec()), Some(vec![0, 2, 3]));
    }

    #[test]
    fn rejects_missing_cpus_and_bad_syntax() {
        let e = parse_flag("--control-cpus", "7", &avail())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("--control-cpus: CPU list '7': ")
                && e.contains("CPU 7 does not exist")
                && e.contains("available: 0-3"),
            "{e}"
        );
        let e = parse_flag("--control-cpus", "x", &avail())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("'x' is not a CPU"), "{e}");
        assert!(parse_flag("--control-cpus", "3-1", &avail()).is_err());
        assert!(parse_flag("--control-cpus", "", &avail()).is_err());
    }

    #[test]
    fn the_default_split_puts_linux_on_the_last_cpu() {
        let (c, l) = default_split(&avail());
        assert_eq!((c.to_vec(), l.to_vec()), (vec![0], vec![3]));
    }
}
