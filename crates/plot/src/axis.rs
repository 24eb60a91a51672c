//! Axis ranges, tick positions and tick labels.
//!
//! Everything is computed in *plot space*: the data value on a linear axis, its base-10
//! logarithm on a logarithmic one. The drawing library then only sees linear axes with
//! the tick positions chosen here, which keeps one code path for all four combinations.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// One axis: its range and ticks in plot space.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Base-10 logarithmic.
    pub log: bool,
    /// Plot-space range.
    pub range: Range<f64>,
    /// Labelled tick positions (plot space).
    pub ticks: Vec<f64>,
    /// Unlabelled grid lines (plot space).
    pub minor: Vec<f64>,
    /// Distance between linear ticks; labels use as many decimals as it needs.
    step: f64,
    /// Ticks were placed by [`Axis::ticks_at`]: label each with its own value.
    own_values: bool,
}

/// About how many labelled ticks a linear axis gets.
const TARGET_TICKS: f64 = 5.0;
/// At most this many labelled decades on a log axis.
const MAX_DECADES: usize = 8;

impl Axis {
    /// Data value → plot space.
    pub fn to_plot(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    /// An axis that covers data values `min..=max`, widened to whole ticks.
    pub fn covering(min: f64, max: f64, log: bool) -> Self {
        if log {
            let (lo, mut hi) = (min.log10().floor(), max.log10().ceil());
            if hi <= lo {
                hi = lo + 1.0;
            }
            Self::exact(lo, hi, true)
        } else {
            let (min, max) = widen(min, max);
            let step = nice((max - min) / TARGET_TICKS);
            let lo = (min / step).floor() * step;
            let hi = (max / step).ceil() * step;
            Self::exact(lo, hi, false)
        }
    }

    /// An axis over exactly `lo..hi` in plot space (log10 values when `log`).
    pub fn exact(lo: f64, hi: f64, log: bool) -> Self {
        let (lo, hi) = widen(lo, hi);
        if log {
            let (ticks, minor) = log_ticks(lo, hi);
            Self {
                log,
                range: lo..hi,
                ticks,
                minor,
                step: 1.0,
                own_values: false,
            }
        } else {
            let step = nice((hi - lo) / TARGET_TICKS);
            let ticks = multiples(lo, hi, step);
            let minor = multiples(lo, hi, step / 2.0);
            Self {
                log,
                range: lo..hi,
                ticks,
                minor,
                step,
                own_values: false,
            }
        }
    }

    /// A linear axis over `lo..hi` with no ticks or grid lines at all.
    pub fn bare(lo: f64, hi: f64) -> Self {
        Self {
            log: false,
            range: lo..hi,
            ticks: Vec::new(),
            minor: Vec::new(),
            step: 1.0,
            own_values: false,
        }
    }

    /// The same range with labelled ticks exactly at `values` (data units) and no grid
    /// lines, e.g. at the cell centres of a small heat map.
    pub fn ticks_at(self, values: &[f64]) -> Self {
        let ticks = values.iter().map(|&v| self.to_plot(v)).collect();
        Self {
            ticks,
            minor: Vec::new(),
            own_values: true,
            ..self
        }
    }

    /// The label of the tick at plot-space position `t`.
    pub fn label(&self, t: f64) -> String {
        if self.own_values {
            compact(if self.log { 10f64.powf(t) } else { t })
        } else if self.log {
            let v = 10f64.powf(t);
            let e = t.round();
            if (t - e).abs() < 1e-9 && !(-3.0..=4.0).contains(&e) {
                format!("1e{}", e as i64)
            } else {
                compact(v)
            }
        } else {
            // Avoid "-0.0" from rounding.
            let t = if t.abs() < self.step * 1e-9 { 0.0 } else { t };
            let big = self.range.start.abs().max(self.range.end.abs()) >= 1e5;
            let decimals = (-self.step.log10().floor()).max(0.0) as usize;
            if big || decimals > 4 {
                compact(t)
            } else {
                format!("{t:.decimals$}")
            }
        }
    }
}

/// The drawing library sees an axis as a linear coordinate over its plot-space range,
/// with ticks and grid lines exactly where they were chosen here.
impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// Gives an empty range some width, so that a constant series still gets an axis.
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        (lo, hi)
    } else {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - d, hi + d)
    }
}

/// The "nice" number (1, 2 or 5 × 10^k) nearest to `raw`.
pub fn nice(raw: f64) -> f64 {
    let e = raw.log10().floor();
    let base = 10f64.powf(e);
    let f = raw / base;
    let m = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    m * base
}

/// Multiples of `step` inside `lo..=hi` (with a little tolerance for rounding).
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let eps = step * 1e-9;
    let first = ((lo - eps) / step).ceil() as i64;
    let last = ((hi + eps) / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Labelled and grid ticks for a log axis over `lo..hi` (log10 values): decades when
/// at least two fit, else 1-2-5 steps, else every integer multiple.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let eps = 1e-9;
    let inside = |t: f64| t >= lo - eps && t <= hi + eps;
    let decades: Vec<i64> = ((lo - 1.0).floor() as i64..=(hi + 1.0).ceil() as i64).collect();
    let at = |mantissas: &[f64]| -> Vec<f64> {
        let mut v: Vec<f64> = decades
            .iter()
            .flat_map(|&d| mantissas.iter().map(move |m| d as f64 + m.log10()))
            .collect();
        v.retain(|&t| inside(t));
        v
    };
    let every: Vec<f64> = (1..=9).map(f64::from).collect();
    let mut ticks = at(&[1.0]);
    let minor = if ticks.len() <= 6 {
        at(&every)
    } else {
        ticks.clone()
    };
    if ticks.len() > MAX_DECADES {
        let keep = ticks.len().div_ceil(MAX_DECADES);
        ticks.retain(|t| (t.round() as i64).rem_euclid(keep as i64) == 0);
    }
    if ticks.len() < 2 {
        ticks = at(&[1.0, 2.0, 5.0]);
    }
    if ticks.len() < 2 {
        ticks = at(&every);
    }
    (ticks, minor)
}

/// A short label for any value: about three significant digits, exponent form when
/// very large or very small.
pub fn compact(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.2e}");
        return match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", trim_zeros(m)),
            None => s,
        };
    }
    let decimals = (2.0 - a.log10().floor()).max(0.0) as usize;
    trim_zeros(&format!("{v:.decimals$}"))
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<String> {
        a.ticks.iter().map(|&t| a.label(t)).collect()
    }

    #[test]
    fn nice_numbers_are_one_two_five() {
        assert_eq!(nice(0.13), 0.1);
        assert_eq!(nice(0.25), 0.2);
        assert_eq!(nice(3.3), 5.0);
        assert_eq!(nice(8.0), 10.0);
        assert_eq!(nice(1700.0), 2000.0);
    }

    #[test]
    fn linear_axis_covers_data_with_round_ticks() {
        let a = Axis::covering(1.0, 9.3, false);
        assert_eq!(a.range, 0.0..10.0);
        assert_eq!(labels(&a), ["0", "2", "4", "6", "8", "10"]);
        let a = Axis::covering(0.1, 0.93, false);
        assert_eq!(labels(&a), ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    }

    #[test]
    fn constant_data_still_gets_an_axis() {
        let a = Axis::covering(3.0, 3.0, false);
        assert!(
            a.range.start < 3.0 && a.range.end > 3.0 && a.ticks.len() >= 2,
            "{a:?}"
        );
        let z = Axis::covering(0.0, 0.0, false);
        assert!(z.range.start < 0.0 && z.range.end > 0.0);
        let l = Axis::covering(10.0, 10.0, true);
        assert_eq!(l.range, 1.0..2.0);
    }

    #[test]
    fn log_axis_ticks_decades() {
        let a = Axis::covering(2e-7, 3e-3, true);
        assert_eq!(a.range, -7.0..-2.0);
        assert_eq!(labels(&a), ["1e-7", "1e-6", "1e-5", "1e-4", "0.001", "0.01"]);
        assert_eq!(a.to_plot(1e-5), -5.0);
        let wide = Axis::covering(1e-30, 1e30, true);
        assert!(wide.ticks.len() <= MAX_DECADES, "{:?}", wide.ticks);
    }

    #[test]
    fn short_log_range_falls_back_to_one_two_five() {
        let a = Axis::exact(2f64.log10(), 30f64.log10(), true);
        assert_eq!(labels(&a), ["2", "5", "10", "20"]);
        let a = Axis::exact(2f64.log10(), 4.5f64.log10(), true);
        assert_eq!(labels(&a), ["2", "3", "4"]);
    }

    #[test]
    fn ticks_at_given_values_are_labelled_with_them() {
        let a = Axis::exact(-0.125, 1.125, false).ticks_at(&[0.0, 0.25, 0.5]);
        assert_eq!(labels(&a), ["0", "0.25", "0.5"]);
        let l = Axis::exact(-0.5, 2.5, true).ticks_at(&[1.0, 10.0, 100.0]);
        assert_eq!(l.ticks, [0.0, 1.0, 2.0]);
        assert_eq!(labels(&l), ["1", "10", "100"]);
        assert!(l.minor.is_empty());
    }

    #[test]
    fn compact_labels() {
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(1.5e-6), "1.5e-6");
        assert_eq!(compact(123456.0), "1.23e5");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(42.0), "42");
        assert_eq!(compact(-1.23456), "-1.23");
    }

    #[test]
    fn mapping_is_linear_in_plot_space() {
        let a = Axis::covering(1e-3, 1e3, true);
        assert_eq!(a.map(&a.to_plot(1.0), (0, 600)), 300);
        assert_eq!(a.map(&-3.0, (100, 700)), 100);
        assert_eq!(a.key_points(10usize).len(), a.minor.len());
    }

    #[test]
    fn exact_axis_keeps_its_range() {
        let a = Axis::exact(0.7, 3.2, false);
        assert_eq!(a.range, 0.7..3.2);
        assert_eq!(labels(&a), ["1.0", "1.5", "2.0", "2.5", "3.0"]);
    }
}
