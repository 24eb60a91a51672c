//! CPU sets: Linux's list syntax (`0`, `0,1`, `0-3,6`) parsed and formatted, the CPUs that are
//! online and those this thread may use, and pinning.

use crate::sys;
use std::collections::BTreeSet;
use std::fmt;
use std::io;

/// Where Linux lists the online CPUs.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";

/// What is wrong with a CPU list, or with a CPU it names. Each message says "CPU list" itself: a
/// caller prefixes only its flag (a prefix "CPU list" made "CPU list the CPU list is empty").
#[derive(Debug, thiserror::Error)]
pub enum CpuListError {
    #[error("CPU list '{input}': '{part}' is not a CPU number or range (write e.g. 0, 2-3 or 0,2-3)")]
    Syntax { input: String, part: String },
    #[error("the CPU list is empty (write e.g. 0, 2-3 or 0,2-3)")]
    Empty,
    #[error("CPU list '{input}': CPU {cpu} does not exist or is not available here (available: {avail})")]
    Missing {
        input: String,
        cpu: usize,
        avail: String,
    },
    #[error("cannot read the online CPUs from {path}: {source}")]
    Read { path: String, source: io::Error },
}

/// A set of CPU numbers. Displays as a compact Linux list (`0-3,6`); serializes as an array.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct CpuSet(pub BTreeSet<usize>);

impl CpuSet {
    /// Parses a CPU list: numbers and inclusive ranges separated by commas (blanks and a trailing
    /// newline allowed). The result is never empty.
    pub fn parse(input: &str) -> Result<CpuSet, CpuListError> {
        let mut set = BTreeSet::new();
        let syntax = |part: &str| CpuListError::Syntax {
            input: input.trim().into(),
            part: part.into(),
        };
        for part in input.split(',').map(str::trim) {
            if part.is_empty() {
                continue;
            }
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let lo: usize = lo.parse().map_err(|_| syntax(part))?;
            let hi: usize = hi.parse().map_err(|_| syntax(part))?;
            if hi < lo || hi >= libc::CPU_SETSIZE as usize {
                return Err(syntax(part));
            }
            set.extend(lo..=hi);
        }
        if set.is_empty() {
            return Err(CpuListError::Empty);
        }
        Ok(CpuSet(set))
    }

    /// Parses `input` and checks that every CPU is in `available`.
    pub fn parse_within(input: &str, available: &CpuSet) -> Result<CpuSet, CpuListError> {
        let set = CpuSet::parse(input)?;
        set.check_within(available).map_err(|cpu| CpuListError::Missing {
            input: input.trim().into(),
            cpu,
            avail: available.to_string(),
        })?;
        Ok(set)
    }

    /// Ok, or the first CPU of `self` that `available` lacks.
    pub fn check_within(&self, available: &CpuSet) -> Result<(), usize> {
        match self.0.iter().find(|c| !available.0.contains(c)) {
            Some(&c) => Err(c),
            None => Ok(()),
        }
    }

    /// The online CPUs (from /sys/devices/system/cpu/online).
    pub fn online() -> Result<CpuSet, CpuListError> {
        let text = std::fs::read_to_string(ONLINE).map_err(|source| CpuListError::Read {
            path: ONLINE.to_string(),
            source,
        })?;
        CpuSet::parse(&text)
    }

    /// The CPUs the calling thread may run on (its affinity mask); `{0}` if it cannot be read.
    pub fn allowed() -> CpuSet {
        let cpus = sys::get_affinity(0).map(|s| sys::cpus_of(&s)).unwrap_or_default();
        if cpus.is_empty() {
            return CpuSet([0].into());
        }
        CpuSet(cpus.into_iter().collect())
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn without(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }

    pub fn first(&self) -> Option<usize> {
        self.0.first().copied()
    }

    pub fn last(&self) -> Option<usize> {
        self.0.last().copied()
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }

    pub fn overlaps(&self, other: &CpuSet) -> bool {
        self.0.intersection(&other.0).next().is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Ascending.
    pub fn to_vec(&self) -> Vec<usize> {
        self.0.iter().copied().collect()
    }

    /// As a `cpu_set_t` (CPUs beyond CPU_SETSIZE cannot be in a parsed set; others are an error).
    pub fn to_libc(&self) -> io::Result<libc::cpu_set_t> {
        sys::cpu_set(&self.0)
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_list(&self.to_vec()))
    }
}

/// Formats ascending CPUs as a compact Linux list (`0-3,6`).
pub fn format_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", cpus[i], cpus[j]));
        } else {
            out.push_str(&cpus[i].to_string());
        }
        i = j + 1;
    }
    out
}

/// Restricts thread `tid` (0: the calling thread) to `cpus`.
pub fn pin_thread(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    sys::set_affinity(tid, &cpus.to_libc()?)
}

/// Restricts the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &CpuSet) -> io::Result<()> {
    pin_thread(0, cpus)
}

/// Restricts thread `tid` (0: the calling thread) to a mask built beforehand. One system call and
/// no allocation: safe between fork and exec.
pub fn pin_thread_to_mask(tid: i32, mask: &libc::cpu_set_t) -> io::Result<()> {
    sys::set_affinity(tid, mask)
}

/// The calling thread's affinity mask, to restore later with [`pin_thread_to_mask`].
pub fn current_mask() -> io::Result<libc::cpu_set_t> {
    sys::get_affinity(0)
}

/// Lets the calling thread run on every CPU again (threads inherit their creator's pinning).
pub fn unpin_current_thread() -> io::Result<()> {
    let every: Vec<usize> = (0..libc::CPU_SETSIZE as usize).collect();
    sys::set_affinity(0, &sys::cpu_set(&every)?)
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    sys::current_cpu()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_formats_lists() {
        let s = CpuSet::parse("0-3,6,2").unwrap_or_default();
        assert_eq!(s.to_vec(), vec![0, 1, 2, 3, 6]);
        assert_eq!(s.to_string(), "0-3,6");
        assert_eq!(CpuSet::parse("0\n").map(|s| s.to_vec()).ok(), Some(vec![0]));
        assert_eq!(
            CpuSet::parse(" 1 - 2 , 4").map(|s| s.to_vec()).ok(),
            Some(vec![1, 2, 4])
        );
        for bad in ["a", "3-1", "1-", "-1", "0,x", "99999"] {
            assert!(
                matches!(CpuSet::parse(bad), Err(CpuListError::Syntax { .. })),
                "{bad}"
            );
        }
        assert!(matches!(CpuSet::parse(" "), Err(CpuListError::Empty)));
        assert!(matches!(CpuSet::parse(","), Err(CpuListError::Empty)));
    }

    #[test]
    fn a_cpu_outside_the_available_set_is_named_with_the_set() {
        let avail = CpuSet::parse("0-1").unwrap_or_default();
        let e = CpuSet::parse_within("0,7", &avail)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("CPU 7 does not exist") && e.contains("available: 0-1"),
            "{e}"
        );
        assert_eq!(avail.without(&CpuSet([0].into())).to_vec(), vec![1]);
    }

    #[test]
    fn the_allowed_cpus_are_online() {
        let online = CpuSet::online().unwrap_or_else(|e| panic!("{e}"));
        let allowed = CpuSet::allowed();
        assert!(
            allowed.check_within(&online).is_ok(),
            "{allowed} not within {online}"
        );
    }

    #[test]
    fn pinning_to_the_allowed_set_round_trips() {
        let before = current_mask().unwrap_or_else(|e| panic!("{e}"));
        let allowed = CpuSet::allowed();
        pin_current_thread(&CpuSet([allowed.first().unwrap_or(0)].into())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(CpuSet::allowed().len(), 1);
        pin_thread_to_mask(0, &before).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(CpuSet::allowed(), allowed);
    }

    proptest! {
        #[test]
        fn format_then_parse_is_the_identity(cpus in proptest::collection::btree_set(0usize..512, 1..40)) {
            let set = CpuSet(cpus);
            prop_assert_eq!(CpuSet::parse(&set.to_string()).ok(), Some(set));
        }
    }
}
