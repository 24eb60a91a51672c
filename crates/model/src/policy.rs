//! Delegation policies b(s): which system calls go to Linux.
//!
//! Textual forms (the CLI's `--policy`):
//! - `all` (b ≡ 1, the naïve model's assumption), `none` (b ≡ 0);
//! - `mckernel`, `mos`, `mktrace`: the sets of the real systems (see `data/syscall-sets/`);
//! - `list:FILE`: the names in FILE are delegated, everything else is local;
//! - `least:F`, `most:F`, `random:F[:SEED]`: the paper's Fig. 4 selections — forward the fraction F of
//!   the *distinct* system calls of the profile, chosen by least-frequent, most-frequent or random
//!   (seeded, default seed 0) order.
//!
//! [`Policy::resolve`] turns a policy (and, for the fraction policies, a profile) into the one
//! resolved table, [`Delegation`], that the model, the emulator and the LWK read.

use crate::delegation::Delegation;
use crate::error::ModelError;
use crate::workload::Workload;
use multios_profile::Profile;
use multios_syscalls::NamedSet;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeSet;

/// The order in which a fraction policy picks the calls it forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Order {
    LeastFrequent,
    MostFrequent,
    Random(u64),
}

/// A delegation policy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Policy {
    All,
    None,
    Named(#[serde(serialize_with = "ser_named")] NamedSet),
    List { source: String, names: BTreeSet<String> },
    Fraction { order: Order, fraction: f64 },
}

fn ser_named<S: serde::Serializer>(n: &NamedSet, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(n.name())
}

/// The largest `list:FILE` read (a list of system-call names is a few KiB).
pub const MAX_LIST_BYTES: u64 = 1 << 20;

impl Policy {
    /// Parses the textual form; `list:FILE` reads FILE.
    pub fn parse(text: &str) -> Result<Policy, ModelError> {
        let t = text.trim();
        let (head, rest) = t.split_once(':').unwrap_or((t, ""));
        match head {
            "all" if rest.is_empty() => Ok(Policy::All),
            "none" if rest.is_empty() => Ok(Policy::None),
            "list" => {
                let body =
                    multios_host::input::read_to_string_capped(std::path::Path::new(rest), MAX_LIST_BYTES)
                        .map_err(|e| ModelError::ListFile {
                            path: rest.into(),
                            msg: e.to_string(),
                        })?;
                let names = multios_syscalls::parse_list(rest, &body)?;
                Ok(Policy::List {
                    source: rest.to_string(),
                    names,
                })
            }
            "least" | "most" | "random" => {
                let mut parts = rest.split(':');
                let f = parts.next().unwrap_or("");
                let fraction: f64 = f.parse().map_err(|_| ModelError::Policy(text.to_string()))?;
                if !(0.0..=1.0).contains(&fraction) {
                    return Err(ModelError::Fraction(fraction));
                }
                let order = match head {
                    "least" => Order::LeastFrequent,
                    "most" => Order::MostFrequent,
                    _ => Order::Random(match parts.next() {
                        Some(s) => s.parse().map_err(|_| ModelError::Policy(text.to_string()))?,
                        None => 0,
                    }),
                };
                Ok(Policy::Fraction { order, fraction })
            }
            _ if rest.is_empty() => match NamedSet::parse(head) {
                Ok(set) => Ok(Policy::Named(set)),
                Err(_) => Err(ModelError::Policy(text.to_string())),
            },
            _ => Err(ModelError::Policy(text.to_string())),
        }
    }

    /// A fraction policy with validation.
    pub fn fraction(order: Order, fraction: f64) -> Result<Policy, ModelError> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(ModelError::Fraction(fraction));
        }
        Ok(Policy::Fraction { order, fraction })
    }

    /// A short label, the inverse of [`Policy::parse`].
    pub fn label(&self) -> String {
        match self {
            Policy::All => "all".into(),
            Policy::None => "none".into(),
            Policy::Named(s) => s.name().into(),
            Policy::List { source, .. } => format!("list:{source}"),
            Policy::Fraction { order, fraction } => match order {
                Order::LeastFrequent => format!("least:{fraction}"),
                Order::MostFrequent => format!("most:{fraction}"),
                Order::Random(seed) => format!("random:{fraction}:{seed}"),
            },
        }
    }

    /// b(s) for a single call name, for policies that do not depend on the profile
    /// (`None` for fraction policies, which need [`Policy::delegated`]).
    pub fn is_delegated(&self, name: &str) -> Option<bool> {
        match self {
            Policy::All => Some(true),
            Policy::None => Some(false),
            Policy::Named(s) => Some(s.is_delegated(name)),
            Policy::List { names, .. } => Some(names.contains(name)),
            Policy::Fraction { .. } => None,
        }
    }

    /// True for the fraction policies, which rank the calls of a profile.
    pub fn needs_profile(&self) -> bool {
        matches!(self, Policy::Fraction { .. })
    }

    /// The one resolver: b(s) for every system call number. A fraction policy picks from the calls of
    /// `profile` (and delegates nothing else); without a profile it is an error that says so.
    pub fn resolve(&self, profile: Option<&Profile>) -> Result<Delegation, ModelError> {
        match (self.needs_profile(), profile) {
            (false, _) => Ok(self.table(None)),
            (true, Some(p)) => Ok(self.table(Some(&Workload::from_profile(p)))),
            (true, None) => Err(ModelError::NeedsProfile(self.label())),
        }
    }

    /// [`Policy::resolve`] with the calls of a workload in place of a profile's.
    pub fn resolve_workload(&self, w: &Workload) -> Delegation {
        self.table(Some(w))
    }

    /// The set of delegated names (b(s) = 1) among the calls of `w`: the resolved table read by name
    /// (a name that is not a system call follows the policy's own sense).
    pub fn delegated(&self, w: &Workload) -> BTreeSet<String> {
        let picked = self.picked(w);
        w.calls
            .iter()
            .filter(|c| self.b(picked.as_ref(), &c.name))
            .map(|c| c.name.clone())
            .collect()
    }

    fn table(&self, w: Option<&Workload>) -> Delegation {
        let picked = w.and_then(|w| self.picked(w));
        Delegation::from_fn(self.label(), |n| self.b(picked.as_ref(), n))
    }

    /// b(s): the policy's own sense, or membership in what a fraction policy picked.
    fn b(&self, picked: Option<&BTreeSet<String>>, name: &str) -> bool {
        match self.is_delegated(name) {
            Some(b) => b,
            None => picked.is_some_and(|p| p.contains(name)),
        }
    }

    /// The calls a fraction policy forwards among those of `w` (`None` for the other policies).
    fn picked(&self, w: &Workload) -> Option<BTreeSet<String>> {
        let Policy::Fraction { order, fraction } = self else {
            return None;
        };
        let mut calls: Vec<(&str, u64)> = w.calls.iter().map(|c| (c.name.as_str(), c.n)).collect();
        // Name order first, so ties and the random shuffle are reproducible.
        calls.sort_by(|a, b| a.0.cmp(b.0));
        match order {
            Order::LeastFrequent => calls.sort_by_key(|c| c.1),
            Order::MostFrequent => calls.sort_by_key(|c| std::cmp::Reverse(c.1)),
            Order::Random(seed) => calls.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(*seed)),
        }
        let k = (fraction * calls.len() as f64).round() as usize;
        Some(calls.into_iter().take(k).map(|c| c.0.to_string()).collect())
    }
}

impl std::str::FromStr for Policy {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Call;

    fn w() -> Workload {
        let c = |name: &str, n| Call {
            name: name.into(),
            n,
            g: n as f64 * 1e-6,
        };
        Workload {
            c: 1.0,
            calls: vec![
                c("read", 1000),
                c("write", 900),
                c("openat", 3),
                c("close", 3),
                c("mmap", 10),
            ],
        }
    }

    #[test]
    fn parse_forms() {
        assert_eq!(Policy::parse("all").ok(), Some(Policy::All));
        assert_eq!(
            Policy::parse("mckernel").ok(),
            Some(Policy::Named(NamedSet::McKernel))
        );
        assert_eq!(
            Policy::parse("least:0.9").ok(),
            Some(Policy::Fraction {
                order: Order::LeastFrequent,
                fraction: 0.9
            })
        );
        assert_eq!(
            Policy::parse("random:0.5:7").ok(),
            Some(Policy::Fraction {
                order: Order::Random(7),
                fraction: 0.5
            })
        );
        assert!(matches!(Policy::parse("least:1.5"), Err(ModelError::Fraction(_))));
        assert!(matches!(Policy::parse("bogus"), Err(ModelError::Policy(_))));
        assert!(matches!(
            Policy::parse("list:/nonexistent/x"),
            Err(ModelError::ListFile { .. })
        ));
    }

    #[test]
    fn fraction_orders() {
        let w = w();
        let least = Policy::parse("least:0.6")
            .map(|p| p.delegated(&w))
            .unwrap_or_default();
        assert_eq!(
            least,
            ["close", "mmap", "openat"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        );
        let most = Policy::parse("most:0.4")
            .map(|p| p.delegated(&w))
            .unwrap_or_default();
        assert_eq!(most, ["read", "write"].iter().map(|s| s.to_string()).collect());
        let r1 = Policy::parse("random:0.6:3")
            .map(|p| p.delegated(&w))
            .unwrap_or_default();
        let r2 = Policy::parse("random:0.6:3")
            .map(|p| p.delegated(&w))
            .unwrap_or_default();
        assert_eq!(r1, r2);
        assert_eq!(r1.len(), 3);
    }

    #[test]
    fn resolve_needs_a_profile_only_for_fractions() {
        let e = Policy::parse("least:0.5")
            .and_then(|p| p.resolve(None))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("add --profile FILE"), "{e}");
        let d = Policy::parse("mckernel").and_then(|p| p.resolve(None)).ok();
        assert_eq!(d.as_ref().map(|d| d.label.as_str()), Some("mckernel"));
        assert!(d
            .as_ref()
            .is_some_and(|d| d.is_delegated_name("write") && !d.is_delegated_name("mmap")));
        let mut prof = Profile::new(vec!["t".into()], "test", "exact");
        for (name, count) in [("read", 1000), ("write", 3), ("close", 7)] {
            prof.syscalls.push(multios_profile::SyscallStats {
                name: name.into(),
                nr: multios_syscalls::by_name(name).unwrap_or(0),
                count,
                ..Default::default()
            });
        }
        let least = Policy::parse("least:0.67")
            .and_then(|p| p.resolve(Some(&prof)))
            .ok();
        let names: Vec<&str> = least.iter().flat_map(|d| d.delegated_names()).collect();
        assert_eq!(names, vec!["write", "close"]);
    }

    #[test]
    fn named_sets() {
        let d = Policy::Named(NamedSet::McKernel).delegated(&w());
        assert!(d.contains("write") && !d.contains("read") && !d.contains("mmap"));
    }
}
