//! Builds, with the system C compiler, the LWK's function-override objects: csrc/overrides.c,
//! threads.c and prefault.c into the object the guest's ld.so preloads when `lwk run --overrides
//! FILE` is given, and csrc/heap.c into the malloc family's own object.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    for f in [
        "overrides.c",
        "threads.c",
        "prefault.c",
        "heap.c",
        "overrides.h",
        "lwk_syscall.h",
    ] {
        println!("cargo:rerun-if-changed=csrc/{f}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    compile(
        &cc,
        &out.join("libmultios_lwk_overrides.so"),
        &["csrc/overrides.c", "csrc/threads.c", "csrc/prefault.c"],
        &["-pthread"],
    );
    // An allocator must not have its own calls turned into malloc/calloc by the compiler.
    compile(
        &cc,
        &out.join("libmultios_lwk_heap.so"),
        &["csrc/heap.c"],
        &["-pthread", "-fno-builtin"],
    );
}

fn compile(cc: &str, so: &std::path::Path, sources: &[&str], flags: &[&str]) {
    let status = Command::new(cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
        .args(flags)
        .arg("-o")
        .arg(so)
        .args(sources)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| {
            panic!("running the C compiler '{cc}' for {sources:?}: {e} (install gcc or set CC)")
        });
    assert!(status.success(), "compiling {sources:?} with '{cc}' failed");
}
