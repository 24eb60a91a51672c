mod common;
use multios_emulate::{Delegation, Exit, Mechanism};

#[test]
fn issue_4_proxy_counts_delegated_calls_of_sh() {
    let dir = common::tmpdir("smoke");
    let out = dir.join("o.txt");
    let script = format!("echo hello > {}", out.display());
    let r = common::run(Mechanism::Proxy, Delegation::all(), 0.0, &["sh", "-c", &script]);
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), "hello\n");
    assert!(
        r.syscalls.get("write").map(|c| c.delegated).unwrap_or(0) >= 1,
        "{:?}",
        r.syscalls
    );
    assert_eq!(
        r.syscalls.get("exit_group").map(|c| c.delegated),
        Some(1),
        "{:?}",
        r.syscalls
    );
    std::fs::remove_dir_all(dir).ok();
}
