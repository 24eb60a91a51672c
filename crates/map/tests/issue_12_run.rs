//! Issue #12: `map run` places what its rules name — the threads of a process, the processes a
//! program starts — from the kernel's process events, and with a placement that pins nothing it
//! only runs the program. Real programs; root (the proc connector) and 2 CPUs needed.

use multios_map::run::{run_with, Rule};
use std::time::Duration;

/// The tests of this file one at a time: the producer/consumer tests load both CPUs, and beside
/// them a short-lived `grep` of the pipeline test could exit before its process event was handled
/// (seen once in four runs).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _one = serial();
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
    let _one = serial();
    // sh starts grep, head and cat; grep pinned to CPU 1, cat free; sh itself (no rule) gets every
    // CPU. grep and cat wait half a second for their input: an instant one could exit before the
    // watcher saw it on a loaded VM (CI of 1426061, load 7 on 2 CPUs: "grep placed" missing).
    assert!(cpus() >= 2, "this test needs 2 CPUs");
    let cmd: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "(sleep 0.5; echo Cpus) | grep -c Cpus > /dev/null; (sleep 0.5; head -c 100 /dev/zero) | cat > /dev/null"
            .into(),
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

/// The producer/consumer `multios bench map` runs, recorded with eBPF (root), planned as `map run`
/// plans it on this machine with the default model: (the plan, the command).
fn prodcons_plan(tag: &str, force: bool) -> (multios_map::decide::Plan, Vec<String>, std::path::PathBuf) {
    use multios_map::decide::{plan, Options};
    use multios_map::project::HopModel;
    use multios_map::{record, CostModel, Topology};
    let d = scratch(tag);
    let prog = multios_map::programs::install_prodcons(&d).expect("install multios-prodcons");
    let cmd: Vec<String> = vec![prog.display().to_string(), "100000".into(), "100".into()];
    let topo = Topology::from_sysfs().expect("this machine's topology");
    let model = HopModel::linear(CostModel::default(), 0.5, topo.max_hops());
    let o = Options {
        force,
        ..Options::default()
    };
    // These tests are about the decision on a recorded pair. The pair's interaction depends on the
    // load: with two CPU hogs beside it (`yes > /dev/null` twice, 2026-11-27 08:23) three of six
    // recordings held 39–71 and 452–610 futex wake-ups each way instead of ≈ 1 600 and ≈ 3 800 (the
    // threads time-share a CPU and fill or drain the whole ring per slice), and the affinity rule
    // rightly joins nothing: "pinned 0, nodes 2" (twice in five CI runs). The recorder is right;
    // such a recording is made again, at most twenty times in all, a second apart (three back to
    // back were not enough: two fresh-clone CI runs of 2026-11-27's seventeenth session saw three
    // such recordings in a row, one of them with nothing else running; six were not enough in the
    // fresh-clone CI of 2026-11-28 06:13, nor twelve a quarter of a second apart — ≈ 4 s — in the
    // one of 09:23: whatever crowds the pair lasts seconds), and the last one is returned whatever
    // it shows.
    let mut attempt = 0;
    loop {
        attempt += 1;
        let rec = record::record(&record::Options {
            command: cmd.clone(),
            pid: None,
            duration: None,
            sample_every: Duration::from_millis(50),
            topology: None,
        })
        .expect("recording multios-prodcons (root and eBPF needed)");
        assert_eq!(rec.exit_code, Some(0));
        let p = plan(&rec.graph, &topo, &model, o);
        if p.decision.pinned >= 2 || attempt == 20 {
            return (p, cmd, d);
        }
        std::thread::sleep(Duration::from_secs(1));
        eprintln!(
            "recording {attempt}: the pair did not show ({:?}); recording again",
            p.decision
        );
    }
}

#[test]
fn issue_12_prodcons_keeps_linuxs_placement_the_model_predicts_faster() {
    let _one = serial();
    // The quiet run of 2026-11-26 08:50: map run pinned the producer and the consumer together on
    // CPU 0 although its own model predicted that placement slower than Linux's (0.179 s against
    // 0.110 s), and the program ran 1.18× slower. The placement still pins the pair; the decision
    // now keeps Linux's placement, and the run records it and pins nothing.
    assert!(cpus() >= 2, "this test needs 2 CPUs");
    let (plan, cmd, d) = prodcons_plan("prodcons", false);
    let dec = &plan.decision;
    assert!(dec.pinned >= 2, "the affinity rule pins the pair: {dec:?}");
    assert!(
        dec.predicted_speedup <= 1.0 + dec.margin,
        "the model predicts no gain: {dec:?}"
    );
    assert!(!dec.applies(), "{dec:?}");
    let rep = multios_map::run::run_plan(&cmd, &plan, Duration::from_secs(10), true).expect("map run");
    assert_eq!(rep.exit_code, Some(0), "{rep:?}");
    assert_eq!(rep.decision.as_ref(), Some(dec), "the run records its decision");
    assert!(
        !rep.watched && rep.applied.is_empty(),
        "nothing pinned, nothing watched: {rep:?}"
    );
    let json = serde_json::to_value(&rep).expect("json");
    assert_eq!(json["decision"]["choice"], "linux", "{json}");
    assert!(json["decision"]["linux_s"].as_f64().is_some_and(|s| s > 0.0));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_prodcons_forced_runs_pinned_and_says_so() {
    let _one = serial();
    assert!(cpus() >= 2, "this test needs 2 CPUs");
    let (plan, cmd, d) = prodcons_plan("prodcons-forced", true);
    let dec = &plan.decision;
    assert!(dec.applies() && dec.forced, "{dec:?}");
    let rep = multios_map::run::run_plan(&cmd, &plan, Duration::from_secs(10), true).expect("map run");
    assert_eq!(rep.exit_code, Some(0), "{rep:?}");
    assert!(rep.watched, "{rep:?}");
    // both threads of the program placed by their rules, on one CPU
    let placed: Vec<&str> = rep
        .applied
        .iter()
        .filter(|a| a.matched)
        .map(|a| a.cpus.as_str())
        .collect();
    assert!(placed.len() >= 2, "{rep:?}");
    assert!(
        placed.iter().all(|c| *c == placed[0] && !c.contains('-')),
        "one CPU for both: {rep:?}"
    );
    assert_eq!(rep.decision.as_ref().map(|d| d.forced), Some(true));
    let _ = std::fs::remove_dir_all(&d);
}
