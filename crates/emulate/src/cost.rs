//! The forwarding cost f_c: a constant, an exponential distribution, or samples resampled uniformly,
//! optionally different per system call. Costs are drawn per call and per direction.

use crate::tsc::Calibration;
use multios_units::Duration;
use std::collections::BTreeMap;

/// An error in a cost specification. `flag` is where the cost was typed: `--fc`, or `COST` inside
/// a `--fc-syscall NAME=COST`.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    #[error("{flag} '{input}': {cause}")]
    Unit {
        flag: &'static str,
        input: String,
        cause: multios_units::UnitError,
    },
    #[error("{flag} '{input}': unknown distribution; use DURATION, exp:DURATION or samples:FILE")]
    UnknownKind { flag: &'static str, input: String },
    #[error("{flag} samples file '{file}': {why}")]
    Samples {
        flag: &'static str,
        file: String,
        why: String,
    },
    #[error("--fc-syscall {0}")]
    Override(#[from] multios_syscalls::PerCallError),
}

/// One distribution of the one-way forwarding cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Dist {
    /// Always this many seconds.
    Constant { secs: f64 },
    /// Exponentially distributed with this mean (seconds).
    Exponential { mean: f64 },
    /// Drawn uniformly from these samples (seconds).
    Samples { secs: Vec<f64> },
}

impl Dist {
    /// Parses `10us`, `exp:10us` or `samples:FILE` (FILE: one duration with unit per line, `#` comments).
    pub fn parse(input: &str) -> Result<Self, CostError> {
        Self::parse_as("--fc", input)
    }

    /// [`Dist::parse`], with errors naming `flag` as where the cost was typed.
    pub fn parse_as(flag: &'static str, input: &str) -> Result<Self, CostError> {
        let unit = |s: &str| {
            Duration::parse(s).map_err(|cause| CostError::Unit {
                flag,
                input: input.to_string(),
                cause,
            })
        };
        if let Some(rest) = input.strip_prefix("exp:") {
            return Ok(Dist::Exponential {
                mean: unit(rest)?.secs(),
            });
        }
        if let Some(file) = input.strip_prefix("samples:") {
            return Self::from_samples_file(flag, file);
        }
        if input.contains(':') {
            return Err(CostError::UnknownKind {
                flag,
                input: input.to_string(),
            });
        }
        Ok(Dist::Constant {
            secs: unit(input)?.secs(),
        })
    }

    fn from_samples_file(flag: &'static str, file: &str) -> Result<Self, CostError> {
        let bad = |why: String| CostError::Samples {
            flag,
            file: file.to_string(),
            why,
        };
        // At most 64 MiB: `samples:/dev/zero` stops there instead of filling the memory.
        let text = multios_host::input::read_to_string_capped(std::path::Path::new(file), 64 << 20)
            .map_err(|e| bad(e.to_string()))?;
        let mut secs = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let d = Duration::parse(l).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
            secs.push(d.secs());
        }
        if secs.is_empty() {
            return Err(bad(
                "no samples (one duration with a unit per line, e.g. 6.3us)".into()
            ));
        }
        Ok(Dist::Samples { secs })
    }

    /// The mean of the distribution, seconds.
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Constant { secs } => *secs,
            Dist::Exponential { mean } => *mean,
            Dist::Samples { secs } => secs.iter().sum::<f64>() / secs.len().max(1) as f64,
        }
    }

    /// The smallest value the distribution can take, seconds (0 for the exponential).
    pub fn min(&self) -> f64 {
        match self {
            Dist::Constant { secs } => *secs,
            Dist::Exponential { .. } => 0.0,
            Dist::Samples { secs } => secs.iter().copied().fold(f64::INFINITY, f64::min),
        }
    }
}

impl std::fmt::Display for Dist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dist::Constant { secs } => write!(f, "{}", Duration::from_secs(*secs)),
            Dist::Exponential { mean } => write!(f, "exp(mean {})", Duration::from_secs(*mean)),
            Dist::Samples { secs } => {
                write!(
                    f,
                    "{} samples (mean {})",
                    secs.len(),
                    Duration::from_secs(self.mean())
                )
            }
        }
    }
}

/// The cost of every delegated call: a default and per-syscall overrides.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostModel {
    pub default: Dist,
    pub per_syscall: BTreeMap<String, Dist>,
}

impl CostModel {
    pub fn constant(secs: f64) -> Self {
        CostModel {
            default: Dist::Constant { secs },
            per_syscall: BTreeMap::new(),
        }
    }

    /// Adds an override `NAME=COST` (COST as in [`Dist::parse`]); NAME must be a system call.
    pub fn add_override(&mut self, spec: &str) -> Result<(), CostError> {
        let (name, cost) = multios_syscalls::parse_per_call(spec, |v| Dist::parse_as("COST", v))?;
        self.per_syscall.insert(name.to_string(), cost);
        Ok(())
    }

    /// The distribution for system call `nr`.
    pub fn for_nr(&self, nr: u32) -> &Dist {
        multios_syscalls::by_number(nr)
            .and_then(|n| self.per_syscall.get(n))
            .unwrap_or(&self.default)
    }

    /// The smallest one-way cost any call can get, seconds.
    pub fn min(&self) -> f64 {
        self.per_syscall
            .values()
            .map(Dist::min)
            .fold(self.default.min(), f64::min)
    }

    /// Per-syscall tick samplers for a fast lookup table indexed by syscall number.
    pub fn samplers(&self, cal: Calibration) -> Vec<Sampler> {
        (0..multios_syscalls::MAX_NR as u32)
            .map(|nr| Sampler::new(self.for_nr(nr), cal))
            .collect()
    }
}

/// Draws one-way costs in TSC ticks, without allocation or system calls.
#[derive(Debug, Clone)]
pub enum Sampler {
    Constant(u64),
    Exponential { mean_ticks: f64 },
    Samples(Vec<u64>),
}

impl Sampler {
    pub fn new(d: &Dist, cal: Calibration) -> Self {
        match d {
            Dist::Constant { secs } => Sampler::Constant(cal.ticks(*secs)),
            Dist::Exponential { mean } => Sampler::Exponential {
                mean_ticks: mean * cal.hz,
            },
            Dist::Samples { secs } => Sampler::Samples(secs.iter().map(|s| cal.ticks(*s)).collect()),
        }
    }

    /// One draw.
    #[inline]
    pub fn draw(&self, rng: &mut Rng) -> u64 {
        match self {
            Sampler::Constant(t) => *t,
            Sampler::Exponential { mean_ticks } => (-mean_ticks * (1.0 - rng.unit()).ln()).round() as u64,
            Sampler::Samples(v) => v[(rng.next_u64() % v.len() as u64) as usize],
        }
    }
}

/// xorshift64*: small, fast, good enough to draw delays.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_kinds() {
        assert_eq!(
            Dist::parse("10us").ok(),
            Some(Dist::Constant { secs: 10.0 * 1e-6 })
        );
        assert_eq!(
            Dist::parse("exp:2ms").ok(),
            Some(Dist::Exponential { mean: 2e-3 })
        );
        let e = Dist::parse("gauss:1us")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("unknown distribution"), "{e}");
        let e = Dist::parse("10").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("no unit"), "{e}");
    }

    #[test]
    fn samples_file_and_errors() {
        let dir = std::env::temp_dir().join(format!("multios-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let f = dir.join("s.txt");
        std::fs::write(&f, "# measured\n1us\n3us\n").ok();
        let d = Dist::parse(&format!("samples:{}", f.display())).ok();
        assert_eq!(
            d,
            Some(Dist::Samples {
                secs: vec![1e-6, 3e-6]
            })
        );
        std::fs::write(&f, "1us\n3\n").ok();
        let e = Dist::parse(&format!("samples:{}", f.display()))
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().contains("line 2"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn overrides_resolve_by_number_and_reject_typos() {
        let mut m = CostModel::constant(1e-6);
        assert!(m.add_override("write=5us").is_ok());
        let w = multios_syscalls::by_name("write").unwrap_or(0);
        assert_eq!(m.for_nr(w), &Dist::Constant { secs: 5.0 * 1e-6 });
        assert_eq!(m.for_nr(0), &Dist::Constant { secs: 1e-6 });
        let e = m
            .add_override("wrtie=5us")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("did you mean 'write'"), "{e}");
        let e = m
            .add_override("write=-2us")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("--fc-syscall 'write=-2us': COST '-2us'") && e.contains("negative"),
            "{e}"
        );
        assert!(m.add_override("read=exp:3us").is_ok());
    }

    #[test]
    fn exponential_draws_have_the_right_mean() {
        let s = Sampler::Exponential { mean_ticks: 1000.0 };
        let mut r = Rng::new(7);
        let n = 200_000;
        let mean = (0..n).map(|_| s.draw(&mut r) as f64).sum::<f64>() / n as f64;
        assert!((mean - 1000.0).abs() < 15.0, "mean {mean}");
    }
}
