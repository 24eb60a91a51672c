/// Invalid model inputs. Each message names the parameter and the accepted range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "p = {0} is outside [0, 1]: p is the share of time spent in system calls (e.g. 0.0374 for 3.74%)"
    )]
    P(f64),
    #[error("γ (gamma) = {0} must be > 0: it is the compute speedup of the LWK (1 = same speed as Linux)")]
    Gamma(f64),
    #[error("--terms: unknown term '{term}': use none, all, or a list of {known}")]
    Term { term: String, known: String },
    #[error(
        "fraction = {0} is outside [0, 1]: it is the share of distinct system calls forwarded (e.g. 0.9)"
    )]
    Fraction(f64),
    #[error("{what} = {value} must be a finite time ≥ 0")]
    Time { what: String, value: f64 },
    #[error("{0}")]
    UnknownSyscall(#[from] multios_syscalls::UnknownSyscall),
    #[error("{0}")]
    Set(#[from] multios_syscalls::SetError),
    #[error("cannot read policy list {path}: {msg}")]
    ListFile { path: String, msg: String },
    #[error("policy '{0}' picks its calls from a profile: add --profile FILE (a profile of the program)")]
    NeedsProfile(String),
    #[error("unknown policy '{0}': use all, none, mckernel, mos, mktrace, list:FILE, least:F, most:F or random:F[:SEED]")]
    Policy(String),
    #[error(
        "queue is unstable: arrival rate λ = {lambda:.4e}/s ≥ capacity c·μ = {capacity:.4e}/s; \
         add delegates (--servers) or delegate fewer calls"
    )]
    Unstable { lambda: f64, capacity: f64 },
    #[error("{what} = {value} must be > 0")]
    Positive { what: String, value: f64 },
    #[error("servers (c) must be ≥ 1")]
    Servers,
    #[error("measured speedup {measured} is out of reach: {why}")]
    Unreachable { measured: f64, why: String },
    #[error("no (predicted, measured) pairs given")]
    NoPairs,
    #[error("{at}: expected name,predicted,measured")]
    PairsLine { at: String },
    #[error("{at}: {column} '{text}' is not a number")]
    PairsNumber {
        at: String,
        column: &'static str,
        text: String,
        source: std::num::ParseFloatError,
    },
    #[error("{at}: {column} {value} is not a speedup (a finite number > 0)")]
    PairsValue {
        at: String,
        column: &'static str,
        value: f64,
    },
    #[error(
        "{at}: predicted {predicted:e} and measured {measured:e} are too far apart: their relative error \
         |predicted − measured| / measured, in %, is not a finite number"
    )]
    PairsApart {
        at: String,
        predicted: f64,
        measured: f64,
    },
    #[error(
        "the workload is empty: C = 0 and every g(s) = 0, so there is no time to speed up; give a compute \
         time (--compute) or a profile of a run that took time"
    )]
    EmptyWorkload,
    #[error(
        "t_d = 0: {what} = 0 with no compute time left (C/γ = 0), so the projected speedup S_r would be \
         infinite; give g' a time > 0 (--g-prime NAME=TIME or NAME=xFACTOR) or a compute time"
    )]
    NoProjectedTime { what: String },
    #[error("{what} exceeds 2^64 - 1 calls: the counts n(s) given are corrupt or mistyped")]
    CountOverflow { what: String },
}

pub(crate) fn check_gamma(g: f64) -> Result<(), ModelError> {
    if g.is_finite() && g > 0.0 {
        Ok(())
    } else {
        Err(ModelError::Gamma(g))
    }
}

pub(crate) fn check_time(what: &str, v: f64) -> Result<(), ModelError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ModelError::Time {
            what: what.into(),
            value: v,
        })
    }
}
