//! `NAME=VALUE` settings per system call (`--fc-for write=40us`, `--fc-syscall write=exp:5us`,
//! `--g-prime read=x0.5`): the one parser, which checks that NAME is a system call.

use crate::table::{by_name, by_number, UnknownSyscall};
use multios_units::{Duration, UnitError};

/// An error in a `NAME=VALUE` setting. Messages start with the setting as typed; the caller puts
/// its flag in front (`--fc-for 'wrtie=5us': unknown system call 'wrtie' (did you mean 'write'?)`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PerCallError {
    #[error("'{spec}': expected NAME=VALUE with NAME a system call, e.g. write=40us")]
    Shape { spec: String },
    #[error("'{spec}': {source}")]
    Name { spec: String, source: UnknownSyscall },
    #[error("'{spec}': {why}")]
    Value { spec: String, why: String },
}

/// Splits `NAME=VALUE` (spaces around either part ignored) and checks that NAME is an x86_64 system
/// call; the unknown name is named in the error, with the closest known one.
pub fn split_per_call(spec: &str) -> Result<(&'static str, &str), PerCallError> {
    let Some((name, value)) = spec.split_once('=') else {
        return Err(PerCallError::Shape { spec: spec.into() });
    };
    let name = name.trim();
    match by_name(name).and_then(by_number) {
        Some(known) => Ok((known, value.trim())),
        None => Err(PerCallError::Name {
            spec: spec.into(),
            source: UnknownSyscall::new(name),
        }),
    }
}

/// `NAME=VALUE` with VALUE read by `value` (its error becomes [`PerCallError::Value`]).
pub fn parse_per_call<T, E: std::fmt::Display>(
    spec: &str,
    value: impl FnOnce(&str) -> Result<T, E>,
) -> Result<(&'static str, T), PerCallError> {
    let (name, v) = split_per_call(spec)?;
    let v = value(v).map_err(|e| PerCallError::Value {
        spec: spec.into(),
        why: e.to_string(),
    })?;
    Ok((name, v))
}

/// `NAME=DURATION`, e.g. `write=40us` (the duration with its unit, as [`Duration::parse`]).
pub fn per_call_duration(spec: &str) -> Result<(&'static str, Duration), PerCallError> {
    parse_per_call(spec, |v| Duration::parse(v).map_err(|e: UnitError| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        per_call_duration(spec)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn parses_name_and_duration() {
        let (n, d) = per_call_duration("write=40us").unwrap_or(("", Duration::ZERO));
        assert_eq!(n, "write");
        assert!((d.secs() - 40e-6).abs() < 1e-15);
        assert_eq!(
            per_call_duration(" read = 2ms ").map(|(n, d)| (n, d.secs())),
            Ok(("read", 2e-3))
        );
        assert_eq!(split_per_call("getpid=x0.5"), Ok(("getpid", "x0.5")));
    }

    #[test]
    fn names_what_is_wrong() {
        assert_eq!(
            err("wrtie=5us"),
            "'wrtie=5us': unknown system call 'wrtie' (did you mean 'write'?)"
        );
        assert!(err("write").contains("expected NAME=VALUE"), "{}", err("write"));
        assert!(err("write=5").contains("has no unit"), "{}", err("write=5"));
        assert!(err("write=-2us").contains("negative"), "{}", err("write=-2us"));
        assert!(err("=5us").contains("unknown system call ''"), "{}", err("=5us"));
    }
}
