//! Colours: series colours that stay distinct for colour-blind readers (the
//! Okabe–Ito set) and a dark-to-light colour scale for heat maps.

use plotters::style::RGBColor;

/// Series colours, in the order series get them.
const SERIES: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
    RGBColor(240, 228, 66),  // yellow
];

/// The colour of series number `i` (repeats after eight).
pub fn series(i: usize) -> RGBColor {
    SERIES[i % SERIES.len()]
}

/// Anchors of the heat-map scale, low to high: dark purple, blue, teal, green, yellow.
const SCALE: [(f64, f64, f64); 5] = [
    (50.0, 16.0, 80.0),
    (55.0, 90.0, 150.0),
    (30.0, 150.0, 140.0),
    (110.0, 200.0, 90.0),
    (250.0, 230.0, 40.0),
];

/// Colour of a cell that has no value.
pub const NO_VALUE: RGBColor = RGBColor(190, 190, 190);

/// The scale colour at `t` in \[0, 1\] (clamped), interpolated linearly between anchors.
pub fn scale(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (SCALE.len() - 1) as f64;
    let i = (pos.floor() as usize).min(SCALE.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (SCALE[i], SCALE[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black or white, whichever reads better on `c`.
pub fn text_on(c: RGBColor) -> RGBColor {
    let luma = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if luma > 140.0 {
        RGBColor(0, 0, 0)
    } else {
        RGBColor(255, 255, 255)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_ends_at_its_anchors_and_clamps() {
        assert_eq!(scale(0.0), RGBColor(50, 16, 80));
        assert_eq!(scale(1.0), RGBColor(250, 230, 40));
        assert_eq!(scale(-3.0), scale(0.0));
        assert_eq!(scale(7.0), scale(1.0));
        assert_eq!(scale(f64::NAN), scale(0.0));
    }

    #[test]
    fn scale_gets_lighter_from_low_to_high() {
        let luma = |c: RGBColor| 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
        let l: Vec<f64> = (0..=20).map(|i| luma(scale(f64::from(i) / 20.0))).collect();
        assert!(l.windows(2).all(|w| w[1] > w[0]), "{l:?}");
    }

    #[test]
    fn text_contrasts_with_the_cell() {
        assert_eq!(text_on(scale(0.0)), RGBColor(255, 255, 255));
        assert_eq!(text_on(scale(1.0)), RGBColor(0, 0, 0));
        assert_ne!(series(0), series(1));
        assert_eq!(series(8), series(0));
    }
}
