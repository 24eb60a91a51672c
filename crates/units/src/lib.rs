//! Durations with explicit units.
//!
//! Every duration a user types into `multios` carries a unit: `10us`, `6.3µs`, `2ms`, `1.5s`, `250ns`,
//! or a cycle count at a clock rate, `1500cycles@2.2GHz`. A bare number is refused, because `10` could
//! mean seconds or microseconds and the models are very sensitive to that choice.
//!
//! Internally a [`Duration`] is an `f64` number of seconds: the models work in real numbers and need
//! sub-nanosecond resolution for per-call costs averaged over millions of calls.

use std::fmt;
use std::str::FromStr;

/// An error in a duration the user typed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnitError {
    #[error("duration '{0}' has no unit: write e.g. '{0}us', '{0}ms' or '{0}s'")]
    MissingUnit(String),
    #[error("duration '{input}' has unknown unit '{unit}': use ns, us (or µs), ms, s, min or cycles@<f>GHz")]
    UnknownUnit { input: String, unit: String },
    #[error("duration '{0}' is not a number followed by a unit (e.g. 10us, 6.3µs, 2ms)")]
    NotANumber(String),
    #[error("duration '{0}' is negative: a duration must be ≥ 0")]
    Negative(String),
    #[error("duration '{0}' is not finite")]
    NotFinite(String),
    #[error("clock rate in '{0}' must be positive, e.g. 1500cycles@2.2GHz")]
    BadClock(String),
    #[error(
        "duration '{0}' is longer than the longest multios accepts, one year (31622400s): a per-call cost is \
         ns to ms, a run seconds to days"
    )]
    TooLong(String),
}

/// The longest duration [`Duration::parse`] accepts: 366 days, in seconds. Longer values are typing
/// mistakes (`--fc 1e99s`), and every duration then fits a `u64` of nanoseconds and a `std::time::Duration`.
pub const MAX_SECS: f64 = 366.0 * 86400.0;

fn bounded(input: &str, secs: f64) -> Result<Duration, UnitError> {
    if !secs.is_finite() {
        return Err(UnitError::NotFinite(input.to_string()));
    }
    if secs > MAX_SECS {
        return Err(UnitError::TooLong(input.trim().to_string()));
    }
    Ok(Duration(secs))
}

/// A non-negative duration, stored as seconds.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Duration(f64);

impl Duration {
    pub const ZERO: Duration = Duration(0.0);

    /// A duration of `s` seconds; negative or non-finite values are clamped to zero.
    pub fn from_secs(s: f64) -> Self {
        if s.is_finite() && s > 0.0 {
            Duration(s)
        } else {
            Duration(0.0)
        }
    }
    pub fn from_nanos(ns: f64) -> Self {
        Self::from_secs(ns * 1e-9)
    }
    pub fn from_micros(us: f64) -> Self {
        Self::from_secs(us * 1e-6)
    }
    pub fn from_millis(ms: f64) -> Self {
        Self::from_secs(ms * 1e-3)
    }
    pub fn secs(self) -> f64 {
        self.0
    }
    pub fn nanos(self) -> f64 {
        self.0 * 1e9
    }
    pub fn micros(self) -> f64 {
        self.0 * 1e6
    }

    /// Parses a duration with a unit. See the crate documentation for the accepted forms.
    pub fn parse(input: &str) -> Result<Self, UnitError> {
        let s = input.trim();
        if s.starts_with('-') {
            return Err(UnitError::Negative(input.to_string()));
        }
        if let Some((cycles, clock)) = s.split_once('@') {
            return parse_cycles(input, cycles, clock);
        }
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+'))
            .unwrap_or(s.len());
        // "1e3us": the exponent is part of the number, but a lone trailing 'e' is not.
        let (num, unit) = s.split_at(split);
        if num.is_empty() {
            return Err(UnitError::NotANumber(input.to_string()));
        }
        let value: f64 = num
            .parse()
            .map_err(|_| UnitError::NotANumber(input.to_string()))?;
        let unit = unit.trim();
        if unit.is_empty() {
            return Err(UnitError::MissingUnit(s.to_string()));
        }
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "min" => 60.0,
            _ => {
                return Err(UnitError::UnknownUnit {
                    input: input.to_string(),
                    unit: unit.to_string(),
                });
            }
        };
        bounded(input, value * scale)
    }
}

fn parse_cycles(input: &str, cycles: &str, clock: &str) -> Result<Duration, UnitError> {
    let cycles = cycles.trim();
    let n = cycles
        .strip_suffix("cycles")
        .or_else(|| cycles.strip_suffix("cyc"))
        .ok_or_else(|| UnitError::UnknownUnit {
            input: input.to_string(),
            unit: cycles.to_string(),
        })?;
    let n: f64 = n
        .trim()
        .parse()
        .map_err(|_| UnitError::NotANumber(input.to_string()))?;
    let clock = clock.trim();
    let (f, scale) = if let Some(v) = clock.strip_suffix("GHz") {
        (v, 1e9)
    } else if let Some(v) = clock.strip_suffix("MHz") {
        (v, 1e6)
    } else {
        return Err(UnitError::BadClock(input.to_string()));
    };
    let hz: f64 = f
        .trim()
        .parse::<f64>()
        .map_err(|_| UnitError::BadClock(input.to_string()))?
        * scale;
    if hz <= 0.0 || !hz.is_finite() {
        return Err(UnitError::BadClock(input.to_string()));
    }
    bounded(input, n / hz)
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

/// Prints with the largest unit that keeps the number ≥ 1 and four significant digits.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_secs(self.0))
    }
}

/// Formats seconds for humans: `6.300 µs`, `51.31 ms`, `2.000 s`.
pub fn format_secs(s: f64) -> String {
    let a = s.abs();
    let (v, u) = if a == 0.0 {
        (0.0, "s")
    } else if a < 1e-6 {
        (s * 1e9, "ns")
    } else if a < 1e-3 {
        (s * 1e6, "µs")
    } else if a < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    let digits = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {u}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &str) -> f64 {
        Duration::parse(s).map(|d| d.nanos()).unwrap_or(f64::NAN)
    }

    #[test]
    fn parses_the_documented_forms() {
        assert!((ns("10us") - 10_000.0).abs() < 1e-6);
        assert!((ns("6.3µs") - 6_300.0).abs() < 1e-6);
        assert!((ns("6.3μs") - 6_300.0).abs() < 1e-6);
        assert!((ns("2ms") - 2e6).abs() < 1e-3);
        assert!((ns("250ns") - 250.0).abs() < 1e-9);
        assert!((ns("1.5s") - 1.5e9).abs() < 1e-3);
        assert!((ns("1e3us") - 1e6).abs() < 1e-3);
        assert!((ns("1500cycles@2.2GHz") - 681.818_181).abs() < 1e-3);
    }

    #[test]
    fn refuses_bare_negative_and_unknown() {
        assert!(matches!(Duration::parse("10"), Err(UnitError::MissingUnit(_))));
        assert!(matches!(Duration::parse("-1us"), Err(UnitError::Negative(_))));
        assert!(matches!(
            Duration::parse("3 parsecs"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(Duration::parse("us"), Err(UnitError::NotANumber(_))));
        assert!(matches!(
            Duration::parse("5cycles@0GHz"),
            Err(UnitError::BadClock(_))
        ));
        let msg = Duration::parse("10")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("10us"), "{msg}");
    }

    #[test]
    fn display_picks_a_unit() {
        assert_eq!(Duration::from_nanos(6300.0).to_string(), "6.300 µs");
        assert_eq!(Duration::from_millis(51.3).to_string(), "51.30 ms");
        assert_eq!(Duration::from_nanos(150.0).to_string(), "150.0 ns");
    }

    #[test]
    fn issue_16_refuses_durations_longer_than_a_year() {
        for input in ["1e99s", "1e300min", "400000000s", "1e30cycles@1GHz"] {
            let e = Duration::parse(input).err();
            assert!(matches!(e, Some(UnitError::TooLong(_))), "{input}: {e:?}");
            let msg = e.map(|e| e.to_string()).unwrap_or_default();
            assert!(msg.contains(input) && msg.contains("one year"), "{msg}");
        }
        assert!(Duration::parse("366d").is_err());
        assert!((ns("365min") - 365.0 * 60e9).abs() < 1.0);
        assert!(Duration::parse("31622400s").is_ok());
    }

    proptest::proptest! {
        #[test]
        fn issue_16_every_accepted_duration_fits_u64_nanoseconds(v in 0f64..1e40, unit in 0usize..5) {
            let u = ["ns", "us", "ms", "s", "min"][unit];
            if let Ok(d) = Duration::parse(&format!("{v}{u}")) {
                proptest::prop_assert!(d.secs() <= MAX_SECS);
                proptest::prop_assert!(d.nanos() < u64::MAX as f64);
            }
        }

        #[test]
        fn display_round_trips_within_rounding(x in 1e-9f64..1e3) {
            let d = Duration::from_secs(x);
            let back = Duration::parse(&d.to_string().replace(' ', "")).map(|d| d.secs()).unwrap_or(-1.0);
            proptest::prop_assert!((back - x).abs() <= x * 1e-3);
        }
    }
}
