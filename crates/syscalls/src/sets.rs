//! The named delegation sets of real multi-OS systems.
//!
//! Each set is stored as the list its source publishes; whether that list names the *local* or the
//! *delegated* calls differs between systems, so [`NamedSet::is_delegated`] applies the right sense.

use crate::table::{by_name, UnknownSyscall};
use std::collections::BTreeSet;

const MCKERNEL_LOCAL: &str = include_str!("../../../data/syscall-sets/mckernel-local.txt");
const MOS_LOCAL: &str = include_str!("../../../data/syscall-sets/mos-local.txt");
const MKTRACE_FORWARDABLE: &str = include_str!("../../../data/syscall-sets/mktrace-forwardable.txt");

/// A set of system calls of a real system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedSet {
    /// IHK/McKernel: the listed calls have an LWK handler; everything else is forwarded to mcexec.
    McKernel,
    /// Intel mOS: the listed calls run on the LWK CPU; everything else migrates to Linux.
    Mos,
    /// mktrace: exactly the listed calls can be forwarded; everything else stays local.
    Mktrace,
}

/// An error in a named set or in a list file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SetError {
    #[error("unknown syscall set '{0}': use one of mckernel, mos, mktrace")]
    UnknownSet(String),
    #[error("{file}:{line}: {source}")]
    BadName {
        file: String,
        line: usize,
        source: UnknownSyscall,
    },
}

impl NamedSet {
    pub const ALL: [NamedSet; 3] = [NamedSet::McKernel, NamedSet::Mos, NamedSet::Mktrace];

    pub fn parse(s: &str) -> Result<Self, SetError> {
        match s.to_ascii_lowercase().as_str() {
            "mckernel" | "ihk" | "ihk-mckernel" => Ok(NamedSet::McKernel),
            "mos" | "intel-mos" => Ok(NamedSet::Mos),
            "mktrace" => Ok(NamedSet::Mktrace),
            _ => Err(SetError::UnknownSet(s.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NamedSet::McKernel => "mckernel",
            NamedSet::Mos => "mos",
            NamedSet::Mktrace => "mktrace",
        }
    }

    fn raw(self) -> &'static str {
        match self {
            NamedSet::McKernel => MCKERNEL_LOCAL,
            NamedSet::Mos => MOS_LOCAL,
            NamedSet::Mktrace => MKTRACE_FORWARDABLE,
        }
    }

    /// True when the stored list names the calls kept local (false: it names the delegated ones).
    fn list_is_local(self) -> bool {
        !matches!(self, NamedSet::Mktrace)
    }

    /// The names as published by the source.
    pub fn listed(self) -> BTreeSet<&'static str> {
        list_names(self.raw()).collect()
    }

    /// b(s) for this system: true when `name` is delegated to Linux.
    pub fn is_delegated(self, name: &str) -> bool {
        let listed = list_names(self.raw()).any(|n| n == name);
        listed != self.list_is_local()
    }
}

fn list_names(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

/// Parses a user's list file: one system call name a line, `#` comments. Every name must exist.
pub fn parse_list(file: &str, text: &str) -> Result<BTreeSet<String>, SetError> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let name = line.split('#').next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        for name in name
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
        {
            if by_name(name).is_none() {
                return Err(SetError::BadName {
                    file: file.to_string(),
                    line: i + 1,
                    source: UnknownSyscall::new(name),
                });
            }
            out.insert(name.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_is_a_real_syscall() {
        for set in NamedSet::ALL {
            for n in set.listed() {
                assert!(
                    by_name(n).is_some(),
                    "{}: '{n}' is not in the x86_64 table",
                    set.name()
                );
            }
        }
    }

    #[test]
    fn senses_of_the_sets() {
        assert!(!NamedSet::McKernel.is_delegated("mmap"));
        assert!(NamedSet::McKernel.is_delegated("write"));
        assert!(NamedSet::McKernel.is_delegated("openat2"));
        assert!(!NamedSet::Mos.is_delegated("munmap"));
        assert!(NamedSet::Mos.is_delegated("read"));
        assert!(NamedSet::Mktrace.is_delegated("read"));
        assert!(!NamedSet::Mktrace.is_delegated("pread64"));
    }

    #[test]
    fn list_file_errors_name_line_and_suggest() {
        let e = parse_list("my.list", "read\n# c\nwrtie\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            e,
            "my.list:3: unknown system call 'wrtie' (did you mean 'write'?)"
        );
        let ok = parse_list("x", "read, write\nopenat # comment\n").unwrap_or_default();
        assert_eq!(ok.len(), 3);
    }
}
