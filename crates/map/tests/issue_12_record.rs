//! Issue #12: `map record` on real programs (needs root and BTF tracepoints; fails loudly without).
//! A pipe pair's recorded bytes equal what was sent; a futex pair's wake counts equal the program's.

use multios_map::graph::EdgeKind;
use multios_map::record::{record, Options, RecordError, Recorded};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn compile(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("multios-map-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out = dir.join(name);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let st = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "compiling {}", src.display());
    out
}

fn opts(cmd: Vec<String>) -> Options {
    Options {
        command: cmd,
        pid: None,
        duration: None,
        sample_every: Duration::from_millis(20),
        topology: None,
    }
}

/// Records `bin ARG` run through sh with its stderr on a file (the program prints its own counts
/// and ids there): the recording and that text. The program must exit 0.
fn record_with_stderr(bin: &std::path::Path, arg: u64, tag: &str) -> (Recorded, String) {
    let dir = std::env::temp_dir().join(format!("multios-map-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let log = dir.join("stderr");
    let r = record(&opts(vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("exec {} {arg} 2>{}", bin.display(), log.display()),
    ]))
    .expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let text = std::fs::read_to_string(&log).expect("program output");
    let _ = std::fs::remove_dir_all(&dir);
    (r, text)
}

/// The number after `key` on a line of `text`.
fn value_of(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().parse().expect("number")))
        .unwrap_or_else(|| panic!("{key} missing in {text}"))
}

#[test]
fn issue_12_pipe_pair_bytes_equal_what_was_sent() {
    let bin = compile("pipe_pair");
    let (msgs, size) = (300u64, 1500u64);
    let r = record(&opts(vec![
        bin.display().to_string(),
        msgs.to_string(),
        size.to_string(),
    ]))
    .expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let g = &r.graph;
    let pipes: Vec<_> = g.edges.iter().filter(|e| e.kind == EdgeKind::Pipe).collect();
    assert_eq!(pipes.len(), 1, "one pipe edge expected: {:?}", g.edges);
    let e = pipes[0];
    assert_eq!(e.bytes, msgs * size, "edges {:?}", g.edges);
    let writer = g.nodes.iter().find(|n| n.id == e.from).expect("writer node");
    let reader = g.nodes.iter().find(|n| n.id == e.to).expect("reader node");
    assert_eq!(writer.id, writer.tgid, "the writer is the parent process");
    assert_eq!(reader.parent, Some(writer.id), "the reader is its child");
    assert!(
        writer.syscalls.fs >= msgs,
        "writes counted as fs: {:?}",
        writer.syscalls
    );
}

#[test]
fn issue_12_futex_pair_wake_count_equals_the_programs() {
    let bin = compile("futex_pair");
    let out = Command::new(&bin).arg("1").output().expect("runs");
    assert!(out.status.success());
    let (r, text) = record_with_stderr(&bin, 2000, "futex");
    let value = |k: &str| value_of(&text, k);
    let (main, thread) = (value("main_tid") as u32, value("thread_tid") as u32);
    let g = &r.graph;
    let count = |from: u32, to: u32| {
        g.edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Futex && e.from == from && e.to == to)
            .map(|e| e.count)
            .sum::<u64>()
    };
    assert_eq!(
        count(main, thread),
        value("main_woke"),
        "main → thread futex wakes; edges {:?}",
        g.edges
    );
    assert_eq!(
        count(thread, main),
        value("thread_woke"),
        "thread → main futex wakes"
    );
}

/// Wake-up edges: each of the parent's writes wakes its sleeping child once (wake_pair.c waits
/// until /proc shows the child asleep before each, so it is always blocked in read), and the count of parent → child
/// `sched_wakeup` edges is the number of rounds (a wake-up or two more may come from the fork
/// and exit paths). The child wakes the parent at most at its exit.
#[test]
fn issue_12_wakeup_count_equals_the_writes_that_woke_a_sleeping_child() {
    let bin = compile("wake_pair");
    let rounds = 100u64;
    let (r, text) = record_with_stderr(&bin, rounds, "wake");
    let pid = |k: &str| value_of(&text, k) as u32;
    let (parent, child) = (pid("parent "), pid("child "));
    let count = |from: u32, to: u32| {
        r.graph
            .edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Wakeup && e.from == from && e.to == to)
            .map(|e| e.count)
            .sum::<u64>()
    };
    let down = count(parent, child);
    assert!(
        (rounds..=rounds + 2).contains(&down),
        "parent → child wake-ups {down}, expected {rounds} (+ at most 2); edges {:?}",
        r.graph.edges
    );
    assert!(
        count(child, parent) <= 2,
        "child → parent wake-ups: edges {:?}",
        r.graph.edges
    );
}

#[test]
fn issue_12_missing_pid_is_named() {
    let mut o = opts(Vec::new());
    o.pid = Some(0x3fff_fff0);
    match record(&o) {
        Err(e @ RecordError::NoSuchPid(_)) => assert!(e.to_string().contains("does not exist")),
        other => panic!("expected NoSuchPid, got {other:?}"),
    }
}

#[test]
fn issue_12_a_pid_that_ends_before_the_recording_begins_is_an_error() {
    // `sleep 0.01` exists when checked and ends while the probe loads (tens of ms); reaped at
    // once by a thread, as a shell reaps its background job. The recording was an empty graph
    // with exit status 0 (repro d2/repro_pid_race.sh); now an error, whichever moment it ended.
    for _ in 0..3 {
        let mut child = Command::new("sleep").arg("0.01").spawn().expect("sleep runs");
        let pid = child.id();
        let reaper = std::thread::spawn(move || child.wait());
        let mut o = opts(Vec::new());
        o.pid = Some(pid);
        o.duration = Some(Duration::from_secs(2));
        let r = record(&o);
        let _ = reaper.join();
        match r {
            Err(e @ RecordError::EndedBeforeRecording(_)) => {
                assert!(e.to_string().contains("ended before the recording began"), "{e}")
            }
            Err(RecordError::NoSuchPid(_)) => {} // gone before the check
            Err(e) => panic!("{e}"),
            // seeded before it ended (a probe that loads in under 10 ms): recorded, not empty
            Ok(r) => assert!(!r.graph.nodes.is_empty(), "an empty graph and no error"),
        }
    }
}

#[test]
fn issue_12_unix_socket_pair_bytes_equal_what_was_sent() {
    let bin = compile("unix_pair");
    let (msgs, size) = (200u64, 3000u64);
    let r = record(&opts(vec![
        bin.display().to_string(),
        msgs.to_string(),
        size.to_string(),
    ]))
    .expect("record");
    assert_eq!(r.exit_code, Some(0));
    let g = &r.graph;
    let unix: Vec<_> = g.edges.iter().filter(|e| e.kind == EdgeKind::Unix).collect();
    assert_eq!(unix.len(), 1, "one unix edge expected: {:?}", g.edges);
    assert_eq!(unix[0].bytes, msgs * size);
    let reader = g.nodes.iter().find(|n| n.id == unix[0].to).expect("reader");
    assert_eq!(reader.parent, Some(unix[0].from), "the child receives");
    assert!(
        reader.syscalls.net > 0,
        "recv counted as net: {:?}",
        reader.syscalls
    );
}

#[test]
fn issue_12_attach_to_a_running_process() {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "sleep 0.5; yes | head -c 10000000 > /dev/null"])
        .spawn()
        .expect("sh");
    let mut o = opts(Vec::new());
    o.pid = Some(child.id());
    let r = record(&o).expect("record -p");
    let _ = child.wait();
    let g = &r.graph;
    let pipe: Vec<_> = g.edges.iter().filter(|e| e.kind == EdgeKind::Pipe).collect();
    assert_eq!(pipe.len(), 1, "yes → head expected: {:?}", g.edges);
    // yes's successful writes: what head read, plus at most what the pipe still held
    assert!(
        (10_000_000..=10_000_000 + (1 << 20)).contains(&pipe[0].bytes),
        "{:?}",
        pipe[0]
    );
    let names: Vec<&str> = g.nodes.iter().map(|n| n.comm.as_str()).collect();
    assert!(names.contains(&"yes") && names.contains(&"head"), "{names:?}");
}

/// The edges of `kind` between the parent process and its child, as (parent → child, child → parent)
/// bytes; panics unless they are the only edges of that kind.
fn socket_edges(g: &multios_map::Graph, kind: EdgeKind) -> (u64, u64) {
    let es: Vec<_> = g.edges.iter().filter(|e| e.kind == kind).collect();
    assert_eq!(
        es.len(),
        2,
        "two {kind:?} edges (one each way) expected: {:?}",
        g.edges
    );
    let child = |id: u32| g.nodes.iter().find(|n| n.id == id).and_then(|n| n.parent);
    let down = es
        .iter()
        .find(|e| child(e.to) == Some(e.from))
        .expect("parent → child edge");
    let up = es
        .iter()
        .find(|e| child(e.from) == Some(e.to))
        .expect("child → parent edge");
    (down.bytes, up.bytes)
}

#[test]
fn issue_12_tcp_pair_bytes_equal_what_was_sent() {
    let bin = compile("tcp_pair");
    let (msgs, size) = (400u64, 5000u64);
    let r = record(&opts(vec![
        bin.display().to_string(),
        msgs.to_string(),
        size.to_string(),
    ]))
    .expect("record");
    assert_eq!(r.exit_code, Some(0), "tcp_pair failed");
    // the child writes msgs × size bytes; the parent answers one byte per message
    let (down, up) = socket_edges(&r.graph, EdgeKind::Tcp);
    assert_eq!(up, msgs * size, "child → parent TCP bytes");
    assert_eq!(down, msgs, "parent → child TCP bytes");
}

#[test]
fn issue_12_udp_pair_bytes_equal_what_was_sent() {
    let bin = compile("udp_pair");
    let (msgs, size) = (300u64, 1200u64);
    let r = record(&opts(vec![
        bin.display().to_string(),
        msgs.to_string(),
        size.to_string(),
    ]))
    .expect("record");
    assert_eq!(r.exit_code, Some(0), "udp_pair failed");
    // half the datagrams by sendto with an address, half by send on the connected socket
    let (down, up) = socket_edges(&r.graph, EdgeKind::Udp);
    assert_eq!(down, msgs * size, "parent → child UDP bytes");
    assert_eq!(up, msgs, "child → parent UDP bytes (one-byte answers)");
    let e = r
        .graph
        .edges
        .iter()
        .find(|e| e.kind == EdgeKind::Udp && e.bytes == msgs * size)
        .expect("the data edge");
    assert_eq!(e.count, msgs, "one message per datagram");
}

/// A real server and client: Python's http.server sends a file to curl over loopback TCP.
#[test]
fn issue_12_http_download_is_a_tcp_edge() {
    let dir = std::env::temp_dir().join(format!("multios-map-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let size = 1_500_000usize;
    std::fs::write(dir.join("f.bin"), vec![7u8; size]).expect("file");
    let port = 20000 + std::process::id() % 20000;
    let script = format!(
        "python3 -m http.server {port} --bind 127.0.0.1 --directory {d} >/dev/null 2>&1 & \
         for i in $(seq 1 40); do curl -sf -o /dev/null http://127.0.0.1:{port}/f.bin && ok=1 && break; sleep 0.25; done; \
         kill $!; test -n \"$ok\"",
        d = dir.display()
    );
    let r = record(&opts(vec!["/bin/sh".into(), "-c".into(), script])).expect("record");
    assert_eq!(
        r.exit_code,
        Some(0),
        "the download failed (python3 and curl needed)"
    );
    let g = &r.graph;
    let name = |id: u32| {
        g.nodes
            .iter()
            .find(|n| n.id == id)
            .map_or("?", |n| n.comm.as_str())
    };
    let tcp: Vec<_> = g.edges.iter().filter(|e| e.kind == EdgeKind::Tcp).collect();
    let down = tcp
        .iter()
        .find(|e| name(e.to) == "curl")
        .unwrap_or_else(|| panic!("server → curl TCP edge: {tcp:?}"));
    // the file and the response's headers
    assert!(
        (size as u64..size as u64 + 4096).contains(&down.bytes),
        "{} bytes from {} to curl",
        down.bytes,
        name(down.from)
    );
    assert!(
        tcp.iter().any(|e| name(e.from) == "curl" && e.bytes > 0),
        "curl's request: {tcp:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Signals: a parent sends SIGUSR1 to its child 40 times, each after the child acknowledged the
/// previous one (sigwait, so none is merged with a pending one); the signal edge parent → child
/// counts 40, and the child's exit gives the parent one SIGCHLD.
#[test]
fn issue_12_signal_count_equals_what_was_sent() {
    let dir = std::env::temp_dir().join(format!("multios-map-signal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let pids = dir.join("pids");
    let n = 40u64;
    let script = format!(
        "import os, signal\n\
         r, w = os.pipe()\n\
         pid = os.fork()\n\
         if pid == 0:\n\
         \x20   signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGUSR1}})\n\
         \x20   os.write(w, b'r')\n\
         \x20   for _ in range({n}):\n\
         \x20       signal.sigwait({{signal.SIGUSR1}})\n\
         \x20       os.write(w, b'a')\n\
         \x20   os._exit(0)\n\
         os.read(r, 1)\n\
         for _ in range({n}):\n\
         \x20   os.kill(pid, signal.SIGUSR1)\n\
         \x20   os.read(r, 1)\n\
         os.waitpid(pid, 0)\n\
         open('{p}', 'w').write(f'{{os.getpid()}} {{pid}}')\n",
        p = pids.display()
    );
    let r = record(&opts(vec!["python3".into(), "-c".into(), script])).expect("record");
    assert_eq!(r.exit_code, Some(0), "python3 needed");
    let text = std::fs::read_to_string(&pids).expect("pids written");
    let ids: Vec<u32> = text.split_whitespace().map(|s| s.parse().expect("pid")).collect();
    let (parent, child) = (ids[0], ids[1]);
    let g = &r.graph;
    let count = |from: u32, to: u32| {
        g.edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Signal && e.from == from && e.to == to)
            .map(|e| e.count)
            .sum::<u64>()
    };
    assert_eq!(
        count(parent, child),
        n,
        "parent → child signals; edges {:?}",
        g.edges
    );
    assert_eq!(
        count(child, parent),
        1,
        "the child's SIGCHLD; edges {:?}",
        g.edges
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The physical-frame layer: two unrelated Python processes (siblings started by a shell, so no
/// copy-on-write frames in common) map one 64-page file shared and writable, write every page and
/// stay a while: the graph names the two as sharing at least those 64 frames. Python unmaps the file
/// when it finalizes, before the process ends: the sharing is the most seen at one sample, not what
/// the last samples show (those gave 2 frames before the recorder kept the most).
#[test]
fn issue_12_shared_pages_between_two_processes() {
    let dir = std::env::temp_dir().join(format!("multios-map-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let file = dir.join("shared.bin");
    std::fs::write(&file, vec![0u8; 64 * 4096]).expect("file");
    let prog = "import mmap, os, sys, time\n\
                f = open(sys.argv[1], 'r+b')\n\
                m = mmap.mmap(f.fileno(), 64 * 4096)\n\
                for i in range(64): m[i * 4096] = 1\n\
                open(sys.argv[2], 'w').write(str(os.getpid()))\n\
                time.sleep(0.4)\n";
    let script = format!(
        "python3 -c \"{prog}\" {f} {d}/a & python3 -c \"{prog}\" {f} {d}/b; wait",
        f = file.display(),
        d = dir.display()
    );
    let r = record(&opts(vec!["/bin/sh".into(), "-c".into(), script])).expect("record");
    assert_eq!(r.exit_code, Some(0), "python3 needed");
    let pid = |f: &str| -> u32 {
        std::fs::read_to_string(dir.join(f))
            .expect("pid written")
            .trim()
            .parse()
            .expect("pid")
    };
    let (a, b) = (pid("a"), pid("b"));
    let shared = r
        .graph
        .shared_pages
        .iter()
        .find(|s| (s.a, s.b) == (a.min(b), a.max(b)))
        .unwrap_or_else(|| panic!("no shared frames between {a} and {b}: {:?}", r.graph.shared_pages));
    assert!(shared.pages >= 64, "{} shared pages, 64 written", shared.pages);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Beside two CPU hogs, the recording says how much of the CPUs' time other tasks took (the
/// prodcons recordings that showed no pair were made beside such load), and the recorded threads'
/// waits for a CPU are counted.
#[test]
fn issue_12_other_load_during_the_recording_is_recorded() {
    let hog = || {
        Command::new("yes")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("yes runs")
    };
    let mut hogs = [hog(), hog()];
    std::thread::sleep(Duration::from_millis(100));
    let r = record(&opts(vec![
        "/bin/sh".into(),
        "-c".into(),
        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done".into(),
    ]));
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let r = r.expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let g = &r.graph;
    let load = g.other_load.expect("other load recorded");
    assert!(load.cpus >= 1, "{load:?}");
    let share = g.other_load_share().expect("a share");
    assert!(
        share > multios_map::graph::CONTENDED_SHARE,
        "two hogs beside a busy shell: other tasks took {share:.2} of the CPUs' time ({load:?}, {} s)",
        g.duration_s
    );
    let waited: u64 = g.nodes.iter().map(|n| n.wait_ns).sum();
    assert!(waited > 0, "the shell waited for a CPU: {:?}", g.nodes);
}

/// The wake-up edges between the two ends of a pipe pair recorded with the IPC program pinned by
/// `cpus` (its sender, its receiver): (count, across) summed over both directions.
fn pinned_pair_wakeups(cpus: &str, tag: &str) -> (u64, u64) {
    let dir = std::env::temp_dir().join(format!("multios-map-across-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let ipc = multios_map::programs::install_ipcbench(&dir).expect("IPC program installed");
    let r = record(&opts(vec![
        ipc.display().to_string(),
        "2".into(),
        "1024".into(),
        "300".into(),
        cpus.into(),
    ]))
    .expect("record (root and BTF tracepoints needed)");
    assert_eq!(r.exit_code, Some(0));
    let g = &r.graph;
    assert_eq!(g.version, multios_map::graph::VERSION);
    // the pair: the two nodes the root (the program's first process) forked
    let root = g
        .nodes
        .iter()
        .find(|n| n.parent.is_none())
        .map(|n| n.id)
        .expect("the recorded program's first process");
    let ends: Vec<u32> = g
        .nodes
        .iter()
        .filter(|n| n.parent == Some(root))
        .map(|n| n.id)
        .collect();
    assert_eq!(ends.len(), 2, "two ends forked by {root}: {:?}", g.nodes);
    let (mut count, mut across) = (0, 0);
    for e in &g.edges {
        if e.kind == EdgeKind::Wakeup && ends.contains(&e.from) && ends.contains(&e.to) {
            count += e.count;
            across += e
                .across
                .expect("a recording counts the wake-ups that crossed CPUs");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (count, across)
}

/// A recording counts, per wake-up edge, the wake-ups after which the woken thread ran on another
/// CPU than its waker's: all of them for a pair pinned on two CPUs, none for a pair pinned on one
/// (what `map run` prices the recorded messages with instead of guessing how Linux placed them).
#[test]
fn issue_12_wakeups_across_cpus_are_counted_per_edge() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "this test needs 2 CPUs, the machine gives {cpus}");
    // Apart, each of the 600 hand-offs wakes the other end and the woken end runs on the other CPU.
    // A few are not seen as either (quiet: 598–599 of 599–600 crossed; more beside `stress-ng
    // --cpu 2`): an end can find its message before it sleeps (no wake-up), or be woken while
    // still on its CPU on the way to sleep (a wake-up, but no switch-in after it).
    let (count, across) = pinned_pair_wakeups("0,1", "apart");
    assert!(
        count >= 570,
        "300 exchanges wake each end about 300 times: {count}"
    );
    assert!(
        across as f64 >= 0.95 * count as f64,
        "pinned on CPUs 0 and 1, the wake-ups cross: {across} of {count}"
    );
    // on one CPU a woken end may preempt its waker before the waker sleeps, and then needs no
    // wake-up itself: fewer wake-ups than hand-offs (339 of 600 in one run)
    let (count, across) = pinned_pair_wakeups("0,0", "together");
    assert!(count >= 100, "{count}");
    assert_eq!(
        across, 0,
        "pinned on CPU 0, no wake-up crosses ({count} wake-ups)"
    );
}
