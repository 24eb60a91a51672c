//! Builds, with the system C compiler, the preload library of the `shm` and `migrate` mechanisms
//! (csrc/preload.c, which reads its configuration block through the C header of
//! crates/preload-abi) and the Table 3 microbenchmark run by `multios fc` (csrc/fcbench.c).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of `multios_preload_abi.h`, exported by the multios-preload-abi crate.
fn abi_include() -> String {
    std::env::var("DEP_MULTIOS_PRELOAD_ABI_INCLUDE")
        .expect("multios-preload-abi's build script exports its include directory")
}

fn compile(cc: &str, flags: &[&str], out: &Path, src: &str) {
    println!("cargo:rerun-if-changed={src}");
    let status = Command::new(cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", abi_include()))
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
    println!("cargo:rerun-if-changed=csrc/x86len.h");
    println!("cargo:rerun-if-changed=csrc/rwcache.h");
    let obj = |name: &str, flags: &[&str]| {
        let o = out.join(format!("{name}.o"));
        let mut f = vec!["-c", "-fPIC"];
        f.extend_from_slice(flags);
        compile(&cc, &f, &o, &format!("csrc/{name}.c"));
        o.to_str().expect("OUT_DIR is UTF-8").to_string()
    };
    // fast.c runs between a program's `syscall` site and the kernel: no vector registers.
    let fast = obj("fast", &["-mgeneral-regs-only"]);
    // altstack.c serves a program's sigaltstack between its `syscall` site and its next
    // instruction with only the general registers saved.
    let altstack = obj("altstack", &["-mgeneral-regs-only"]);
    let x86len = obj("x86len", &[]);
    let rewrite = obj("rewrite", &[]);
    let rwcache = obj("rwcache", &[]);
    let static_exec = obj("static_exec", &[]);
    let owncpu = obj("owncpu", &[]);
    let so = out.join("libmultios_preload.so");
    compile(
        &cc,
        &[
            "-shared",
            "-fPIC",
            "-fno-delete-null-pointer-checks",
            &fast,
            &altstack,
            &x86len,
            &rewrite,
            &rwcache,
            &static_exec,
            &owncpu,
        ],
        &so,
        "csrc/preload.c",
    );
    compile(&cc, &[&x86len], &out.join("multios-x86len"), "csrc/x86len_dump.c");
    compile(&cc, &[], &out.join("multios-fcbench"), "csrc/fcbench.c");
}
