//! Which system calls the LWK serves itself ("local") and which it delegates to Linux.

use multios_syscalls::{by_name, by_number, NamedSet};
use std::collections::BTreeSet;

/// Calls the LWK must serve itself whatever the policy says: delegating them would change the
/// VMM process (its memory, signals, threads) instead of the guest's.
pub const MANDATORY_LOCAL: &[&str] = &[
    "brk",
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "mremap",
    "msync",
    "shmat",
    "shmdt",
    "mincore",
    "mlock",
    "munlock",
    "mlockall",
    "munlockall",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "gettid",
    "sched_getaffinity",
    "sched_setaffinity",
    "getcpu",
    "getpriority",
    "setpriority",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "exit",
    "exit_group",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "pause",
    "sigaltstack",
    "kill",
    "tkill",
    "tgkill",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "wait4",
    "waitid",
    "prctl",
];

/// Calls the LWK can serve either way; local when the policy lists them.
pub const OPTIONAL_LOCAL: &[&str] = &[
    "getpid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "sched_yield",
    "uname",
    "readlink",
];

/// The local/delegated split.
#[derive(Debug, Clone)]
pub struct Policy {
    local: [bool; multios_syscalls::MAX_NR],
    pub name: String,
}

impl Policy {
    /// McKernel-like: every call McKernel serves locally that this LWK can serve locally.
    pub fn mckernel() -> Self {
        Self::from_names(
            "mckernel",
            NamedSet::McKernel
                .listed()
                .into_iter()
                .map(String::from)
                .collect(),
        )
    }

    /// The calls in `names` are local (where possible); the mandatory ones always are.
    pub fn from_names(name: &str, names: BTreeSet<String>) -> Self {
        let mut local = [false; multios_syscalls::MAX_NR];
        for n in MANDATORY_LOCAL
            .iter()
            .copied()
            .chain(OPTIONAL_LOCAL.iter().copied().filter(|n| names.contains(*n)))
        {
            if let Some(nr) = by_name(n) {
                local[nr as usize] = true;
            }
        }
        Policy {
            local,
            name: name.to_string(),
        }
    }

    pub fn is_local(&self, nr: u64) -> bool {
        self.local.get(nr as usize).copied().unwrap_or(false)
    }

    /// Names of the local calls.
    pub fn local_names(&self) -> Vec<&'static str> {
        (0..multios_syscalls::MAX_NR as u32)
            .filter(|&n| self.local[n as usize])
            .filter_map(by_number)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mandatory_calls_stay_local_and_optional_follow_the_list() {
        let p = Policy::from_names("none", BTreeSet::new());
        assert!(p.is_local(by_name("mmap").map(u64::from).unwrap_or(0)));
        assert!(!p.is_local(by_name("getpid").map(u64::from).unwrap_or(0)));
        let m = Policy::mckernel();
        assert!(m.is_local(by_name("getpid").map(u64::from).unwrap_or(0)));
        assert!(!m.is_local(by_name("write").map(u64::from).unwrap_or(0)));
        for n in MANDATORY_LOCAL.iter().chain(OPTIONAL_LOCAL) {
            assert!(by_name(n).is_some(), "{n}");
        }
    }
}
