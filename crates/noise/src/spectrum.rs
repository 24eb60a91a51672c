//! Power spectrum of a uniformly sampled series (an FTQ series) and its dominant periods.
//! A plain iterative radix-2 FFT on the zero-padded, mean-removed, Hann-windowed series.

use serde::Serialize;

/// A peak of the power spectrum.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Peak {
    pub freq_hz: f64,
    pub period_s: f64,
    /// Power relative to the strongest peak (1 = strongest).
    pub rel_power: f64,
}

/// In-place radix-2 FFT of `re`/`im` (length a power of two).
fn fft(re: &mut [f64], im: &mut [f64]) {
    let n = re.len();
    debug_assert!(n.is_power_of_two() && im.len() == n);
    // bit-reversal permutation
    let mut j = 0usize;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let ang = -2.0 * std::f64::consts::PI / len as f64;
        let (wr, wi) = (ang.cos(), ang.sin());
        for start in (0..n).step_by(len) {
            let (mut cr, mut ci) = (1.0f64, 0.0f64);
            for k in 0..len / 2 {
                let (a, b) = (start + k, start + k + len / 2);
                let tr = re[b] * cr - im[b] * ci;
                let ti = re[b] * ci + im[b] * cr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
                let ncr = cr * wr - ci * wi;
                ci = cr * wi + ci * wr;
                cr = ncr;
            }
        }
        len <<= 1;
    }
}

/// One-sided power spectrum of `xs` sampled every `dt_s` seconds: (frequency Hz, power) for bins 1..N/2.
pub fn power_spectrum(xs: &[f64], dt_s: f64) -> Vec<(f64, f64)> {
    let n = xs.len();
    if n < 4 || dt_s <= 0.0 {
        return Vec::new();
    }
    let mean = xs.iter().fold(0.0, |a, b| a + b) / n as f64;
    let m = n.next_power_of_two();
    let mut re = vec![0.0; m];
    let mut im = vec![0.0; m];
    for (i, x) in xs.iter().enumerate() {
        let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / (n - 1) as f64).cos();
        re[i] = (x - mean) * w;
    }
    fft(&mut re, &mut im);
    (1..=m / 2)
        .map(|k| (k as f64 / (m as f64 * dt_s), re[k] * re[k] + im[k] * im[k]))
        .collect()
}

/// The `k` strongest local maxima of the spectrum, strongest first, at least 5 bins apart.
pub fn dominant_periods(xs: &[f64], dt_s: f64, k: usize) -> Vec<Peak> {
    let spec = power_spectrum(xs, dt_s);
    let mut peaks: Vec<(f64, f64)> = Vec::new();
    for i in 0..spec.len() {
        let p = spec[i].1;
        let left = if i > 0 { spec[i - 1].1 } else { f64::NEG_INFINITY };
        let right = if i + 1 < spec.len() {
            spec[i + 1].1
        } else {
            f64::NEG_INFINITY
        };
        if p > 0.0 && p >= left && p > right {
            peaks.push(spec[i]);
        }
    }
    peaks.sort_by(|a, b| b.1.total_cmp(&a.1));
    // one broad peak shows as several neighbouring local maxima: keep the strongest of them
    let bin = spec.first().map(|x| x.0).unwrap_or(0.0);
    let mut kept: Vec<(f64, f64)> = Vec::new();
    for p in peaks {
        if kept.len() == k {
            break;
        }
        if kept.iter().all(|q| (q.0 - p.0).abs() > 4.0 * bin) {
            kept.push(p);
        }
    }
    let peaks = kept;
    let top = peaks.first().map(|p| p.1).unwrap_or(1.0);
    peaks
        .into_iter()
        .map(|(f, p)| Peak {
            freq_hz: f,
            period_s: 1.0 / f,
            rel_power: p / top,
        })
        .collect()
}

/// The fundamental of a pulse train: the lowest-frequency peak among `peaks` with at least half the
/// strongest peak's power (a train of short detours has equally strong harmonics).
pub fn fundamental(peaks: &[Peak]) -> Option<&Peak> {
    peaks
        .iter()
        .filter(|p| p.rel_power >= 0.5)
        .min_by(|a, b| a.freq_hz.total_cmp(&b.freq_hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_matches_a_plain_dft() {
        let xs: Vec<f64> = (0..16).map(|i| ((i * 7) % 5) as f64 - 1.3).collect();
        let (mut re, mut im) = (xs.clone(), vec![0.0; 16]);
        fft(&mut re, &mut im);
        for k in 0..16 {
            let (mut r, mut i) = (0.0, 0.0);
            for (t, x) in xs.iter().enumerate() {
                let a = -2.0 * std::f64::consts::PI * (k * t) as f64 / 16.0;
                r += x * a.cos();
                i += x * a.sin();
            }
            assert!((r - re[k]).abs() < 1e-9 && (i - im[k]).abs() < 1e-9, "bin {k}");
        }
    }

    #[test]
    fn finds_the_period_of_a_square_wave() {
        // FTQ-like: 1 ms slots, work drops every 25 ms for 10 ms → 40 Hz.
        let xs: Vec<f64> = (0..4000)
            .map(|i| if i % 25 < 10 { 80.0 } else { 100.0 })
            .collect();
        let peaks = dominant_periods(&xs, 1e-3, 5);
        let p = &peaks[0];
        assert!((p.period_s - 0.025).abs() < 0.0005, "{peaks:?}");
    }

    #[test]
    fn finds_the_fundamental_of_a_pulse_train() {
        // one short detour every 10 slots of 100 µs → 1 kHz with equally strong harmonics
        let xs: Vec<f64> = (0..8192)
            .map(|i| if i % 10 == 3 { 50.0 } else { 100.0 })
            .collect();
        let peaks = dominant_periods(&xs, 100e-6, 8);
        let f = fundamental(&peaks).expect("a peak");
        assert!((f.freq_hz - 1000.0).abs() < 2.0, "{peaks:?}");
    }
}
