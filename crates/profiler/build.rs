//! Compiles the eBPF programs with clang into OUT_DIR: `profiler.bpf.o` (the profiler) and
//! `floor{0,1,2}.bpf.o` (the cost-floor variants timed by `multios bench profiler --floor`), which
//! the library embeds. Needs clang (any version with the BPF target) and the Linux UAPI headers
//! (Debian: clang, linux-libc-dev). `CLANG` overrides the compiler.

use std::path::{Path, PathBuf};
use std::process::Command;

fn compile(clang: &str, src: &str, out: &Path, defines: &[&str]) {
    let mut cmd = Command::new(clang);
    cmd.args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror"])
        .args(defines);
    // The multiarch directory holds asm/types.h, which linux/types.h includes.
    for dir in ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"] {
        if Path::new(dir).is_dir() {
            cmd.arg(format!("-I{dir}"));
        }
    }
    cmd.arg("-c").arg(src).arg("-o").arg(out);
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => panic!(
            "cannot run '{clang}' to compile the eBPF program {src}: {e}; install clang (Debian: apt-get install clang) or set CLANG"
        ),
    };
    if !status.success() {
        panic!("'{clang}' failed to compile the eBPF program {src} ({status}); the UAPI headers come from linux-libc-dev");
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src/bpf/profiler.bpf.c");
    println!("cargo:rerun-if-changed=src/bpf/floor.bpf.c");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    compile(&clang, "src/bpf/profiler.bpf.c", &out.join("profiler.bpf.o"), &[]);
    for v in 0..4 {
        compile(
            &clang,
            "src/bpf/floor.bpf.c",
            &out.join(format!("floor{v}.bpf.o")),
            &[&format!("-DVARIANT={v}")],
        );
    }
}
