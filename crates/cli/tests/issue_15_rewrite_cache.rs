//! Issue #15, the interception's start-up cost on multi-process programs: the eager interception
//! classifies every executable mapping of every image a program executes, which made `make -j2`
//! of four small C files 7× slower under `emulate --policy none` (gcc's cc1 has 25 MB of text). The
//! rewrite cache keeps what was found per file and mapping; these tests check that a second run
//! is served from it with the same result, that a changed file is classified again, and that
//! entries or a directory others could have written are not trusted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[path = "../../../testsupport/exec_file.rs"]
mod exec_file;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

/// `multios --json emulate --policy P -- sh -c 'PROG -l /usr/bin > OUT'` with the cache at `cache`
/// (`off` for none): (the report, the program's output).
fn emulate(cache: &str, policy: &str, prog: &Path, out: &Path) -> (serde_json::Value, String) {
    let script = format!("{} -l /usr/bin > {}", prog.display(), out.display());
    let mut args = vec!["--json", "emulate", "--policy", policy];
    if policy != "none" {
        args.extend(["--fc", "0ns", "--allow-below-floor"]);
    }
    args.extend(["--", "/bin/sh", "-c", &script]);
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(&args)
        .env("MULTIOS_REWRITE_CACHE", cache)
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"));
    assert!(
        o.status.success(),
        "multios {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let text = std::fs::read_to_string(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    (v, text)
}

fn cache_use(v: &serde_json::Value) -> (u64, u64) {
    let c = &v["rewrite_cache"];
    let n = |k: &str| {
        c[k].as_u64()
            .unwrap_or_else(|| panic!("rewrite_cache.{k} in {v}"))
    };
    (n("hits"), n("stored"))
}

#[test]
fn issue_15_rewrite_cache_serves_the_next_run_with_the_same_result() {
    let dir = scratch::Scratch::new("multios-issue15", "rwcache");
    let cache = dir.join("cache");
    let cache_s = cache.to_str().expect("UTF-8 temp dir");
    // A copy of ls of our own, so that touching it changes only its key.
    let ls = dir.join("ls");
    exec_file::copy(Path::new("/bin/ls"), &ls, 0o755);
    let out = dir.join("out");

    // First run: a new cache; every mapping classified and stored, except where ls maps a file
    // the shell mapped before it (libc, ld.so): those hit already.
    let (first, text1) = emulate(cache_s, "all", &ls, &out);
    let (hits1, stored1) = cache_use(&first);
    assert!(stored1 >= 4, "sh, ls and their libraries are stored: {first}");
    assert!(hits1 < stored1, "{first}");
    let total = hits1 + stored1;
    let mode = std::fs::metadata(&cache)
        .expect("the cache directory")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the cache directory is private");

    // Second run: every mapping from the cache, the same calls and the same output.
    let (second, text2) = emulate(cache_s, "all", &ls, &out);
    let (hits, stored) = cache_use(&second);
    assert_eq!(
        (hits, stored),
        (total, 0),
        "every mapping from the cache: {second}"
    );
    assert_eq!(text1, text2, "the program's output");
    assert_eq!(
        first["syscalls"], second["syscalls"],
        "the same calls, delegated and local"
    );
    assert_eq!(first["interception"], second["interception"]);

    // A changed file (its modification time) is classified again; the rest still hits.
    let f = std::fs::File::options()
        .append(true)
        .open(&ls)
        .expect("open the copy");
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .expect("set the copy's mtime");
    drop(f);
    let (third, text3) = emulate(cache_s, "all", &ls, &out);
    let (hits, stored) = cache_use(&third);
    assert!(stored >= 1, "the touched program is classified again: {third}");
    assert_eq!(
        hits + stored,
        total,
        "the shell and the libraries still hit: {third}"
    );
    assert_eq!(text1, text3);

    // Entries someone else could have written are ignored (and replaced).
    for e in std::fs::read_dir(&cache).expect("the cache directory").flatten() {
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o666)).expect("chmod an entry");
    }
    let (fourth, _) = emulate(cache_s, "none", &ls, &out);
    let (hits, stored) = cache_use(&fourth);
    assert_eq!(
        hits, hits1,
        "group/world-writable entries are not trusted: {fourth}"
    );
    assert_eq!(stored, stored1, "{fourth}");

    // `off`: no cache at all.
    let (off, _) = emulate("off", "none", &ls, &out);
    assert!(off.get("rewrite_cache").is_none(), "{off}");
}

#[test]
fn issue_15_rewrite_cache_refuses_a_directory_others_can_write() {
    let dir = scratch::Scratch::new("multios-issue15", "rwcache-open");
    let cache = dir.join("cache");
    std::fs::create_dir(&cache).expect("mkdir");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).expect("chmod 777");
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["emulate", "--policy", "none", "--", "/bin/true"])
        .env("MULTIOS_REWRITE_CACHE", &cache)
        .output()
        .expect("run multios");
    assert!(!o.status.success(), "a world-writable cache directory is refused");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(cache.to_str().unwrap_or_default()) && err.contains("writable by group or others"),
        "the error names the directory and why: {err}"
    );
    assert!(
        err.contains("MULTIOS_REWRITE_CACHE=off"),
        "and how to run without it: {err}"
    );
}
