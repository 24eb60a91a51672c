//! Issue #16: `map record` and `map run` start the program directly (no `/bin/sh` in between),
//! with its arguments and environment exactly as given, and refuse a program that is not there
//! before anything starts (`map record` needs root and BTF tracepoints, as in issue_12_record.rs).

use multios_map::program::ProgramError;
use multios_map::record::{record, Options, RecordError};
use multios_map::run::{run_with, RunError};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("multios-map16-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn opts<C>(command: Vec<C>) -> Options<C> {
    Options {
        command,
        pid: None,
        duration: None,
        sample_every: Duration::from_millis(20),
        topology: None,
    }
}

fn os(s: &str) -> OsString {
    OsString::from(s)
}

/// A file name that is not UTF-8.
fn bad_name() -> OsString {
    OsString::from_vec(b"bad\xff".to_vec())
}

/// NUL-separated entries of a /proc file, as a sorted list.
fn entries(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = bytes
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    v.sort();
    v
}

#[test]
fn issue_16_map_record_runs_the_program_directly() {
    let d = scratch("direct");
    let env_copy = d.join("environ");
    let argv_copy = d.join("cmdline");
    // cp copies its own /proc/self files: what the program itself was given
    let r = record(&opts(vec![
        os("cp"),
        os("/proc/self/environ"),
        env_copy.clone().into_os_string(),
    ]))
    .expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let seen = entries(&std::fs::read(&env_copy).expect("the program's environment"));
    let mine: Vec<Vec<u8>> = entries(
        &std::env::vars_os()
            .flat_map(|(k, v)| {
                let mut e = k.into_vec();
                e.push(b'=');
                e.extend(v.into_vec());
                e.push(0);
                e
            })
            .collect::<Vec<u8>>(),
    );
    assert_eq!(
        seen, mine,
        "the program's environment is the recorder's, unchanged"
    );
    // one node, the program, under the recorder: no shell exec'd into it
    let r = record(&opts(vec![
        os("cp"),
        os("/proc/self/cmdline"),
        argv_copy.clone().into_os_string(),
    ]))
    .expect("record");
    assert_eq!(r.exit_code, Some(0));
    let argv = std::fs::read(&argv_copy).expect("the program's argv");
    let want = format!("cp\0/proc/self/cmdline\0{}\0", argv_copy.display());
    assert_eq!(argv, want.as_bytes(), "argv[0] as given, the arguments unchanged");
    assert_eq!(r.graph.nodes.len(), 1, "{:?}", r.graph.nodes);
    assert_eq!(r.graph.nodes[0].comm, "cp", "{:?}", r.graph.nodes);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_16_map_record_refuses_a_missing_program_before_starting() {
    let e = record(&opts(vec![os("nonexistent_prog_multios16")])).expect_err("missing");
    assert!(
        matches!(&e, RecordError::Program(ProgramError::NotFound(p)) if p == "nonexistent_prog_multios16"),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("'nonexistent_prog_multios16'") && msg.contains("not found"),
        "{msg}"
    );
    // a file that is not executable: named, not run
    let d = scratch("noexec");
    let plain = d.join("script");
    std::fs::write(&plain, "#!/bin/sh\necho hi\n").expect("write");
    let e = record(&opts(vec![plain.clone().into_os_string()])).expect_err("not executable");
    let msg = e.to_string();
    assert!(
        msg.contains(&plain.display().to_string()) && msg.contains("not executable"),
        "{msg}"
    );
    // map run the same
    let e = run_with(
        &["nonexistent_prog_multios16"],
        &[],
        Duration::from_millis(100),
        true,
    )
    .expect_err("missing");
    assert!(
        matches!(&e, RunError::Program(ProgramError::NotFound(_))),
        "{e:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_16_map_record_and_run_pass_non_utf8_arguments_unchanged() {
    let d = scratch("bytes");
    let target = d.join(bad_name());
    let r = record(&opts(vec![
        os("cp"),
        os("/proc/self/cmdline"),
        target.clone().into_os_string(),
    ]))
    .expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let argv = std::fs::read(&target).expect("written under the name given, byte for byte");
    assert!(
        argv.ends_with(&[target.as_os_str().as_bytes(), b"\0"].concat()),
        "{argv:?}"
    );
    // the graph shows the command lossily
    assert_eq!(
        r.graph.command.last().map(String::as_str),
        Some(target.to_string_lossy().as_ref())
    );
    std::fs::remove_file(&target).expect("remove");
    let rep = run_with(
        &[
            os("cp"),
            os("/proc/self/cmdline"),
            target.clone().into_os_string(),
        ],
        &[],
        Duration::from_millis(100),
        true,
    )
    .expect("map run");
    assert_eq!(rep.exit_code, Some(0));
    assert!(target.exists(), "map run passed the name unchanged");
    let _ = std::fs::remove_dir_all(&d);
}
