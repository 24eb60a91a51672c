//! Counts the report cannot have, said (reported 2026-11-28): a process killed by a signal (a
//! pipeline's writer whose reader quit) never dumps its counts, and an execve whose environment
//! dropped LD_PRELOAD (`env -i`) runs natively; both were missing from the totals without a word
//! unless no process at all wrote statistics.

mod common;
use multios_emulate::{Delegation, Exit, Mechanism};

fn warnings(cmd: &str) -> Vec<String> {
    let r = common::run(Mechanism::Shm, Delegation::all(), 0.0, &["sh", "-c", cmd]);
    assert_eq!(r.exit, Exit::Code(0), "{cmd}: {:?}", r.warnings);
    r.warnings
}

#[test]
fn lost_statistics_and_cleared_preloads_are_reported() {
    let w = warnings("yes | head -c 100000 > /dev/null");
    assert!(
        w.iter()
            .any(|l| l.contains("wrote no statistics") && l.contains("1 of")),
        "{w:?}"
    );
    let w = warnings("env -i /bin/sh -c true");
    assert!(
        w.iter()
            .any(|l| l.contains("no longer preloads the library") && l.contains("first: /bin/sh")),
        "{w:?}"
    );
    let w = warnings("true; /bin/true");
    assert!(
        !w.iter()
            .any(|l| l.contains("wrote no statistics") || l.contains("no longer preloads")),
        "{w:?}"
    );
}
