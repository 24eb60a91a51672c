//! Issue #6: a signature's components are independent noise sources. All at phase 0, the 20 Hz
//! detours of `10Hz:1ms,20Hz:1ms` fell on the 10 Hz ones every other period and merged with
//! them: 2 % of net noise where the components add to 3 %, silently.

use multios_noise::scale::{self, Collective, Config, Engine};
use multios_noise::trace::signature_noise;
use multios_noise::NoiseTrace;

#[test]
fn issue_6_signature_components_are_staggered_and_add_up() {
    let t = NoiseTrace::signature("10Hz:1ms,20Hz:1ms").expect("valid");
    assert_eq!(t.length_ns, 1e8);
    assert_eq!(t.detours, vec![(0.0, 1e6), (25e6, 1e6), (75e6, 1e6)]);
    assert!((t.net_noise() - 0.03).abs() < 1e-12, "{}", t.net_noise());
    let parts = signature_noise("10Hz:1ms,20Hz:1ms").expect("valid");
    assert!((parts - t.net_noise()).abs() < 1e-12, "{parts}");
    // one rank loses what the components add to: 1 ms of work per 100 ms meets 3 ms of noise
    let cfg = Config {
        work_ns: 100e6,
        steps: 100,
        seed: 1,
        collective: Collective::Barrier { cost_ns: 0.0 },
        engine: Engine::Auto,
    };
    let pts = scale::run(&t, &[1], &cfg, false, true).expect("runs");
    let one = pts[0].cosched.expect("co-scheduled");
    assert!((one - 1.03).abs() < 0.003, "{pts:?}");
    // a detour as long as another component's period cannot miss all of its detours: merged,
    // and what the components add to says how much
    let t = NoiseTrace::signature("1kHz:25us,100Hz:1ms").expect("valid");
    let parts = signature_noise("1kHz:25us,100Hz:1ms").expect("valid");
    assert!(t.net_noise() < parts - 1e-4, "{} {parts}", t.net_noise());
    // phases stay inside the cycle: no detour wraps past its end
    let t = NoiseTrace::signature("10Hz:1ms,20Hz:49ms").expect("valid");
    assert_eq!(t.length_ns, 1e8);
    assert!((t.net_noise() - 0.99).abs() < 1e-12, "{}", t.net_noise());
}
