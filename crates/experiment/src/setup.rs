//! The flags `emulate`, `fc`, `validate`, `bench emulate` and the demo share, resolved into the
//! emulator's config: a policy text (with its profile) into b(s), `--fc` and `--fc-syscall` into a
//! [`CostModel`], `--compute-cpus` and `--control-cpus` into the CPU split. Errors name the flag.

use multios_emulate::cost::CostError;
use multios_emulate::cpus::CpuError;
use multios_emulate::{CostModel, CpuSet, Delegation, Dist};
use multios_model::{ModelError, Policy};
use std::path::Path;

/// A shared flag that could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("--policy '{text}'")]
    Policy { text: String, source: ModelError },
    #[error(transparent)]
    Resolve(#[from] ModelError),
    #[error(transparent)]
    Profile(#[from] multios_profile::ProfileError),
    #[error(transparent)]
    Cost(#[from] CostError),
    #[error(transparent)]
    Cpus(#[from] CpuError),
    #[error(
        "--policy '{policy}' delegates {count} system calls: give their one-way forwarding cost with --fc \
         (e.g. --fc 10us; --fc 0ns measures the mechanism alone)"
    )]
    NoFc { policy: String, count: usize },
}

/// Resolves a policy text (and, for the fraction policies, the profile they rank) into b(s) with
/// [`Policy::resolve`], the one resolver. The profile is read only when the policy needs it.
pub fn resolve_delegation(policy: &str, profile: Option<&Path>) -> Result<Delegation, SetupError> {
    let p = Policy::parse(policy).map_err(|source| SetupError::Policy {
        text: policy.to_string(),
        source,
    })?;
    let prof = match profile {
        Some(path) if p.needs_profile() => Some(multios_profile::load(path)?),
        _ => None,
    };
    Ok(p.resolve(prof.as_ref())?)
}

/// The cost model of `--fc COST` and the `--fc-syscall NAME=COST` overrides.
pub fn cost_model(fc: &str, overrides: &[String]) -> Result<CostModel, SetupError> {
    let mut c = CostModel {
        default: Dist::parse(fc)?,
        per_syscall: Default::default(),
    };
    for o in overrides {
        c.add_override(o)?;
    }
    Ok(c)
}

/// `--compute-cpus` and `--control-cpus` checked against the CPUs this process may use; each
/// defaults to [`multios_emulate::cpus::default_split`] (the first and the last available CPU).
pub fn cpu_split(compute: Option<&str>, control: Option<&str>) -> Result<(CpuSet, CpuSet), SetupError> {
    split_within(&CpuSet::allowed(), compute, control)
}

fn split_within(
    avail: &CpuSet,
    compute: Option<&str>,
    control: Option<&str>,
) -> Result<(CpuSet, CpuSet), SetupError> {
    let (dc, dl) = multios_emulate::cpus::default_split(avail);
    let compute = match compute {
        Some(s) => multios_emulate::cpus::parse_flag("--compute-cpus", s, avail)?,
        None => dc,
    };
    let control = match control {
        Some(s) => multios_emulate::cpus::parse_flag("--control-cpus", s, avail)?,
        None => dl,
    };
    Ok((compute, control))
}

/// The `--fc` text: as given, or `0ns` when the policy delegates nothing (f_c is then never paid).
pub fn fc_or_zero<'a>(fc: Option<&'a str>, policy: &str, d: &Delegation) -> Result<&'a str, SetupError> {
    match fc {
        Some(f) => Ok(f),
        None if d.count() == 0 => Ok("0ns"),
        None => Err(SetupError::NoFc {
            policy: policy.to_string(),
            count: d.count(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain the CLI prints: each cause after the last, skipping repeats.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut s = e.to_string();
        let mut cur = e.source();
        while let Some(c) = cur {
            s = format!("{s}: {c}");
            cur = c.source();
        }
        s
    }

    #[test]
    fn issue_17_delegation_resolves_named_policies() {
        let all = resolve_delegation("all", None).expect("all");
        let none = resolve_delegation("none", None).expect("none");
        assert!(all.count() > 0);
        assert_eq!(none.count(), 0);
    }

    #[test]
    fn issue_17_a_bad_policy_names_the_flag() {
        let e = resolve_delegation("bogus", None).expect_err("bogus");
        assert!(chain(&e).starts_with("--policy 'bogus': "), "{}", chain(&e));
    }

    #[test]
    fn issue_17_a_fraction_policy_without_profile_fails() {
        assert!(resolve_delegation("least:0.5", None).is_err());
    }

    #[test]
    fn issue_17_cost_model_takes_overrides() {
        let c = cost_model("10us", &["write=50us".into()]).expect("cost");
        let secs = |d: &Dist| match d {
            Dist::Constant { secs } => *secs,
            other => panic!("not a constant: {other:?}"),
        };
        assert!((secs(&c.default) - 10e-6).abs() < 1e-15);
        let write = c.per_syscall.get("write").expect("write override");
        assert!((secs(write) - 50e-6).abs() < 1e-15);
        assert_eq!(c.per_syscall.len(), 1);
    }

    #[test]
    fn issue_17_cost_errors_name_the_flag() {
        let e = cost_model("ten", &[]).expect_err("bad --fc");
        assert!(e.to_string().starts_with("--fc 'ten'"), "{e}");
        let e = cost_model("10us", &["nosuchcall=5us".into()]).expect_err("bad override");
        assert!(e.to_string().starts_with("--fc-syscall "), "{e}");
    }

    #[test]
    fn issue_17_cpu_split_defaults_to_first_and_last() {
        let avail = CpuSet([0, 1, 2, 3].into());
        let (c, l) = split_within(&avail, None, None).expect("defaults");
        assert_eq!((c.to_vec(), l.to_vec()), (vec![0], vec![3]));
        let (c, l) = split_within(&avail, Some("1-2"), Some("0")).expect("given");
        assert_eq!((c.to_vec(), l.to_vec()), (vec![1, 2], vec![0]));
    }

    #[test]
    fn issue_17_cpu_split_errors_name_the_flag() {
        let avail = CpuSet([0, 1].into());
        let e = split_within(&avail, Some("5"), None).expect_err("CPU 5");
        assert!(e.to_string().contains("--compute-cpus"), "{e}");
        let e = split_within(&avail, None, Some("x")).expect_err("syntax");
        assert!(e.to_string().contains("--control-cpus"), "{e}");
    }

    #[test]
    fn issue_17_fc_defaults_to_zero_only_when_nothing_is_delegated() {
        let none = resolve_delegation("none", None).expect("none");
        assert_eq!(fc_or_zero(None, "none", &none).expect("0ns"), "0ns");
        let all = resolve_delegation("all", None).expect("all");
        assert_eq!(fc_or_zero(Some("5us"), "all", &all).expect("given"), "5us");
        let e = fc_or_zero(None, "all", &all).expect_err("needs --fc");
        assert!(e.to_string().starts_with("--policy 'all' delegates "), "{e}");
    }
}
