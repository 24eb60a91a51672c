//! Compiles the eBPF program `src/bpf/map.bpf.c` with clang into OUT_DIR (embedded by
//! `record/bpf.rs`), and the benchmark programs `csrc/ipcbench.c` and `csrc/prodcons.c` with the
//! system C compiler (embedded by `programs.rs`). Needs clang with the BPF target and the Linux UAPI
//! headers (Debian: clang, linux-libc-dev); `CLANG` and `CC` override the compilers.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(mut cmd: Command, what: &str) {
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => panic!("cannot run the compiler for {what}: {e}; install clang/gcc or set CLANG/CC"),
    };
    if !status.success() {
        panic!("compiling {what} failed ({status})");
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src/bpf/map.bpf.c");
    println!("cargo:rerun-if-changed=csrc/ipcbench.c");
    println!("cargo:rerun-if-changed=csrc/prodcons.c");
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let mut cmd = Command::new(&clang);
    cmd.args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror"]);
    for dir in ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"] {
        if Path::new(dir).is_dir() {
            cmd.arg(format!("-I{dir}"));
        }
    }
    cmd.arg("-c")
        .arg("src/bpf/map.bpf.c")
        .arg("-o")
        .arg(out.join("map.bpf.o"));
    run(cmd, "src/bpf/map.bpf.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for (name, extra) in [("ipcbench", None), ("prodcons", Some("-pthread"))] {
        let mut cmd = Command::new(&cc);
        cmd.args(["-O2", "-Wall", "-Werror"]);
        cmd.args(extra);
        cmd.arg("-o")
            .arg(out.join(format!("multios-{name}")))
            .arg(format!("csrc/{name}.c"));
        run(cmd, &format!("csrc/{name}.c"));
    }
}
