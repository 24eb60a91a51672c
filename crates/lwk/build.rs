//! Builds, with the system C compiler, the LWK's function-override object (csrc/overrides.c), a
//! shared library the guest's ld.so preloads when `lwk run --overrides FILE` is given.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-changed=csrc/overrides.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let so = out.join("libmultios_lwk_overrides.so");
    let status = Command::new(&cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg("csrc/overrides.c")
        .status()
        .unwrap_or_else(|e| {
            panic!("running the C compiler '{cc}' for csrc/overrides.c: {e} (install gcc or set CC)")
        });
    assert!(status.success(), "compiling csrc/overrides.c with '{cc}' failed");
}
