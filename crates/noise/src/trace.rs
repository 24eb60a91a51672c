//! Noise traces in LogGOPSim's text form (one detour per line: `start_ns duration_ns`) and
//! synthetic periodic signatures (`10Hz:2.5ms`, `1kHz:25us,10Hz:2.5ms`).
//!
//! A trace is replayed cyclically: its `length_ns` is the time it covers (a `# length_ns N`
//! comment line, written by `multios noise`, or else the end of its last detour).

use std::fmt::Write as _;
use std::path::Path;

/// The largest trace file read (millions of detours); `--trace /dev/zero` stops here.
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

/// The most detours a signature's cycle may hold (32 bytes each, twice: the trace and its replay).
pub const MAX_SIGNATURE_DETOURS: u64 = 10_000_000;

/// An error in a trace file or a signature.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read noise trace {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error(
        "{path}:{line}: {msg} (expected 'start_ns duration_ns', two non-negative integers, or a '#' comment)"
    )]
    Line { path: String, line: usize, msg: String },
    #[error("{path}: the trace has no detours and no '# length_ns N' line: nothing to replay")]
    Empty { path: String },
    #[error("signature '{input}': {msg} (expected FREQ:DURATION[,FREQ:DURATION…], e.g. '10Hz:2.5ms' or '1kHz:25us')")]
    Signature { input: String, msg: String },
    #[error(
        "the noise takes all of the time ({busy_ns} ns busy of {length_ns} ns): no work could ever finish"
    )]
    Saturated { busy_ns: f64, length_ns: f64 },
}

/// A cyclic noise trace: sorted, non-overlapping detours within [0, length_ns).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NoiseTrace {
    pub length_ns: f64,
    /// (start_ns, duration_ns), sorted by start, merged where they overlap.
    pub detours: Vec<(f64, f64)>,
}

impl NoiseTrace {
    /// Builds a trace from detours in any order; overlapping ones are merged and the length is
    /// at least the last detour's end.
    pub fn new(length_ns: f64, mut detours: Vec<(f64, f64)>) -> Self {
        detours.retain(|d| d.1 > 0.0);
        detours.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(detours.len());
        for (s, d) in detours {
            if let Some(last) = merged.last_mut() {
                if s <= last.0 + last.1 {
                    last.1 = last.1.max(s + d - last.0);
                    continue;
                }
            }
            merged.push((s, d));
        }
        let end = merged.last().map(|d| d.0 + d.1).unwrap_or(0.0);
        NoiseTrace {
            length_ns: length_ns.max(end),
            detours: merged,
        }
    }

    /// Total detour time.
    pub fn busy_ns(&self) -> f64 {
        // fold, not sum: an empty f64 sum is −0.0, printed "-0.0000%"
        self.detours.iter().map(|d| d.1).fold(0.0, |a, b| a + b)
    }

    /// Net noise: busy time / length (0..1).
    pub fn net_noise(&self) -> f64 {
        if self.length_ns > 0.0 {
            self.busy_ns() / self.length_ns
        } else {
            0.0
        }
    }

    /// Parses LogGOPSim text (see the module docs); `path` is used in error messages only.
    pub fn parse(text: &str, path: &str) -> Result<Self, TraceError> {
        let mut detours = Vec::new();
        let mut length = 0.0f64;
        let mut last_start = -1.0f64;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |msg: String| TraceError::Line {
                path: path.to_string(),
                line,
                msg,
            };
            let t = raw.trim();
            if let Some(c) = t.strip_prefix('#') {
                let mut it = c.split_whitespace();
                if it.next() == Some("length_ns") {
                    let v = it.next().unwrap_or("");
                    length =
                        v.parse::<u64>()
                            .map_err(|_| err(format!("bad length_ns '{v}'")))? as f64;
                }
                continue;
            }
            if t.is_empty() {
                continue;
            }
            let fields: Vec<&str> = t
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|f| !f.is_empty())
                .collect();
            if fields.len() != 2 {
                return Err(err(format!("{} fields in '{t}'", fields.len())));
            }
            let num = |f: &str, what: &str| {
                f.parse::<u64>()
                    .map_err(|_| err(format!("{what} '{f}' is not a non-negative integer")))
            };
            let s = num(fields[0], "start_ns")? as f64;
            let d = num(fields[1], "duration_ns")? as f64;
            if s < last_start {
                return Err(err(format!(
                    "start_ns {s} is before the previous line's start {last_start}"
                )));
            }
            last_start = s;
            detours.push((s, d));
        }
        if detours.is_empty() && length == 0.0 {
            return Err(TraceError::Empty {
                path: path.to_string(),
            });
        }
        Ok(NoiseTrace::new(length, detours))
    }

    /// Reads a trace file (at most [`MAX_TRACE_BYTES`]).
    pub fn load(path: &Path) -> Result<Self, TraceError> {
        let p = path.display().to_string();
        let text = multios_host::input::read_to_string_capped(path, MAX_TRACE_BYTES).map_err(|source| {
            TraceError::Read {
                path: p.clone(),
                source,
            }
        })?;
        Self::parse(&text, &p)
    }

    /// LogGOPSim text: a `# length_ns` comment and one `start_ns duration_ns` line per detour.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "# multios noise trace: start_ns duration_ns per detour\n# length_ns {:.0}\n",
            self.length_ns
        );
        for (st, d) in &self.detours {
            let _ = writeln!(s, "{st:.0} {d:.0}");
        }
        s
    }

    /// A periodic signature, e.g. "10Hz:2.5ms" or "1kHz:25us,10Hz:2.5ms" (the trace then spans
    /// the least common multiple of the periods). The components are independent sources, so
    /// their phases are staggered: component k of n starts at k/n of the shortest period (at most
    /// its own period less its detour, so that no detour wraps past the cycle). All at phase 0,
    /// every detour of `20Hz:1ms` at a 10 Hz detour's time merged with it: `10Hz:1ms,20Hz:1ms`
    /// was 2 % of net noise where its components add to 3 %. Detours that still overlap merge
    /// ([`NoiseTrace::new`]); [`signature_noise`] is what the components add to, for saying so.
    pub fn signature(input: &str) -> Result<Self, TraceError> {
        let bad = |msg: String| TraceError::Signature {
            input: input.to_string(),
            msg,
        };
        let parts = signature_parts(input)?;
        let mut length: u64 = 1;
        for &(p, _) in &parts {
            length = lcm(length, p);
            if length > 100_000_000_000 {
                return Err(bad("the periods' least common multiple exceeds 100 s".to_string()));
            }
        }
        // One detour per period of each part over the whole cycle: `1GHz:…,1Hz:…` would be 10⁹.
        let count = parts.iter().fold(0u64, |n, &(p, _)| n.saturating_add(length / p));
        if count > MAX_SIGNATURE_DETOURS {
            return Err(bad(format!(
                "it makes {count} detours per {length} ns cycle (the periods' least common multiple): at most {MAX_SIGNATURE_DETOURS}; use lower frequencies, or periods with a smaller common multiple"
            )));
        }
        let mut detours = Vec::with_capacity(count as usize);
        let shortest = parts.iter().map(|p| p.0).min().unwrap_or(1);
        let n = parts.len() as u64;
        for (k, &(p, d)) in parts.iter().enumerate() {
            // d < p (checked above), so the offset is a whole ns in [0, p − d]
            let room = (p as f64 - d).floor().max(0.0) as u64;
            let mut t = (shortest / n * k as u64).min(room);
            while t < length {
                detours.push((t as f64, d));
                t += p;
            }
        }
        let trace = NoiseTrace::new(length as f64, detours);
        trace.check()?;
        Ok(trace)
    }

    /// Refuses a trace whose noise leaves no time for work.
    pub fn check(&self) -> Result<(), TraceError> {
        if self.busy_ns() >= self.length_ns && self.length_ns > 0.0 {
            return Err(TraceError::Saturated {
                busy_ns: self.busy_ns(),
                length_ns: self.length_ns,
            });
        }
        Ok(())
    }
}

/// The net noise (0..1) a signature's components add to, Σ duration / period, before detours that
/// overlap merge: [`NoiseTrace::net_noise`] of [`NoiseTrace::signature`] is less when they do.
pub fn signature_noise(input: &str) -> Result<f64, TraceError> {
    Ok(signature_parts(input)?
        .iter()
        .map(|&(p, d)| d / p as f64)
        .fold(0.0, |a, b| a + b))
}

/// A signature's components: (period ns, detour ns) each, checked.
fn signature_parts(input: &str) -> Result<Vec<(u64, f64)>, TraceError> {
    let bad = |msg: String| TraceError::Signature {
        input: input.to_string(),
        msg,
    };
    let mut parts = Vec::new();
    for part in input.split(',') {
        let (f, d) = part
            .trim()
            .split_once(':')
            .ok_or_else(|| bad(format!("'{part}' has no ':'")))?;
        let hz =
            parse_freq(f.trim()).ok_or_else(|| bad(format!("'{f}' is not a frequency like 10Hz or 1kHz")))?;
        let dur = multios_units::Duration::parse(d.trim())
            .map_err(|e| bad(e.to_string()))?
            .nanos();
        let period = (1e9 / hz).round();
        if period < 1.0 {
            return Err(bad(format!("frequency '{f}' is above 1 GHz")));
        }
        if dur >= period {
            return Err(bad(format!(
                "detour {d} is not shorter than the period {} ns",
                period
            )));
        }
        parts.push((period as u64, dur));
    }
    Ok(parts)
}

fn parse_freq(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(v) = s.strip_suffix("kHz") {
        (v, 1e3)
    } else if let Some(v) = s.strip_suffix("MHz") {
        (v, 1e6)
    } else if let Some(v) = s.strip_suffix("Hz") {
        (v, 1.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v > 0.0 && v.is_finite()).then_some(v * scale)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_16_a_signature_of_too_many_detours_is_refused() {
        let e = NoiseTrace::signature("1000MHz:0.5ns,1Hz:0.5ns")
            .expect_err("too many detours")
            .to_string();
        assert!(
            e.contains("1000000001 detours") && e.contains("at most 10000000"),
            "{e}"
        );
        // Within the cap, the same two parts give a trace.
        assert!(NoiseTrace::signature("1kHz:25us,10Hz:2.5ms").is_ok());
    }

    #[test]
    fn issue_16_an_empty_trace_is_busy_for_plus_zero() {
        let t = NoiseTrace::new(100.0, Vec::new());
        assert!(t.busy_ns().is_sign_positive() && t.net_noise().is_sign_positive());
        assert_eq!(format!("{:.4}%", t.net_noise() * 100.0), "0.0000%");
    }

    #[test]
    fn parses_loggopsim_text_and_round_trips() {
        let t = NoiseTrace::parse("# c\n# length_ns 1000\n10 5\n\n100\t20\n", "x").expect("valid");
        assert_eq!(t.length_ns, 1000.0);
        assert_eq!(t.detours, vec![(10.0, 5.0), (100.0, 20.0)]);
        let again = NoiseTrace::parse(&t.to_text(), "y").expect("round trip");
        assert_eq!(again, t);
        assert!((t.net_noise() - 0.025).abs() < 1e-12);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = NoiseTrace::parse("10 5\n20 x\n", "noise.txt")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("noise.txt:2:") && e.contains("duration_ns 'x'"),
            "{e}"
        );
        let e = NoiseTrace::parse("# ok\n1 2 3\n", "n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("n:2:") && e.contains("3 fields"), "{e}");
        let e = NoiseTrace::parse("50 1\n10 1\n", "n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("n:2:"), "{e}");
        let e = NoiseTrace::parse("-5 1\n", "n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("n:1:"), "{e}");
        assert!(matches!(
            NoiseTrace::parse("# nothing\n", "n"),
            Err(TraceError::Empty { .. })
        ));
    }

    #[test]
    fn overlapping_detours_merge() {
        let t = NoiseTrace::new(100.0, vec![(10.0, 10.0), (15.0, 10.0), (50.0, 1.0)]);
        assert_eq!(t.detours, vec![(10.0, 15.0), (50.0, 1.0)]);
    }

    #[test]
    fn signatures() {
        let t = NoiseTrace::signature("10Hz:2.5ms").expect("valid");
        assert_eq!(t.length_ns, 1e8);
        assert_eq!(t.detours, vec![(0.0, 2.5e6)]);
        assert!((t.net_noise() - 0.025).abs() < 1e-12);
        let t = NoiseTrace::signature("1kHz:25us,100Hz:1ms").expect("valid");
        assert_eq!(t.length_ns, 1e7);
        // staggered by half the shortest period, the 1 ms detour at 0.5 ms still covers the 25 µs
        // one at 1 ms: merged (no phase avoids it), 1.225 ms busy where the components add to 1.25
        assert_eq!(t.detours.len(), 10);
        assert_eq!(t.detours[1], (500_000.0, 1e6));
        assert!((t.busy_ns() - 1_225_000.0).abs() < 1e-6);
        let parts = super::signature_noise("1kHz:25us,100Hz:1ms").expect("valid");
        assert!((parts - 0.125).abs() < 1e-12, "{parts}");
        for bad in ["10Hz", "10:2ms", "10Hz:2", "10Hz:200ms", "xHz:1ms"] {
            let e = NoiseTrace::signature(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains(bad) && e.contains("expected FREQ:DURATION"),
                "{bad}: {e}"
            );
        }
    }
}
