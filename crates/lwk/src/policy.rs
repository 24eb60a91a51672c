//! Which system calls the LWK serves itself ("local") and which it delegates to Linux.
//!
//! The policy is the one language of `emulate --policy` ([`multios_model::Policy`]) resolved to the one
//! table ([`Delegation`]); the LWK's local set is what it can serve (MANDATORY_LOCAL ∪ OPTIONAL_LOCAL)
//! ∩ what the table keeps local, ∪ MANDATORY_LOCAL.

use multios_model::Delegation;
use multios_syscalls::{by_number, names, NamedSet};
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
    // Sealing the guest's memory (issue #16): delegated, it would seal the VMM's own pages.
    "mseal",
    // Protection keys: the LWK has none beyond key 0, as on a CPU without them (below).
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "gettid",
    // The guest's pid is the LWK's answer (the VMM's, a forked child's after fork); the proxy has
    // no argument layout for it, so a delegated getpid would be refused with ENOSYS.
    "getpid",
    "sched_getaffinity",
    "sched_setaffinity",
    "getcpu",
    "getpriority",
    "setpriority",
    // Per thread too: made about the vCPU's Linux thread (issue #14).
    "sched_getscheduler",
    "sched_setscheduler",
    "sched_getparam",
    "sched_setparam",
    "sched_rr_get_interval",
    "sched_setattr",
    "sched_getattr",
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
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    // The guest's signals are the VMM's: a signalfd reports them (`signal/sfd.rs`).
    "signalfd",
    "signalfd4",
    // A timer that signals one thread names a guest tid, which the LWK translates.
    "timer_create",
    "timer_delete",
    // To the guest itself, the signal must be pending when the call returns.
    "pidfd_send_signal",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "wait4",
    "waitid",
    "prctl",
    // The execution domain (setarch): kept by the LWK, whose address-space layout it does not
    // change; delegated, READ_IMPLIES_EXEC would make the VMM's own later mappings executable.
    "personality",
];

/// Calls the LWK can serve either way (each has a delegation layout); local when the policy keeps
/// them local.
pub const OPTIONAL_LOCAL: &[&str] = &[
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "sched_yield",
    "uname",
    "readlink",
    // The partition's memory, not the host's (syscall/sysinfo.rs).
    "sysinfo",
];

/// Where the asked table and what the LWK can do disagree (the LWK's choice wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Overrides {
    /// Calls the table delegates that the LWK must serve itself: kept local.
    pub kept_local: Vec<&'static str>,
    /// Calls the table keeps local that the LWK has no implementation of: delegated.
    pub delegated: Vec<&'static str>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.kept_local.is_empty() && self.delegated.is_empty()
    }
}

/// The LWK's local/delegated split, derived from a resolved [`Delegation`].
#[derive(Debug, Clone)]
pub struct LocalSet {
    /// The effective table: delegated = not served by the LWK (numbers without a name included).
    table: Delegation,
    overrides: Overrides,
}

impl LocalSet {
    /// The LWK's split for the table `asked` (see the module documentation).
    pub fn from_delegation(asked: &Delegation) -> Self {
        let mandatory = |n: &str| MANDATORY_LOCAL.contains(&n);
        let servable = |n: &str| mandatory(n) || OPTIONAL_LOCAL.contains(&n);
        let local = |n: &str| mandatory(n) || (servable(n) && !asked.is_delegated_name(n));
        let mut overrides = Overrides::default();
        for (nr, n) in names() {
            if mandatory(n) && asked.is_delegated(nr) {
                overrides.kept_local.push(n);
            } else if !servable(n) && !asked.is_delegated(nr) {
                overrides.delegated.push(n);
            }
        }
        LocalSet {
            table: Delegation::from_numbers(asked.label.clone(), |nr| !by_number(nr).is_some_and(local)),
            overrides,
        }
    }

    /// McKernel-like (the default): every call McKernel serves locally that this LWK can serve locally.
    pub fn mckernel() -> Self {
        // The same table `Policy::resolve` makes of `mckernel` (a test checks it), from the set
        // parsed once: the resolver parses the list again for every call number, ≈ 1 ms of every
        // `lwk run` here (issue #13).
        let listed = NamedSet::McKernel.listed();
        Self::from_delegation(&Delegation::from_fn(NamedSet::McKernel.name(), |n| {
            !listed.contains(n)
        }))
    }

    /// The inverse form (`lwk run --local FILE`): the calls in `names` are local (where possible), every
    /// other call is delegated; the mandatory ones are always local.
    pub fn from_names(name: &str, names: BTreeSet<String>) -> Self {
        Self::from_delegation(&Delegation::from_fn(name, |n| !names.contains(n)))
    }

    pub fn is_local(&self, nr: u64) -> bool {
        u32::try_from(nr)
            .is_ok_and(|nr| (nr as usize) < multios_syscalls::MAX_NR && !self.table.is_delegated(nr))
    }

    /// Names of the local calls.
    pub fn local_names(&self) -> Vec<&'static str> {
        names()
            .filter(|&(nr, _)| self.is_local(nr.into()))
            .map(|(_, n)| n)
            .collect()
    }

    /// The policy's label, as typed (`mckernel`, `least:0.5`, the `--local` file).
    pub fn label(&self) -> &str {
        &self.table.label
    }

    /// The effective table (delegated = not served by the LWK).
    pub fn table(&self) -> &Delegation {
        &self.table
    }

    /// What the LWK changed in the asked table.
    pub fn overrides(&self) -> &Overrides {
        &self.overrides
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_model::{Policy as PolicyText, Workload};
    use multios_syscalls::by_name;

    fn nr(n: &str) -> u64 {
        by_name(n).map(u64::from).unwrap_or(u64::MAX)
    }

    #[test]
    fn mandatory_calls_stay_local_and_optional_follow_the_list() {
        let p = LocalSet::from_names("none", BTreeSet::new());
        assert!(p.is_local(nr("mmap")) && p.is_local(nr("getpid")));
        assert!(!p.is_local(nr("getppid")));
        let m = LocalSet::mckernel();
        assert!(m.is_local(nr("getppid")));
        assert!(!m.is_local(nr("write")));
        for n in MANDATORY_LOCAL.iter().chain(OPTIONAL_LOCAL) {
            assert!(by_name(n).is_some(), "{n}");
        }
        // An optional call can be delegated: the proxy knows its arguments.
        for n in OPTIONAL_LOCAL {
            let nr = by_name(n).map(i64::from).unwrap_or(-1);
            assert!(
                crate::syscall::layout::layout(nr).is_some(),
                "{n} has no delegation layout"
            );
            assert!(!MANDATORY_LOCAL.contains(n), "{n} is in both lists");
        }
    }

    #[test]
    fn mckernel_default_is_what_the_policy_resolver_makes() {
        let resolved = LocalSet::from_delegation(
            &PolicyText::Named(NamedSet::McKernel).resolve_workload(&Workload::default()),
        );
        let direct = LocalSet::mckernel();
        assert_eq!(direct.table(), resolved.table());
        assert_eq!(direct.overrides(), resolved.overrides());
    }

    #[test]
    fn mckernel_default_is_the_old_split() {
        // Before issue #17: MANDATORY_LOCAL ∪ (OPTIONAL_LOCAL ∩ McKernel's local list).
        let listed = NamedSet::McKernel.listed();
        let mut old: Vec<&str> = MANDATORY_LOCAL
            .iter()
            .chain(OPTIONAL_LOCAL.iter().filter(|n| listed.contains(*n)))
            .copied()
            .collect();
        old.sort_by_key(|n| by_name(n));
        assert_eq!(LocalSet::mckernel().local_names(), old);
        assert_eq!(LocalSet::mckernel().label(), "mckernel");
    }

    #[test]
    fn the_split_is_servable_and_asked_or_mandatory() {
        for text in ["all", "none", "mckernel", "mos", "mktrace"] {
            let asked = PolicyText::parse(text)
                .map(|p| p.resolve_workload(&Workload::default()))
                .unwrap_or_else(|_| Delegation::none());
            let s = LocalSet::from_delegation(&asked);
            for (n, name) in names() {
                let servable = MANDATORY_LOCAL.contains(&name) || OPTIONAL_LOCAL.contains(&name);
                let want = MANDATORY_LOCAL.contains(&name) || (servable && !asked.is_delegated(n));
                assert_eq!(s.is_local(n.into()), want, "{text} {name}");
            }
            // Numbers without a name and past the table are delegated (Linux answers ENOSYS).
            assert!(!s.is_local(335) && !s.is_local(100_000) && !s.is_local(u64::MAX));
        }
    }

    #[test]
    fn overrides_name_each_disagreement() {
        let all = LocalSet::from_delegation(&Delegation::all());
        assert!(all.overrides().kept_local.contains(&"mmap"));
        assert!(all.overrides().delegated.is_empty());
        let none = LocalSet::from_delegation(&Delegation::none());
        assert!(none.overrides().kept_local.is_empty());
        assert!(none.overrides().delegated.contains(&"write"));
        assert!(!none.overrides().delegated.contains(&"getppid"));
        assert!(none.is_local(nr("getppid")));
    }
}
