//! The CSV beside each figure must give back exactly the numbers drawn: every finite
//! `f64` (any bit pattern: subnormal, huge, negative zero aside) reads back unchanged.

use multios_plot::{to_csv, Figure, Heatmap, LineChart, Series};

/// SplitMix64: a fixed sequence of well-spread 64-bit patterns, no dependency needed.
fn patterns(n: usize) -> impl Iterator<Item = u64> {
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n).map(move |_| {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

fn values() -> Vec<f64> {
    let mut v: Vec<f64> = patterns(20_000)
        .map(f64::from_bits)
        .filter(|v| v.is_finite())
        .collect();
    // Values people actually plot, and the edges.
    v.extend([
        0.0,
        1.0,
        0.1,
        1.0 / 3.0,
        2.2e9,
        6.3e-6,
        1e-7,
        123_456_789.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
    ]);
    v.extend((0..2000).map(|i| f64::from(i) * 0.001));
    v
}

#[test]
fn line_csv_reads_back_every_finite_value_exactly() {
    let vals = values();
    let points: Vec<(f64, f64)> = vals
        .iter()
        .zip(vals.iter().rev())
        .map(|(&x, &y)| (x, y))
        .collect();
    let fig = Figure::Line(LineChart {
        series: vec![Series::points("s", points.clone())],
        ..Default::default()
    });
    let csv = to_csv(&fig);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("series,x,y"));
    let back: Vec<(f64, f64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 3, "{l}");
            let num = |s: &str| s.parse::<f64>().unwrap_or_else(|e| panic!("{s:?} in {l:?}: {e}"));
            (num(f[1]), num(f[2]))
        })
        .collect();
    assert_eq!(back.len(), points.len());
    for (a, b) in points.iter().zip(&back) {
        assert_eq!(a.0.to_bits(), b.0.to_bits(), "x {:e} came back as {:e}", a.0, b.0);
        assert_eq!(a.1.to_bits(), b.1.to_bits(), "y {:e} came back as {:e}", a.1, b.1);
    }
}

#[test]
fn heatmap_csv_is_y_major_and_exact() {
    let x: Vec<f64> = values().into_iter().take(50).collect();
    let y = vec![1e-8, 0.5, 3.0];
    let z: Vec<Vec<f64>> = y
        .iter()
        .map(|&yv| x.iter().map(|&xv| xv * yv).collect())
        .collect();
    let fig = Figure::Heatmap(Heatmap {
        x: x.clone(),
        y: y.clone(),
        z: z.clone(),
        ..Default::default()
    });
    let csv = to_csv(&fig);
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|s| s.parse::<f64>().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), x.len() * y.len());
    for (yi, yv) in y.iter().enumerate() {
        for (xi, xv) in x.iter().enumerate() {
            let r = &rows[yi * x.len() + xi];
            let want = [*xv, *yv, z[yi][xi]];
            for k in 0..3 {
                // A non-finite product (overflow) is an empty field, parsed here as NaN.
                if want[k].is_finite() {
                    assert_eq!(r[k].to_bits(), want[k].to_bits(), "row {yi},{xi} col {k}");
                } else {
                    assert!(r[k].is_nan());
                }
            }
        }
    }
}
