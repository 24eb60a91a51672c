//! b(s) resolved to a table indexed by system call number: what [`crate::Policy::resolve`] gives
//! and what the model, the emulator and the LWK all read. Also the calls a mechanism must keep local.

use multios_syscalls::{by_name, by_number, MAX_NR};

/// Which system call numbers are delegated (numbers past the table: not delegated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    /// The policy it was resolved from, as typed (`mckernel`, `least:0.5`, a `--local` file…).
    pub label: String,
    bits: Vec<bool>,
}

impl Delegation {
    /// From a predicate on names (b(s)); numbers without a name stay local.
    pub fn from_fn(label: impl Into<String>, mut b: impl FnMut(&str) -> bool) -> Self {
        Self::from_numbers(label, |nr| by_number(nr).is_some_and(&mut b))
    }

    /// From a predicate on numbers, for tables that must also decide the numbers without a name.
    pub fn from_numbers(label: impl Into<String>, b: impl FnMut(u32) -> bool) -> Self {
        Delegation {
            label: label.into(),
            bits: (0..MAX_NR as u32).map(b).collect(),
        }
    }

    pub fn none() -> Self {
        Self::from_fn("none", |_| false)
    }

    pub fn all() -> Self {
        Self::from_fn("all", |_| true)
    }

    #[inline]
    pub fn is_delegated(&self, nr: u32) -> bool {
        self.bits.get(nr as usize).copied().unwrap_or(false)
    }

    /// b(s) by name; a name that is not an x86_64 system call is not delegated.
    pub fn is_delegated_name(&self, name: &str) -> bool {
        by_name(name).is_some_and(|nr| self.is_delegated(nr))
    }

    /// Names of the delegated calls, in number order.
    pub fn delegated_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        multios_syscalls::names()
            .filter(|(nr, _)| self.is_delegated(*nr))
            .map(|(_, n)| n)
    }

    /// Forces `names` local; returns those that the policy had delegated.
    pub fn keep_local(&mut self, names: &[&str]) -> Vec<String> {
        let mut forced = Vec::new();
        for n in names {
            if let Some(nr) = by_name(n) {
                if let Some(b) = self.bits.get_mut(nr as usize) {
                    if *b {
                        forced.push((*n).to_string());
                    }
                    *b = false;
                }
            }
        }
        forced
    }

    /// Delegated numbers as inclusive ranges, ascending.
    pub fn ranges(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (nr, &b) in self.bits.iter().enumerate() {
            if !b {
                continue;
            }
            let nr = nr as u32;
            match out.last_mut() {
                Some(last) if last.1 + 1 == nr => last.1 = nr,
                _ => out.push((nr, nr)),
            }
        }
        out
    }

    pub fn count(&self) -> usize {
        self.bits.iter().filter(|b| **b).count()
    }

    /// The table as bytes (1 = delegated), for the preload library.
    pub fn bytes(&self) -> Vec<u8> {
        self.bits.iter().map(|b| u8::from(*b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_neighbours() {
        let d = Delegation::from_fn("t", |n| matches!(n, "read" | "write" | "close" | "getppid"));
        assert_eq!(d.ranges(), vec![(0, 1), (3, 3), (110, 110)]);
    }

    #[test]
    fn keep_local_reports_what_it_overrode() {
        let mut d = Delegation::all();
        let forced = d.keep_local(&["clone", "rt_sigreturn"]);
        assert_eq!(forced, vec!["clone".to_string(), "rt_sigreturn".to_string()]);
        assert!(!d.is_delegated(56));
        assert!(d.is_delegated(0));
    }

    #[test]
    fn unnamed_numbers_follow_the_constructor() {
        // 335 has no x86_64 system call: local from names, as asked from numbers.
        assert_eq!(multios_syscalls::by_number(335), None);
        assert!(!Delegation::all().is_delegated(335));
        assert!(Delegation::from_numbers("t", |_| true).is_delegated(335));
        assert!(!Delegation::from_numbers("t", |_| true).is_delegated(MAX_NR as u32));
        let d = Delegation::from_fn("t", |n| n == "write");
        assert!(d.is_delegated_name("write") && !d.is_delegated_name("read"));
        assert!(!d.is_delegated_name("no_such_call"));
        assert_eq!(d.delegated_names().collect::<Vec<_>>(), vec!["write"]);
    }
}
