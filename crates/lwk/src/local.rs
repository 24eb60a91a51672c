//! The LWK's local set as `lwk run` is told it: `--local FILE` (the calls to serve locally) or
//! `--policy TEXT` (with `--policy-profile FILE` for the fraction policies), in `emulate
//! --policy`'s language, resolved by the one resolver and intersected with what the LWK can serve.

use crate::policy::{LocalSet, MANDATORY_LOCAL, OPTIONAL_LOCAL};
use multios_model::{ModelError, Policy};
use std::collections::BTreeSet;
use std::path::Path;

/// A `--local` file or `--policy` text that gives no local set.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("reading --local {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error(transparent)]
    List(#[from] multios_syscalls::SetError),
    #[error("--policy '{text}'")]
    Policy { text: String, source: ModelError },
    #[error(
        "--policy '{text}' picks its calls from a profile: add --policy-profile FILE (a profile of the \
         program, e.g. from multios profile)"
    )]
    NeedsProfile { text: String },
    #[error(transparent)]
    Profile(#[from] multios_profile::ProfileError),
    #[error(transparent)]
    Resolve(#[from] ModelError),
}

/// The local set of a `--local` file, and the names in it the LWK has no local implementation of
/// (they stay delegated).
#[derive(Debug)]
pub struct FromFile {
    pub set: LocalSet,
    pub ignored: Vec<String>,
}

/// Reads `--local FILE`: one system call a line.
pub fn from_file(path: &Path) -> Result<FromFile, LocalError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LocalError::Read {
        path: label.clone(),
        source,
    })?;
    let names = multios_syscalls::parse_list(&label, &text)?;
    Ok(from_names(&label, names))
}

fn from_names(label: &str, names: BTreeSet<String>) -> FromFile {
    let can_be_local: BTreeSet<&str> = MANDATORY_LOCAL.iter().chain(OPTIONAL_LOCAL).copied().collect();
    let ignored = names
        .iter()
        .filter(|n| !can_be_local.contains(n.as_str()))
        .cloned()
        .collect();
    FromFile {
        set: LocalSet::from_names(label, names),
        ignored,
    }
}

/// `--policy TEXT`, with `profile` (`--policy-profile`) read only when the policy ranks calls.
pub fn from_policy(text: &str, profile: Option<&Path>) -> Result<LocalSet, LocalError> {
    let p = Policy::parse(text).map_err(|source| LocalError::Policy {
        text: text.to_string(),
        source,
    })?;
    let prof = match profile {
        Some(path) if p.needs_profile() => Some(multios_profile::load(path)?),
        Some(_) => None,
        None if p.needs_profile() => {
            return Err(LocalError::NeedsProfile {
                text: text.to_string(),
            })
        }
        None => None,
    };
    Ok(LocalSet::from_delegation(&p.resolve(prof.as_ref())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_17_names_the_lwk_cannot_serve_are_reported() {
        let names: BTreeSet<String> = ["getpid", "no_such_call_here"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = from_names("local.txt", names);
        assert_eq!(f.ignored, vec!["no_such_call_here".to_string()]);
        assert_eq!(f.set.label(), "local.txt");
    }

    #[test]
    fn issue_17_a_missing_local_file_names_the_flag() {
        let e = from_file(Path::new("/nonexistent/local.txt")).expect_err("missing");
        assert!(
            e.to_string()
                .starts_with("reading --local /nonexistent/local.txt: "),
            "{e}"
        );
    }

    #[test]
    fn issue_17_policies_resolve_like_emulates() {
        let all = from_policy("all", None).expect("all");
        assert!(
            !all.overrides().kept_local.is_empty(),
            "the mandatory calls stay local"
        );
        let e = from_policy("bogus", None).expect_err("bogus");
        assert_eq!(e.to_string(), "--policy 'bogus'");
        let e = from_policy("least:0.5", None).expect_err("needs a profile");
        assert!(e.to_string().contains("add --policy-profile FILE"), "{e}");
    }
}
