//! Builds, with the system C compiler, the preload library of the `migrate` mechanism
//! (csrc/preload.c) and the Table 3 microbenchmark run by `multios fc` (csrc/fcbench.c).

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile(cc: &str, flags: &[&str], out: &Path, src: &str) {
    println!("cargo:rerun-if-changed={src}");
    let status = Command::new(cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(src)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler '{cc}' for {src}: {e} (install gcc or set CC)"));
    assert!(status.success(), "compiling {src} with '{cc}' failed");
}

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    println!("cargo:rerun-if-changed=csrc/preload.h");
    let fast = out.join("fast.o");
    compile(&cc, &["-c", "-fPIC", "-mgeneral-regs-only"], &fast, "csrc/fast.c");
    let so = out.join("libmultios_preload.so");
    let fast = fast.to_str().expect("OUT_DIR is UTF-8").to_string();
    compile(
        &cc,
        &["-shared", "-fPIC", "-fno-delete-null-pointer-checks", &fast],
        &so,
        "csrc/preload.c",
    );
    compile(&cc, &[], &out.join("multios-fcbench"), "csrc/fcbench.c");
    compile(&cc, &[], &out.join("multios-synth"), "csrc/synth.c");
}
