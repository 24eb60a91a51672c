//! Issue #15: the cross-CPU guard of `multios validate --suite` in the paired comparison. A pair
//! whose probes of the compute ↔ control round trip disagree is run again, in the same ABBA order,
//! and every kept pair carries its level and the f_c measured in its group. The probes here are a
//! fixed sequence (the machine's levels cannot be chosen); the runs are real emulated runs of
//! `echo`. Needs root (the emulator's trampoline at address 0). No timing is asserted.

use multios_emulate::{CostModel, Delegation, Interception, Mechanism, Wait};
use multios_experiment::compare;
use multios_experiment::crosslink::Prober;
use multios_experiment::validate::real::level::{FcProbe, Guard, LEVEL_RETRIES};
use multios_experiment::ExperimentError;

/// Probes from a script.
struct Script(std::collections::VecDeque<f64>);

impl Prober for Script {
    fn probe(&mut self) -> Result<Option<f64>, ExperimentError> {
        self.0
            .pop_front()
            .map(Some)
            .ok_or_else(|| ExperimentError::Run("the script ran out".into()))
    }
}

#[test]
fn issue_15_a_pair_that_saw_two_levels_is_run_again_in_the_same_order() {
    let (compute, control) = multios_experiment::setup::cpu_split(None, None).expect("CPUs");
    let c = multios_emulate::Config {
        mechanism: Mechanism::Shm,
        delegation: Delegation::all(),
        cost: CostModel::constant(10e-6),
        compute,
        control,
        argv: vec!["echo".into(), "level".into()],
        allow_below_floor: false,
        rewrite: true,
        wait: Wait::default(),
    };
    let s = compare::Setup {
        emulate: &c,
        interception: Interception::Eager,
        pairs: 3,
        workdir: None,
        setup: None,
        cleanup: None,
    };
    // Four probes per group (start, after the f_c, between the runs, after them). Pair 0 at
    // 140 ns; pair 1's first try moves to 600 ns between its runs and is run again, steady at
    // 600 ns; pair 2 at 60 ns.
    let seq = [
        140.0, 141.0, 139.0, 142.0, //
        140.0, 140.0, 600.0, 610.0, //
        600.0, 605.0, 598.0, 601.0, //
        60.0, 61.0, 62.0, 60.0,
    ];
    let mut fcs = [20e-6, 21e-6, 22e-6, 23e-6].into_iter();
    let fc: FcProbe<'_> = Box::new(move || fcs.next().ok_or_else(|| "no f_c left".to_string()));
    let mut g = Guard::on(Script(seq.into_iter().collect()), LEVEL_RETRIES, 3, Some(fc));
    let o = compare::run_hooked(&s, None, &mut g).expect("the comparison runs (as root)");
    assert!(o.invalid.is_none(), "{:?}", o.invalid);
    assert!(o.output_differences.is_empty(), "{:?}", o.output_differences);
    let l = &g.levels;
    // Three pairs kept, in ABBA order, one try run again.
    assert_eq!(
        o.pairs.iter().map(|p| p.order).collect::<Vec<_>>(),
        ["NE", "EN", "NE"]
    );
    assert_eq!((l.kept.len(), l.repeated.len()), (3, 1));
    assert_eq!(l.repeated[0].probes_ns, [140.0, 140.0, 600.0, 610.0]);
    // Each kept pair is the comparison's pair, with its own level and f_c.
    for (k, p) in l.kept.iter().zip(&o.pairs) {
        assert_eq!((k.native_s, k.target_s), (p.native_secs, p.emulated_secs));
        assert!(k.steady);
    }
    assert_eq!(
        l.kept.iter().map(|p| p.level_ns).collect::<Vec<_>>(),
        [140.5, 600.5, 60.5]
    );
    assert_eq!(l.kept[1].attempt, 2);
    assert_eq!(l.fc_model_s(), Some(22e-6), "the kept groups' f_c: 20, 22, 23 µs");
}
