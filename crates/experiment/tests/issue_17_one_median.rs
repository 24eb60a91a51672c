//! Issue #17: one median, one rule — the crates that used to carry their own median (with NaN,
//! 0.0 or None when empty, the upper or the averaged middle value) now agree with multios-stats.

use multios_experiment::stats;

#[test]
fn issue_17_every_crate_takes_the_same_median() {
    let even = [4.0, 1.0, 3.0, 2.0];
    let odd = [5.0, 1.0, 3.0];
    for v in [&even[..], &odd[..]] {
        let m = stats::median(v).expect("non-empty");
        assert_eq!(multios_model::median(v), Some(m));
        assert_eq!(multios_lwk::bench::median(v), m);
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(multios_noise::stats::quantile(&sorted, 0.5), m);
        let s = multios_emulate::Summary::of(&mut v.to_vec()).expect("non-empty");
        assert_eq!(s.median, m);
    }
    assert_eq!(stats::median(&even), Some(2.5));
    assert_eq!(multios_model::median(&[]), None);
    assert!(multios_lwk::bench::median(&[]).is_nan());
}

#[test]
fn issue_17_the_synthetic_benchmark_is_the_experiment_crates_own() {
    // lwk validate builds the same source the emulator's validate runs (one file, csrc/synth.c).
    assert!(multios_experiment::synth::SOURCE.contains("int main"));
}
