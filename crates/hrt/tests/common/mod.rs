//! Helpers shared by the split-execution tests: where this build's libmultios_hrt.so is, and
//! compiling a C test program against it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding libmultios_hrt.so for this build (the test binary's `deps/` or its parent).
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for d in [deps.clone(), deps.parent().expect("target dir").to_path_buf()] {
        if d.join("libmultios_hrt.so").exists() {
            return d;
        }
    }
    panic!(
        "libmultios_hrt.so not found next to {}: build the crate (cargo build -p multios-hrt)",
        exe.display()
    );
}

/// Compiles `tests/c/SRC` into `out` with the crate's header, linked with `libs` (and pthread,
/// dl), the library's directory in its run path.
pub fn compile_with(src: &str, out: &Path, libs: &[&str]) {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    let o = Command::new("gcc")
        .args(["-O2", "-g", "-Wall", "-I"])
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(src))
        .arg("-L")
        .arg(&lib)
        .args(libs)
        .args(["-lpthread", "-ldl"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
}

/// Compiles `tests/c/NAME.c` once per test binary, into a scratch directory of its own, linked
/// with the library and `extra` libraries; the program's path.
pub fn program_once(cell: &'static std::sync::OnceLock<PathBuf>, name: &str, extra: &[&str]) -> PathBuf {
    cell.get_or_init(|| {
        let dir =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hrt-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let out = dir.join(name);
        let mut libs = vec!["-lmultios_hrt"];
        libs.extend_from_slice(extra);
        compile_with(&format!("{name}.c"), &out, &libs);
        out
    })
    .clone()
}
