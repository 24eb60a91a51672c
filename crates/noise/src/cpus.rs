//! CPU lists ("0", "0,1", "0-3,6") and the set of online CPUs.

use std::fmt::Write as _;

/// An error in a CPU list or a CPU that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error(
        "CPU list '{0}' is not a comma-separated list of CPU numbers or ranges (e.g. '0', '0,1', '0-3')"
    )]
    Syntax(String),
    #[error("CPU list '{0}' is empty")]
    Empty(String),
    #[error("CPU {cpu} is not online; online CPUs: {online} (see /sys/devices/system/cpu/online)")]
    NotOnline { cpu: usize, online: String },
    #[error("cannot read the online CPUs from {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin { cpu: usize, source: std::io::Error },
    #[error("no CPU is left for the load: the measured CPUs {measured} are all the online CPUs ({online}); pass --load-cpus or --isolate none")]
    NoneLeft { measured: String, online: String },
}

/// Parses a Linux CPU list: numbers and inclusive ranges separated by commas. Sorted, deduplicated.
pub fn parse_list(s: &str) -> Result<Vec<usize>, CpuError> {
    let mut out = Vec::new();
    let t = s.trim();
    if t.is_empty() {
        return Err(CpuError::Empty(s.to_string()));
    }
    for part in t.split(',') {
        let part = part.trim();
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| CpuError::Syntax(s.to_string()))
        };
        if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(CpuError::Syntax(s.to_string()));
            }
            out.extend(a..=b);
        } else {
            out.push(num(part)?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats CPUs as a compact list ("0-3,6").
pub fn format_list(cpus: &[usize]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        if j > i {
            let _ = write!(s, "{}-{}", cpus[i], cpus[j]);
        } else {
            let _ = write!(s, "{}", cpus[i]);
        }
        i = j + 1;
    }
    s
}

const ONLINE: &str = "/sys/devices/system/cpu/online";

/// The online CPUs, from /sys/devices/system/cpu/online.
pub fn online() -> Result<Vec<usize>, CpuError> {
    let text = std::fs::read_to_string(ONLINE).map_err(|source| CpuError::Read {
        path: ONLINE.to_string(),
        source,
    })?;
    parse_list(&text)
}

/// Checks that every CPU in `cpus` is online.
pub fn check_online(cpus: &[usize], online: &[usize]) -> Result<(), CpuError> {
    for &cpu in cpus {
        if !online.contains(&cpu) {
            return Err(CpuError::NotOnline {
                cpu,
                online: format_list(online),
            });
        }
    }
    Ok(())
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
        assert!(matches!(parse_list("a"), Err(CpuError::Syntax(_))));
        assert!(matches!(parse_list("3-1"), Err(CpuError::Syntax(_))));
        assert!(matches!(parse_list(" "), Err(CpuError::Empty(_))));
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
