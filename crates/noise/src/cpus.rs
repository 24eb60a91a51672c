//! The noise tools' CPU questions: which CPUs are measured, which take the load. CPU lists
//! themselves ("0", "0,1", "0-3,6") belong to `multios-host`.

pub use multios_host::cpus::format_list;
use multios_host::{CpuListError, CpuSet};

/// An error in a CPU list or a CPU that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error("{0}")]
    List(#[from] CpuListError),
    #[error("CPU {cpu} is not online; online CPUs: {online} (see /sys/devices/system/cpu/online)")]
    NotOnline { cpu: usize, online: String },
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin { cpu: usize, source: std::io::Error },
    #[error("no CPU is left for the load: the measured CPUs {measured} are all the online CPUs ({online}); pass --load-cpus or --isolate none")]
    NoneLeft { measured: String, online: String },
}

/// Parses a Linux CPU list: numbers and inclusive ranges separated by commas. Sorted, deduplicated.
pub fn parse_list(s: &str) -> Result<Vec<usize>, CpuError> {
    Ok(CpuSet::parse(s)?.to_vec())
}

/// The online CPUs, from /sys/devices/system/cpu/online.
pub fn online() -> Result<Vec<usize>, CpuError> {
    Ok(CpuSet::online()?.to_vec())
}

/// Checks that every CPU in `cpus` is online.
pub fn check_online(cpus: &[usize], online: &[usize]) -> Result<(), CpuError> {
    let online: CpuSet = online.iter().copied().collect();
    match cpus.iter().copied().collect::<CpuSet>().check_within(&online) {
        Ok(()) => Ok(()),
        Err(cpu) => Err(CpuError::NotOnline {
            cpu,
            online: online.to_string(),
        }),
    }
}

/// The online CPUs not in `measured` (where an isolated load goes by default).
pub fn others(measured: &[usize], online: &[usize]) -> Result<Vec<usize>, CpuError> {
    let rest: Vec<usize> = online.iter().copied().filter(|c| !measured.contains(c)).collect();
    if rest.is_empty() {
        return Err(CpuError::NoneLeft {
            measured: format_list(measured),
            online: format_list(online),
        });
    }
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_lists() {
        assert_eq!(parse_list("0-3,6,2").ok(), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(format_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(parse_list("0\n").ok(), Some(vec![0]));
        assert!(matches!(
            parse_list("a"),
            Err(CpuError::List(CpuListError::Syntax { .. }))
        ));
        assert!(matches!(
            parse_list("3-1"),
            Err(CpuError::List(CpuListError::Syntax { .. }))
        ));
        assert!(matches!(
            parse_list(" "),
            Err(CpuError::List(CpuListError::Empty))
        ));
    }

    #[test]
    fn offline_cpu_names_the_online_set() {
        let e = check_online(&[0, 7], &[0, 1])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("CPU 7 is not online") && e.contains("online CPUs: 0-1"),
            "{e}"
        );
        assert!(matches!(others(&[0, 1], &[0, 1]), Err(CpuError::NoneLeft { .. })));
        assert_eq!(others(&[0], &[0, 1]).ok(), Some(vec![1]));
    }
}
