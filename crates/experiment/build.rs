//! Builds, with the system C compiler, the synthetic benchmark of paper §4.1 (csrc/synth.c) that
//! `multios validate` runs natively and under emulation.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-changed=csrc/synth.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(out.join("multios-synth"))
        .arg("csrc/synth.c")
        .status()
        .unwrap_or_else(|e| {
            panic!("running the C compiler '{cc}' for csrc/synth.c: {e} (install gcc or set CC)")
        });
    assert!(status.success(), "compiling csrc/synth.c with '{cc}' failed");
}
