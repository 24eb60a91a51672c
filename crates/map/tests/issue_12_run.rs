//! Issue #12: `map run` places what its rules name — the threads of a process, the processes a
//! program starts — from the kernel's process events, and with a placement that pins nothing it
//! only runs the program. Real programs; root (the proc connector) and 2 CPUs needed.

use multios_map::run::{run_with, Rule};
use std::time::Duration;

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("multios-issue12-run-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

#[test]
fn issue_12_a_thread_gets_its_own_cpu_not_its_creators() {
    // python3's main thread pinned to CPU 0, the thread it starts to CPU 1: the thread starts on
    // its creator's CPU and must be moved when its creation is reported (the kernel reports a new
    // thread with its process's parent as the parent — this runner — which the first version of
    // the event loop skipped: threads were placed only by the 100 ms walk of /proc)
    assert!(cpus() >= 2, "this test needs 2 CPUs");
    let d = scratch("thread");
    let out = d.join("out");
    let script = format!(
        "import os, threading, time\n\
         seen = {{}}\n\
         def probe():\n    time.sleep(0.3); seen['thread'] = sorted(os.sched_getaffinity(0))\n\
         t = threading.Thread(target=probe); t.start(); t.join()\n\
         open('{}', 'w').write('%s %s' % (sorted(os.sched_getaffinity(0)), seen['thread']))\n",
        out.display()
    );
    let cmd: Vec<String> = vec!["python3".into(), "-c".into(), script];
    let rules = [Rule::pin("python3", 0, 0), Rule::pin("python3", 1, 1)];
    // a long contention interval: other tests loading the CPUs must not release the pins
    let rep = run_with(&cmd, &rules, Duration::from_secs(10), true).expect("map run");
    assert_eq!(rep.exit_code, Some(0), "{rep:?}");
    let text = std::fs::read_to_string(&out).expect("the probe's output");
    assert_eq!(text, "[0] [1]", "main on CPU 0, its thread on CPU 1; {rep:?}");
    assert_eq!(rep.walks, 0, "placed from events, not a walk: {rep:?}");
    assert!(
        rep.apply_max_us > 0.0,
        "the thread was placed from its event: {rep:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_processes_of_a_pipeline_are_placed_and_unnamed_ones_freed() {
    // sh starts grep, head and cat; grep pinned to CPU 1, cat free; sh itself (no rule) gets every
    // CPU
    assert!(cpus() >= 2, "this test needs 2 CPUs");
    let cmd: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "grep -c Cpus /proc/self/status > /dev/null; head -c 100 /dev/zero | cat > /dev/null".into(),
    ];
    let all: Vec<u32> = (0..cpus() as u32).collect();
    let rules = [
        Rule::pin("grep", 0, 1),
        Rule {
            comm: "cat".into(),
            ordinal: 0,
            cpus: all.clone(),
        },
    ];
    let rep = run_with(&cmd, &rules, Duration::from_secs(10), true).expect("map run");
    assert_eq!(rep.exit_code, Some(0), "{rep:?}");
    assert!(rep.watched, "{rep:?}");
    let grep = rep
        .applied
        .iter()
        .find(|a| a.comm == "grep")
        .expect("grep placed");
    assert_eq!(grep.cpus, "1", "{rep:?}");
    assert!(
        rep.applied.iter().any(|a| a.comm == "cat" && a.matched),
        "{rep:?}"
    );
    assert!(
        rep.applied.iter().any(|a| a.comm == "sh" && !a.matched),
        "the shell has no rule: every CPU; {rep:?}"
    );
}
