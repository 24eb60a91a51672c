//! Issue #17: one policy language, one resolver. The table [`Policy::resolve`] gives (what the
//! emulator and the LWK read) agrees with the model's b(s) for every policy text and profile.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use multios_model::{Policy, Workload};
use multios_profile::{Profile, SyscallStats};
use proptest::prelude::*;

/// A profile of up to 40 distinct real system calls with arbitrary counts and times.
fn profile() -> impl Strategy<Value = Profile> {
    let names: Vec<(u32, &'static str)> = multios_syscalls::names().collect();
    let n = names.len();
    (
        proptest::collection::btree_map(0..n, (0u64..1_000_000, 0.0f64..10.0), 0..40),
        0.0f64..100.0,
    )
        .prop_map(move |(calls, c)| {
            let mut p = Profile::new(vec!["prog".into()], "test", "exact");
            p.compute_time_s = c;
            p.syscalls = calls
                .into_iter()
                .filter_map(|(i, (count, total_s))| {
                    names.get(i).map(|&(nr, name)| SyscallStats {
                        name: name.into(),
                        nr,
                        count,
                        total_s,
                        ..Default::default()
                    })
                })
                .collect();
            p
        })
}

/// Every form of the language: the fixed policies, a list file (`list:` + the file the test writes),
/// the three fraction orders.
fn policy_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("all".to_string()),
        Just("none".to_string()),
        Just("mckernel".to_string()),
        Just("mos".to_string()),
        Just("mktrace".to_string()),
        Just("list:".to_string()),
        (0.0f64..=1.0).prop_map(|f| format!("least:{f}")),
        (0.0f64..=1.0).prop_map(|f| format!("most:{f}")),
        (0.0f64..=1.0, any::<u64>()).prop_map(|(f, s)| format!("random:{f}:{s}")),
    ]
}

fn list_file(dir: &scratch::Scratch) -> String {
    let f = dir.join("delegated.list");
    std::fs::write(&f, "# delegated\nread\nwrite, openat\nclose getppid\n")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", f.display()));
    f.display().to_string()
}

proptest! {
    #[test]
    fn issue_17_resolved_table_equals_the_models_b(
        text in policy_text(),
        prof in profile(),
    ) {
        let dir = scratch::Scratch::new("multios-model", "issue17");
        let text = if text == "list:" { format!("list:{}", list_file(&dir)) } else { text };
        let policy = Policy::parse(&text);
        prop_assert!(policy.is_ok(), "{text}: {:?}", policy.err());
        let Ok(policy) = policy else { return Ok(()) };
        let table = policy.resolve(Some(&prof));
        prop_assert!(table.is_ok(), "{text}: {:?}", table.err());
        let Ok(table) = table else { return Ok(()) };
        prop_assert_eq!(&table, &policy.resolve_workload(&Workload::from_profile(&prof)));
        let w = Workload::from_profile(&prof);
        let b = policy.delegated(&w);
        for c in &w.calls {
            prop_assert_eq!(table.is_delegated_name(&c.name), b.contains(&c.name), "{} {}", text, c.name);
        }
        // Calls the profile does not have: the policy's own sense, nothing for a fraction policy.
        for (nr, name) in multios_syscalls::names() {
            if w.calls.iter().any(|c| c.name == name) {
                continue;
            }
            let expected = policy.is_delegated(name).unwrap_or(false);
            prop_assert_eq!(table.is_delegated(nr), expected, "{} {}", text, name);
        }
        // The profile is needed exactly by the fraction policies.
        prop_assert_eq!(policy.resolve(None).is_err(), policy.needs_profile());
    }
}
