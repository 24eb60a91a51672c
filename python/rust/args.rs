//! Python arguments → the model's values, with the CLI's parsers (`multios-units` durations,
//! `multios-syscalls` per-call settings, `Policy::parse`) and errors that name the keyword argument.

use multios_model::{Call, GPrime, Params, Policy, Workload};
use multios_units::Duration;
use pyo3::FromPyObject;

#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error(
        "{arg}: '{text}' is not a duration: {source} (give seconds as a number, or text such as \"10us\")"
    )]
    Duration {
        arg: String,
        text: String,
        source: multios_units::UnitError,
    },
    #[error("{arg}: {msg}")]
    PerCall { arg: &'static str, msg: String },
    #[error("g_prime '{spec}': factor '{factor}' is not a number (e.g. write=x0.5)")]
    Factor { spec: String, factor: String },
    #[error("policy: {0}")]
    Policy(multios_model::ModelError),
    #[error("calls[{index}]: '{name}': {msg}")]
    Syscall { index: usize, name: String, msg: String },
}

/// A duration as Python gives it: seconds (a number) or text with a unit ("10us", "750cycles@2.2GHz").
#[derive(Debug, Clone, FromPyObject)]
pub enum Dur {
    Secs(f64),
    Text(String),
}

impl Dur {
    pub fn secs(&self, arg: &str) -> Result<f64, ArgError> {
        match self {
            Dur::Secs(s) => Ok(*s),
            Dur::Text(t) => Duration::parse(t)
                .map(Duration::secs)
                .map_err(|source| ArgError::Duration {
                    arg: arg.to_string(),
                    text: t.clone(),
                    source,
                }),
        }
    }
}

/// γ, f_c, the policy and the per-syscall refinements: the CLI's `--gamma --fc --policy --fc-for
/// --g-prime --wait`.
pub struct ParamSpec {
    pub gamma: f64,
    pub fc: Dur,
    pub policy: String,
    pub fc_for: Vec<String>,
    pub g_prime: Vec<String>,
    pub wait: Dur,
}

impl ParamSpec {
    pub fn policy(&self) -> Result<Policy, ArgError> {
        Policy::parse(&self.policy).map_err(ArgError::Policy)
    }

    pub fn params(&self) -> Result<Params, ArgError> {
        let mut p = Params::new(self.gamma, self.fc.secs("fc")?);
        p.wait_per_call = self.wait.secs("wait")?;
        for spec in &self.fc_for {
            let (name, d) = multios_syscalls::per_call_duration(spec).map_err(|e| ArgError::PerCall {
                arg: "fc_for",
                msg: e.to_string(),
            })?;
            p.fc_per_syscall.insert(name.to_string(), d.secs());
        }
        for spec in &self.g_prime {
            let (name, v) = multios_syscalls::split_per_call(spec).map_err(|e| ArgError::PerCall {
                arg: "g_prime",
                msg: e.to_string(),
            })?;
            let g = match v.strip_prefix('x') {
                Some(f) => GPrime::Factor(f.parse().map_err(|_| ArgError::Factor {
                    spec: spec.clone(),
                    factor: f.to_string(),
                })?),
                None => GPrime::PerCall(Dur::Text(v.to_string()).secs("g_prime")?),
            };
            p.g_prime.insert(name.to_string(), g);
        }
        Ok(p)
    }
}

/// C and (name, n, g) rows → a workload; names are checked against the syscall table as the CLI's
/// `--syscall NAME:N:G` does.
pub fn workload(c: f64, calls: Vec<(String, u64, f64)>) -> Result<Workload, ArgError> {
    let mut out = Vec::with_capacity(calls.len());
    for (index, (name, n, g)) in calls.into_iter().enumerate() {
        if multios_syscalls::by_name(&name).is_none() {
            let msg = multios_syscalls::UnknownSyscall::new(&name).to_string();
            return Err(ArgError::Syscall { index, name, msg });
        }
        out.push(Call { name, n, g });
    }
    Ok(Workload { c, calls: out })
}
