//! CPU lists (`0`, `0-3,6`) checked against the CPUs this process may run on.

use std::collections::BTreeSet;

/// An error in a CPU list.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error("{flag} '{input}': '{part}' is not a CPU number or range (write e.g. 0, 2-3 or 0,2-3)")]
    Syntax {
        flag: &'static str,
        input: String,
        part: String,
    },
    #[error("{flag} '{input}': CPU {cpu} does not exist or is not available here (available: {avail})")]
    Missing {
        flag: &'static str,
        input: String,
        cpu: usize,
        avail: String,
    },
    #[error("{flag} is empty")]
    Empty { flag: &'static str },
}

/// A non-empty set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct CpuSet(pub BTreeSet<usize>);

impl CpuSet {
    /// Parses `input` (for the flag named `flag`) and checks every CPU against `available`.
    pub fn parse(flag: &'static str, input: &str, available: &CpuSet) -> Result<CpuSet, CpuError> {
        let mut set = BTreeSet::new();
        let syntax = |part: &str| CpuError::Syntax {
            flag,
            input: input.into(),
            part: part.into(),
        };
        for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let lo: usize = lo.parse().map_err(|_| syntax(part))?;
            let hi: usize = hi.parse().map_err(|_| syntax(part))?;
            if hi < lo {
                return Err(syntax(part));
            }
            for c in lo..=hi {
                if !available.0.contains(&c) {
                    return Err(CpuError::Missing {
                        flag,
                        input: input.into(),
                        cpu: c,
                        avail: available.to_string(),
                    });
                }
                set.insert(c);
            }
        }
        if set.is_empty() {
            return Err(CpuError::Empty { flag });
        }
        Ok(CpuSet(set))
    }

    /// The CPUs this process may run on (its affinity mask).
    pub fn available() -> CpuSet {
        let mut set = BTreeSet::new();
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
        unsafe {
            let mut mask: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) == 0 {
                for c in 0..libc::CPU_SETSIZE as usize {
                    if libc::CPU_ISSET(c, &mask) {
                        set.insert(c);
                    }
                }
            }
        }
        if set.is_empty() {
            set.insert(0);
        }
        CpuSet(set)
    }

    /// The default split: the program on the first available CPU, Linux on the last.
    pub fn default_split(available: &CpuSet) -> (CpuSet, CpuSet) {
        let first = available.0.iter().next().copied().unwrap_or(0);
        let last = available.0.iter().next_back().copied().unwrap_or(0);
        (CpuSet([first].into()), CpuSet([last].into()))
    }

    pub fn first(&self) -> usize {
        self.0.iter().next().copied().unwrap_or(0)
    }

    pub fn overlaps(&self, other: &CpuSet) -> bool {
        self.0.intersection(&other.0).next().is_some()
    }

    /// As a `cpu_set_t`.
    pub fn to_libc(&self) -> libc::cpu_set_t {
        // SAFETY: a zeroed cpu_set_t is a valid empty set.
        let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &self.0 {
            if c < libc::CPU_SETSIZE as usize {
                // SAFETY: `c` is below CPU_SETSIZE, so the bit lies inside `mask`.
                unsafe { libc::CPU_SET(c, &mut mask) };
            }
        }
        mask
    }
}

impl std::fmt::Display for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&v.join(","))
    }
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &CpuSet) -> std::io::Result<()> {
    let mask = cpus.to_libc();
    // SAFETY: `mask` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avail() -> CpuSet {
        CpuSet((0..4).collect())
    }

    #[test]
    fn parses_lists_and_ranges() {
        let s = CpuSet::parse("--compute-cpus", "0,2-3", &avail()).ok();
        assert_eq!(s.map(|s| s.to_string()), Some("0,2,3".into()));
    }

    #[test]
    fn rejects_missing_cpus_and_bad_syntax() {
        let e = CpuSet::parse("--control-cpus", "7", &avail())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("CPU 7 does not exist") && e.contains("available: 0,1,2,3"),
            "{e}"
        );
        let e = CpuSet::parse("--control-cpus", "x", &avail())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("'x' is not a CPU"), "{e}");
        assert!(CpuSet::parse("--control-cpus", "3-1", &avail()).is_err());
        assert!(CpuSet::parse("--control-cpus", "", &avail()).is_err());
    }
}
