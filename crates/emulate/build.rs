//! Builds the preload library of the `migrate` mechanism (csrc/preload.c) with the system C compiler.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=csrc/preload.c");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("libmultios_preload.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&so)
        .arg("csrc/preload.c")
        .status()
        .unwrap_or_else(|e| {
            panic!("running the C compiler '{cc}' for csrc/preload.c: {e} (install gcc or set CC)")
        });
    assert!(status.success(), "compiling csrc/preload.c with '{cc}' failed");
}
