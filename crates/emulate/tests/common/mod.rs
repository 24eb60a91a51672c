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

/// Compiles C source `src` into `dir/name` (with -pthread), panicking with the compiler's verdict.
pub fn cc(dir: &std::path::Path, name: &str, src: &str) -> std::path::PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap_or_else(|e| panic!("writing {}: {e}", c.display()));
    let out = dir.join(name);
    let st = std::process::Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap_or_else(|e| panic!("running cc: {e}"));
    assert!(st.success(), "compiling {}", c.display());
    out
}

/// `sh -c "CMD > FILE"` under mechanism `m` with interception `i`, everything delegated, f_c 0;
/// the file's text (the emulated run's stdout is the test's own).
pub fn emulated(
    dir: &std::path::Path,
    tag: &str,
    cmd: &str,
    m: Mechanism,
    i: multios_emulate::Interception,
) -> String {
    let out = dir.join(format!("{tag}-{}-{}.txt", m.name(), i.name()));
    let sh = format!("{cmd} > {}", out.display());
    let cfg = config(m, Delegation::all(), 0.0, &["sh", "-c", &sh]);
    let r = multios_emulate::run_with(&cfg, i)
        .unwrap_or_else(|e| panic!("{cmd} under {} ({}): {e}", m.name(), i.name()));
    assert_eq!(
        r.exit,
        multios_emulate::Exit::Code(0),
        "{cmd} under {} ({}): {:?}",
        m.name(),
        i.name(),
        r.warnings
    );
    std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}

/// `sh -c CMD` natively; its stdout (it must succeed).
pub fn native(cmd: &str) -> String {
    let o = std::process::Command::new("sh")
        .args(["-c", cmd])
        .output()
        .expect("sh");
    assert!(o.status.success(), "{cmd}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}
