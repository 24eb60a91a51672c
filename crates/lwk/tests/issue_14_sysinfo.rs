//! Issue #14, what Linux guarantees and a runtime relies on: the memory a process may use. sysinfo
//! (and glibc's `sysconf(_SC_PHYS_PAGES)` on it) reported the host's 24 GiB in the LWK, and the JVM,
//! which reserves a quarter of that for its heap, could not start in a 4 GiB window ("Could not
//! reserve enough space for 6172672KB object heap"). The LWK now answers from the partition's
//! window, as McKernel does. Needs /dev/kvm, python3 and a JDK (Debian's openjdk-17-jdk-headless):
//! FAIL (never skip) without. ≈ 5 s. Also protection keys (node's V8 asks for one at start-up):
//! the same answers as natively.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{build_c, require_kvm, run, show, RUNNER};
use std::process::Command;

fn lwk(mem_mib: u32, prog: &str, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(RUNNER);
    c.env("LWK_MEM_MIB", mem_mib.to_string()).arg(prog).args(args);
    run(c, prog)
}

#[test]
fn issue_14_sysinfo_reports_the_partitions_memory() {
    require_kvm("issue #14");
    let script = "import os; p = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE'); \
                  a = os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE'); print(p >> 20, a >> 20)";
    for mem in [512u32, 2048] {
        let o = lwk(mem, "/usr/bin/python3", &["-c", script]);
        assert!(o.status.success(), "{}", show(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        let v: Vec<u64> = text.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        assert_eq!(v.len(), 2, "{}", show(&o));
        assert_eq!(v[0], u64::from(mem), "total RAM is the window: {}", show(&o));
        assert!(v[1] > 0 && v[1] < v[0], "free is part of it: {}", show(&o));
    }
}

#[test]
fn issue_14_a_jvm_sizes_its_heap_to_the_window_and_runs() {
    require_kvm("issue #14");
    let java = "/usr/bin/java";
    assert!(
        std::path::Path::new(java).exists(),
        "{java} is needed (apt-get install openjdk-17-jdk-headless; scripts/deps.sh installs it)"
    );
    let o = lwk(4096, java, &["-XX:+PrintFlagsFinal", "-version"]);
    assert!(o.status.success(), "{}", show(&o));
    let flags = String::from_utf8_lossy(&o.stdout);
    let max_heap: u64 = flags
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("MaxHeapSize"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("MaxHeapSize in {}", show(&o)));
    assert!(
        max_heap <= 1 << 30,
        "a quarter of the 4 GiB window at most: {max_heap}"
    );
}

#[test]
fn issue_14_protection_keys_answer_as_natively() {
    require_kvm("issue #14");
    let dir = scratch::Scratch::new("multios-issue14", "pkeys");
    let prog = build_c(&dir, "pkeys", &["-O1"]);
    // The LWK has no protection key beyond key 0, as on a CPU without them: pkey_alloc says
    // ENOSPC there, as Linux says when every key is taken. Natively that is the answer on a CPU
    // without PKU; on one with it (`pku` in /proc/cpuinfo) pkey_alloc hands out a key. Every other
    // answer is the same either way.
    let n = sidebyside::native(&prog, &[]);
    let l = sidebyside::lwk(&prog, &[], &[]);
    assert_eq!(n.status.code(), l.status.code(), "{}\n{}", show(&n), show(&l));
    let lines = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let (nl, ll) = (lines(&n), lines(&l));
    assert_eq!(nl.len(), ll.len(), "{}\n{}", show(&n), show(&l));
    for (a, b) in nl.iter().zip(&ll) {
        if a.starts_with("alloc ") {
            assert_eq!(b, "alloc -1 No space left on device", "{}", show(&l));
            let pku = std::fs::read_to_string("/proc/cpuinfo")
                .unwrap_or_default()
                .contains(" pku");
            if !pku {
                assert_eq!(a, b, "no PKU here: native answers as the LWK");
            }
        } else {
            assert_eq!(a, b, "{}\n{}", show(&n), show(&l));
        }
    }
    assert!(ll.iter().any(|x| x == "mprotect-key-minus-1 0 "), "{}", show(&l));
    assert!(
        !String::from_utf8_lossy(&l.stderr).contains("not supported"),
        "{}",
        show(&l)
    );
}
