//! Issue #14, part A: device and kernel-shared mappings through the proxy. Real programs run
//! natively and in the LWK and must give the same results: liburing programs and
//! `fio --ioengine=io_uring --verify` (the rings are the kernel's, shared with the guest), `perf
//! record` (the event's ring buffer mapped into the guest) read back by `perf report`, a loop
//! device and a file on it mapped MAP_SHARED and written in the LWK then read natively, O_DIRECT,
//! MAP_SHARED anonymous memory, /dev/zero and memfds shared with a forked child, MAP_HUGETLB and
//! hugetlbfs. Needs /dev/kvm, root (loop devices, mounts, huge pages), gcc, liburing-dev, fio,
//! perf, losetup and mkfs.ext4 (scripts/deps.sh): FAILS (never skips) without.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");
/// Only detects a hang: every run here takes a few seconds at most when it works.
const DEADLINE: Duration = Duration::from_secs(120);

#[path = "../../../testsupport/deadline.rs"]
mod deadline;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #14 tests need KVM and it is not usable here: {e}");
    }
}

fn require_root(what: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "{what} needs root (loop devices, mounts, huge pages)");
}

fn require_tool(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "{tool} is not installed: apt-get install {package} (scripts/deps.sh)"
    );
}

/// Builds tests/c/NAME.c with gcc and `libs` into `dir`.
fn build_c(dir: &Path, name: &str, libs: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir.join(name);
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .args(libs)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(
        o.status.success(),
        "gcc {} {libs:?}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Runs `cmd` to its end, killing it (and failing) after DEADLINE.
fn run(cmd: Command, what: &str) -> Output {
    deadline::run(cmd, what, DEADLINE)
}

fn native(prog: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(prog);
    c.args(args);
    run(c, &format!("{} {args:?} natively", prog.display()))
}

fn lwk(prog: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(RUNNER);
    c.arg(prog).args(args);
    run(c, &format!("{} {args:?} in the LWK", prog.display()))
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Same stdout and the same end, natively (`n`) and in the LWK (`l`).
fn assert_same_outputs(what: &str, n: &Output, l: &Output) {
    assert_eq!(
        (n.status.code(), n.status.signal(), &n.stdout),
        (l.status.code(), l.status.signal(), &l.stdout),
        "{what}: native and LWK differ\n--- native\n{}\n--- LWK\n{}",
        show(n),
        show(l)
    );
    assert!(n.status.success(), "{what} failed natively:\n{}", show(n));
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn issue_14_liburing_programs_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-lwk-issue14", "uring");
    let prog = build_c(&dir, "uring", &["-luring"]);
    let d = dir.to_str().expect("utf-8 temp path");
    let (n, l) = (native(&prog, &[d]), lwk(&prog, &[d]));
    assert_same_outputs("uring.c", &n, &l);
    let out = text(&l);
    for line in [
        "read back: written by IORING_OP_WRITE",
        "readv: vector writes",
        "read_fixed: fixed buffer bytes",
        "chain read: linked chain",
        "eventfd counted 1",
        "batch: 64 of 64 writes complete, file identical",
        "  ud 13 res -14\n  ud 14 res -14",
        "data went to the first buffer: 1, second empty: 1",
        "  ud 16 res -9",
        "register files with fd 65291: -9",
        "register a buffer at 0x7e0000001000: -14",
        "child's submission on the shared ring: exit 0, file holds from the child",
        "openat completion: ud 18",
        "openat: fd ok 1, reads 7 bytes",
        "SINGLE_ISSUER|DEFER_TASKRUN ring: submitted 1, wait 0, res 7",
        "NO_MMAP ring: enter 1, cq tail 1, ud 5 res 0, mmap of its SQ ring: Cannot allocate memory",
        "close: submitted 1\n  ud 19 res 0",
        "  ud 20 res -2",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    // What the LWK refuses, it refuses with an errno the program handles and one note each.
    let r = lwk(&prog, &[d, "refused"]);
    let (out, err) = (text(&r), String::from_utf8_lossy(&r.stderr).into_owned());
    assert!(r.status.success(), "{}", show(&r));
    assert!(out.contains("SQPOLL setup: -22"), "{out}");
    assert!(
        out.contains("  ud 1 res 0\n  ud 2 res -22"),
        "a linked OPENAT must complete with EINVAL: {out}"
    );
    assert!(
        out.contains("  ud 3 res -13"),
        "OPENAT of /proc/self/mem: EACCES: {out}"
    );
    assert!(
        err.contains("io_uring_setup: flags 0x2 are not supported"),
        "{err}"
    );
    assert!(
        err.contains("io_uring operation OPENAT (18) is not supported"),
        "{err}"
    );
    assert!(err.contains("served only outside a link chain"), "{err}");
}

/// fio's JSON: per job (name, error, read ios, read KiB, write ios, write KiB).
fn fio_counts(o: &Output) -> Vec<(String, i64, i64, i64, i64, i64)> {
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("fio's JSON ({e}):\n{}", show(o)));
    let jobs = v["jobs"].as_array().expect("fio JSON has jobs");
    jobs.iter()
        .map(|j| {
            let n = |d: &str, k: &str| j[d][k].as_i64().unwrap_or(-1);
            (
                j["jobname"].as_str().unwrap_or("?").to_string(),
                j["error"].as_i64().unwrap_or(-1),
                n("read", "total_ios"),
                n("read", "io_kbytes"),
                n("write", "total_ios"),
                n("write", "io_kbytes"),
            )
        })
        .collect()
}

#[test]
fn issue_14_fio_io_uring_with_verify_matches_native() {
    require_kvm();
    require_tool("fio", "fio");
    let dir = Scratch::new("multios-lwk-issue14", "fio");
    // Buffered and O_DIRECT, plain and with registered buffers and files, each verified (crc32c
    // written with the data, read back and checked by fio).
    let job = "[global]\nioengine=io_uring\nsize=4m\nbs=4k\niodepth=8\nverify=crc32c\ndo_verify=1\n\
               randrepeat=1\nrw=randwrite\n\
               [buffered]\nfilename=DIR/buffered.dat\n\
               [direct]\nstonewall\nfilename=DIR/direct.dat\ndirect=1\n\
               [fixed]\nstonewall\nfilename=DIR/fixed.dat\nfixedbufs=1\nregisterfiles=1\n";
    let file = dir.join("job.fio");
    std::fs::write(&file, job.replace("DIR", dir.to_str().expect("utf-8 temp path")))
        .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    let f = file.to_str().expect("utf-8 temp path");
    let fio = Path::new("/usr/bin/fio");
    let args = ["--output-format=json", f];
    let n = native(fio, &args);
    assert!(n.status.success(), "fio natively:\n{}", show(&n));
    let l = lwk(fio, &args);
    assert!(l.status.success(), "fio in the LWK:\n{}", show(&l));
    let (nc, lc) = (fio_counts(&n), fio_counts(&l));
    assert_eq!(nc, lc, "fio's operation counts differ (native, LWK)");
    assert_eq!(lc.len(), 3);
    for (name, error, rios, rkib, wios, wkib) in &lc {
        assert_eq!(*error, 0, "{name}: fio reports an error in the LWK");
        // 4 MiB written in 1024 blocks, then every block read back and verified.
        assert_eq!((*wios, *wkib, *rios, *rkib), (1024, 4096, 1024, 4096), "{name}");
    }
    let err = String::from_utf8_lossy(&l.stderr);
    assert!(
        !err.contains("io_uring"),
        "the LWK refused part of fio's io_uring use:\n{err}"
    );
    // Two jobs as threads of one process (two rings, completions waited for on the vCPUs' own
    // threads), mixed reads and writes verified with md5.
    let threads = "[global]\nioengine=io_uring\ndirectory=DIR\nsize=2m\nbs=4k\niodepth=4\n\
                   verify=md5\nthread\nnumjobs=2\nrandrepeat=1\n[t]\nrw=randrw\n";
    let file = dir.join("threads.fio");
    std::fs::write(
        &file,
        threads.replace("DIR", dir.to_str().expect("utf-8 temp path")),
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    let args = ["--output-format=json", file.to_str().expect("utf-8 temp path")];
    let n = native(fio, &args);
    assert!(n.status.success(), "fio natively:\n{}", show(&n));
    let l = lwk(fio, &args);
    assert!(l.status.success(), "fio in the LWK:\n{}", show(&l));
    let (nc, lc) = (fio_counts(&n), fio_counts(&l));
    assert_eq!(nc, lc, "threaded fio's operation counts differ (native, LWK)");
    assert_eq!(lc.len(), 2);
    assert!(lc.iter().all(|j| j.1 == 0 && j.2 > 0 && j.4 > 0), "{lc:?}");
}

#[test]
fn issue_14_perf_record_in_the_lwk_writes_a_perf_data_perf_report_reads() {
    require_kvm();
    require_tool("perf", "linux-perf");
    let dir = Scratch::new("multios-lwk-issue14", "perf");
    let prog = build_c(&dir, "spin", &[]);
    let data = dir.join("perf.data");
    let d = data.to_str().expect("utf-8 temp path");
    let p = prog.to_str().expect("utf-8 temp path");
    let perf = Path::new("/usr/bin/perf");
    // Software events only: this VM has no hardware counters (perf stat shows <not supported>).
    let rec = lwk(perf, &["record", "-e", "cpu-clock", "-o", d, "--", p]);
    assert!(rec.status.success(), "perf record in the LWK:\n{}", show(&rec));
    assert!(text(&rec).contains("spin done"), "{}", show(&rec));
    let err = String::from_utf8_lossy(&rec.stderr);
    assert!(err.contains("Captured and wrote"), "{err}");
    let mut c = Command::new(perf);
    c.args(["report", "--stdio", "-i", d]);
    let rep = run(c, "perf report");
    assert!(rep.status.success(), "perf report:\n{}", show(&rep));
    let out = text(&rep);
    let samples = out
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| {
            n.trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse::<f64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no sample count in perf report:\n{out}"));
    assert!(samples > 0.0, "perf report found no samples:\n{out}");
    assert!(out.contains("of event 'cpu-clock'"), "{out}");
    // The program reading its own ring buffer (VM_PFNMAP|VM_IO on this kernel) directly.
    let ring = build_c(&dir, "perfring", &[]);
    let (n, l) = (native(&ring, &[]), lwk(&ring, &[]));
    assert_same_outputs("perfring.c", &n, &l);
    assert!(
        text(&l).contains("samples found: yes, all of this process: yes, records walked to data_head: yes"),
        "{}",
        show(&l)
    );
    // Counting works too (perf stat reads the counters with read(2), no ring).
    let st = lwk(perf, &["stat", "-e", "task-clock", "--", p]);
    assert!(st.status.success(), "perf stat in the LWK:\n{}", show(&st));
    assert!(
        String::from_utf8_lossy(&st.stderr).contains("task-clock"),
        "{}",
        show(&st)
    );
}

#[test]
fn issue_14_mincore_checks_like_native() {
    require_kvm();
    let dir = Scratch::new("multios-lwk-issue14", "mincore");
    let prog = build_c(&dir, "mincore", &[]);
    let (n, l) = (native(&prog, &[]), lwk(&prog, &[]));
    assert_same_outputs("mincore.c", &n, &l);
    let hole = text(&l)
        .lines()
        .find(|x| x.starts_with("m, 4 pages with a hole"))
        .map(str::to_string);
    assert!(
        hole.as_deref()
            .is_some_and(|x| x.ends_with("-1 Cannot allocate memory")),
        "{}",
        show(&l)
    );
}

/// Restores /proc/sys/vm/nr_hugepages and unmounts a hugetlbfs when dropped.
struct HugePages {
    old: String,
    mount: PathBuf,
}

impl HugePages {
    fn reserve(pages: u32, mount: PathBuf) -> HugePages {
        const KNOB: &str = "/proc/sys/vm/nr_hugepages";
        let old = std::fs::read_to_string(KNOB).unwrap_or_else(|e| panic!("reading {KNOB}: {e}"));
        let want: u32 = old.trim().parse::<u32>().unwrap_or(0) + pages;
        std::fs::write(KNOB, want.to_string()).unwrap_or_else(|e| panic!("writing {KNOB}: {e}"));
        std::fs::create_dir_all(&mount).unwrap_or_else(|e| panic!("mkdir {}: {e}", mount.display()));
        let g = HugePages { old, mount };
        let o = Command::new("mount")
            .args(["-t", "hugetlbfs", "none"])
            .arg(&g.mount)
            .output()
            .unwrap_or_else(|e| panic!("running mount: {e}"));
        assert!(
            o.status.success(),
            "mount -t hugetlbfs: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        g
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", self.old.trim());
    }
}

#[test]
fn issue_14_memory_shared_with_a_forked_child_and_huge_pages_like_native() {
    require_kvm();
    require_root("MAP_HUGETLB and hugetlbfs");
    let dir = Scratch::new("multios-lwk-issue14", "kshared");
    let prog = build_c(&dir, "kshared", &[]);
    let file = dir.join("kshared.dat");
    let f = file.to_str().expect("utf-8 temp path");
    // Without huge pages first: MAP_HUGETLB is ENOMEM on both sides (this machine has none).
    let (n, l) = (native(&prog, &[f]), lwk(&prog, &[f]));
    assert_same_outputs("kshared.c", &n, &l);
    let out = text(&l);
    for line in [
        "MAP_SHARED|MAP_ANONYMOUS: parent sees child's write, last byte 122",
        "MAP_PRIVATE|MAP_ANONYMOUS: parent sees parent's write, last byte 0",
        "/dev/zero MAP_SHARED: parent sees child's write",
        "memfd MAP_SHARED: parent sees child's write",
        "memfd: parent sees from the child's own mapping",
        "reads zero through the mapping: 1",
        "mprotect RW of a read-only file's shared mapping: -1 (Permission denied)",
        "mprotect RW of a read-write file's: 0, file holds written after m",
        "mremap grow: moved 1, keeps page 0: written after m, sees page 2: third page",
        "file page 1 holds: via the grown m",
        "mremap shrink in place: 1",
        "write to PROT_READ shared anonymous: SIGSEGV",
        "write to PROT_READ private file mapping: SIGSEGV",
        "after mprotect RW: written, file unchanged: 1",
        "MREMAP_FIXED private: at target 1, holds private bytes, new page zero 1",
        "MREMAP_FIXED shared: at target 1, file holds moved shared",
        "MREMAP_FIXED overlapping: Invalid argument",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    // With two huge pages reserved (restored after) and a hugetlbfs mount.
    let _huge = HugePages::reserve(4, dir.join("hugetlbfs"));
    let h = dir.join("hugetlbfs");
    let hp = h.to_str().expect("utf-8 temp path");
    let (n, l) = (native(&prog, &[f, "huge", hp]), lwk(&prog, &[f, "huge", hp]));
    assert_same_outputs("kshared.c huge", &n, &l);
    let out = text(&l);
    for line in [
        "MAP_HUGETLB: mapped, 2 MiB aligned: 1",
        "MAP_HUGETLB shared: parent sees child's write",
        "hugetlbfs file: mapped, 2 MiB aligned: 1",
        "hugetlbfs file mapped again holds: the child's bytes in a huge page",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}

/// A loop device over an image file, detached when dropped (and its mount, if any, unmounted).
struct Loop {
    dev: String,
    mount: Option<PathBuf>,
}

impl Loop {
    fn attach(image: &Path, mib: u64) -> Loop {
        let f = std::fs::File::create(image).unwrap_or_else(|e| panic!("creating {}: {e}", image.display()));
        f.set_len(mib << 20)
            .unwrap_or_else(|e| panic!("sizing {}: {e}", image.display()));
        let o = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(image)
            .output()
            .unwrap_or_else(|e| panic!("running losetup (apt-get install mount): {e}"));
        assert!(
            o.status.success(),
            "losetup -f --show {}: {} (is /dev/loop-control there?)",
            image.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        Loop {
            dev: String::from_utf8_lossy(&o.stdout).trim().to_string(),
            mount: None,
        }
    }

    /// mkfs.ext4 on the device, mounted at `at`.
    fn mount_ext4(&mut self, at: PathBuf) {
        let o = Command::new("mkfs.ext4")
            .args(["-q", "-F", &self.dev])
            .output()
            .unwrap_or_else(|e| panic!("running mkfs.ext4 (apt-get install e2fsprogs): {e}"));
        assert!(
            o.status.success(),
            "mkfs.ext4: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::create_dir_all(&at).unwrap_or_else(|e| panic!("mkdir {}: {e}", at.display()));
        let o = Command::new("mount")
            .arg(&self.dev)
            .arg(&at)
            .output()
            .unwrap_or_else(|e| panic!("running mount: {e}"));
        assert!(
            o.status.success(),
            "mount {}: {}",
            self.dev,
            String::from_utf8_lossy(&o.stderr)
        );
        self.mount = Some(at);
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn head(path: &Path, n: usize) -> Vec<u8> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    let mut b = vec![0u8; n];
    f.read_exact(&mut b)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    b
}

#[test]
fn issue_14_loop_device_and_file_on_it_written_in_the_lwk_read_back_natively() {
    require_kvm();
    require_root("loop devices");
    require_tool("losetup", "mount");
    require_tool("mkfs.ext4", "e2fsprogs");
    let dir = Scratch::new("multios-lwk-issue14", "blockdev");
    let prog = build_c(&dir, "blockdev", &[]);
    // The raw devices: one written natively, one in the LWK; their bytes must be equal.
    let (a, b) = (
        Loop::attach(&dir.join("native.img"), 4),
        Loop::attach(&dir.join("lwk.img"), 4),
    );
    let n = native(&prog, &[&a.dev, "seed"]);
    let l = lwk(&prog, &[&b.dev, "seed"]);
    assert_same_outputs("blockdev.c on a loop device", &n, &l);
    let out = text(&l);
    for line in [
        "msync: 0",
        "O_DIRECT data back: same",
        "mapped page 5 read with O_DIRECT: page 5 of seed",
        "O_DIRECT unaligned: -1 (Invalid argument)",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    let len = 320 * 1024;
    assert!(
        head(Path::new(&a.dev), len) == head(Path::new(&b.dev), len),
        "the device the LWK wrote differs from the one written natively"
    );
    let page5 = head(Path::new(&b.dev), 6 * 4096);
    assert!(
        page5[5 * 4096..].starts_with(b"page 5 of seed\0"),
        "page 5 of the device, read natively"
    );
    drop((a, b));
    // A file on an ext4 filesystem on a loop device.
    let mut fs = Loop::attach(&dir.join("fs.img"), 16);
    fs.mount_ext4(dir.join("mnt"));
    let files = [dir.join("mnt/native.dat"), dir.join("mnt/lwk.dat")];
    for f in &files {
        std::fs::File::create(f)
            .and_then(|h| h.set_len(1 << 20))
            .unwrap_or_else(|e| panic!("creating {}: {e}", f.display()));
    }
    let n = native(&prog, &[files[0].to_str().expect("utf-8"), "file"]);
    let l = lwk(&prog, &[files[1].to_str().expect("utf-8"), "file"]);
    assert_same_outputs("blockdev.c on a file of an ext4 loop device", &n, &l);
    assert!(text(&l).contains("O_DIRECT data back: same"), "{}", show(&l));
    assert!(head(&files[0], len) == head(&files[1], len), "the files differ");
}
