//! Helpers shared by the integration tests.
#![allow(dead_code)]

use multios_emulate::{Config, CostModel, CpuSet, Delegation, Mechanism, Report};

#[path = "../../../../testsupport/scratch.rs"]
mod scratch;

pub fn config(m: Mechanism, d: Delegation, fc: f64, argv: &[&str]) -> Config {
    let avail = CpuSet::allowed();
    let (compute, control) = multios_emulate::cpus::default_split(&avail);
    Config {
        mechanism: m,
        delegation: d,
        cost: CostModel::constant(fc),
        compute,
        control,
        argv: argv.iter().map(std::ffi::OsString::from).collect(),
        allow_below_floor: true,
        wait: Default::default(),
        rewrite: true,
    }
}

pub fn run(m: Mechanism, d: Delegation, fc: f64, argv: &[&str]) -> Report {
    match multios_emulate::run(&config(m, d, fc, argv)) {
        Ok(r) => r,
        Err(e) => panic!("emulating {argv:?} under {}: {e}", m.name()),
    }
}

pub fn named(name: &str) -> Delegation {
    let set = multios_syscalls::NamedSet::parse(name).unwrap_or_else(|e| panic!("{e}"));
    Delegation::from_fn(name, |n| set.is_delegated(n))
}

/// A fresh directory, removed when the test ends (issue #16).
pub fn tmpdir(tag: &str) -> std::path::PathBuf {
    scratch::until_test_ends("multios-emulate", tag)
}
