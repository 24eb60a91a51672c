//! Issue #15 (found by `multios validate --suite bundled --lwk`): LAMMPS and HPC Challenge started
//! WITHOUT mpirun — an Open MPI singleton start-up, whose MPI_Init forks and execs `orted` inside
//! the LWK — exited 1 in the LWK and 0 natively. The daemon's PMIx server found no network
//! interface (ioctl SIOCGIFCONF was refused with ENOTTY) and could not open its listener. These
//! tests run each program natively and in the LWK and compare what is deterministic: the exit
//! status, LAMMPS' thermodynamic table, hpcc's summary without its timings; and, with
//! `tests/c/netif.c` and busybox's `ifconfig -a`, the interface ioctls and sched_getaffinity
//! lengths that start-up uses, and with `tests/c/mempolicy.c` the memory-policy calls hwloc makes. Need /dev/kvm, gcc, Debian's lammps, hpcc, openmpi-bin and
//! busybox-static: FAIL (never skip) without. Take ≈ 20–40 s together.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, run, show, RUNNER};
use std::path::Path;
use std::process::{Command, Output};

/// A 256-atom Lennard-Jones melt, 100 steps: seconds natively and in the LWK.
const MELT: &str = "units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 25
run 100
";

/// One rank and one thread on both sides (OpenBLAS, OpenMP), so the numbers are reproducible.
const ENV: &[(&str, &str)] = &[("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1")];

/// Runs `prog args` in `dir`, natively or in the LWK (the crate's front end, `lwk-run`).
fn start(dir: &Path, in_lwk: bool, prog: &str, args: &[&str]) -> Output {
    let mut c = if in_lwk {
        let mut c = Command::new(RUNNER);
        c.arg(prog);
        c
    } else {
        Command::new(prog)
    };
    c.args(args).current_dir(dir).envs(ENV.iter().copied());
    let side = if in_lwk { "in the LWK" } else { "natively" };
    run(
        c,
        &format!("{prog} {side} (Debian packages lammps, hpcc, openmpi-bin)"),
    )
}

/// LAMMPS' thermodynamic table: from the `Step` header to the line before `Loop time`.
fn thermo(out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Step"))
        .take_while(|l| !l.starts_with("Loop time"))
        .collect();
    lines.join("\n")
}

#[test]
fn issue_15_lammps_singleton_runs_in_the_lwk() {
    require_kvm("issue #15");
    let dir = Scratch::new("multios-lwk-issue15", "lammps");
    std::fs::write(dir.path().join("in.lj"), MELT).expect("write the LAMMPS input");
    let args = ["-in", "in.lj", "-log", "none"];
    let native = start(dir.path(), false, "lmp", &args);
    assert!(native.status.success(), "lmp natively:\n{}", show(&native));
    let lwk = start(dir.path(), true, "lmp", &args);
    assert_eq!(
        lwk.status.code(),
        Some(0),
        "lmp (singleton MPI) in the LWK:\n{}",
        show(&lwk)
    );
    let (n, l) = (thermo(&native.stdout), thermo(&lwk.stdout));
    assert_eq!(
        n.lines().count(),
        6,
        "the table's header and 5 rows, natively:\n{n}"
    );
    assert_eq!(n, l, "LAMMPS' thermodynamic output differs:\n{}", show(&lwk));
}

/// hpcc's summary (`Name=value` lines of hpccoutf.txt) without what depends on time or speed.
fn summary(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("hpccoutf.txt")).expect("hpcc wrote no hpccoutf.txt");
    let timed = [
        "time", "Time", "flops", "GBs", "GUPs", "Copy", "Scale", "Add", "Triad", "usec", "GBytes",
    ];
    text.lines()
        .skip_while(|l| !l.starts_with("Begin of Summary section"))
        .take_while(|l| !l.starts_with("End of Summary section"))
        .filter(|l| l.contains('='))
        .filter(|l| {
            !timed
                .iter()
                .any(|t| l.split('=').next().unwrap_or("").contains(t))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn issue_15_hpcc_singleton_runs_in_the_lwk() {
    require_kvm("issue #15");
    let input = multios_lwk::bench::hpcc::input(200, 32);
    let mut sums = Vec::new();
    for in_lwk in [false, true] {
        let dir = Scratch::new("multios-lwk-issue15", if in_lwk { "hpcc-lwk" } else { "hpcc" });
        std::fs::write(dir.path().join("hpccinf.txt"), &input).expect("write hpccinf.txt");
        let o = start(dir.path(), in_lwk, "hpcc", &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "hpcc (singleton MPI), LWK {in_lwk}:\n{}",
            show(&o)
        );
        sums.push(summary(dir.path()));
    }
    assert!(
        sums[0].iter().any(|l| l == "Success=1") && sums[0].iter().any(|l| l == "HPL_N=200"),
        "hpcc's summary natively: {:?}",
        sums[0]
    );
    assert_eq!(
        sums[0], sums[1],
        "hpcc's summary (timings left out) differs natively / in the LWK"
    );
}

/// Builds tests/c/NAME.c dynamic and static, runs each natively and in the LWK (same status and
/// stdout), and checks that the output holds every line of `expect`.
fn c_program_like_native(name: &str, expect: &[&str]) {
    require_kvm("issue #15");
    let dir = Scratch::new("multios-lwk-issue15", name);
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(dir.path(), name, flags);
        let out = assert_same(&prog, &[], &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        for e in expect {
            assert!(
                text.lines().any(|l| l == *e),
                "{name}.c {flags:?}: no line {e:?} in\n{text}"
            );
        }
    }
}

#[test]
fn issue_15_interface_ioctls_and_affinity_lengths_like_native() {
    c_program_like_native("netif", &["lo 127.0.0.1", "sched_getaffinity pid#0 len 8: 8"]);
}

#[test]
fn issue_15_memory_policy_calls_like_native() {
    // hwloc's probe in every Open MPI start-up: set_mempolicy was refused with ENOSYS.
    c_program_like_native(
        "mempolicy",
        &[
            "set_mempolicy BIND {0}: 0",
            "get_mempolicy mask at a page's end: 0",
        ],
    );
}

#[test]
fn issue_15_busybox_ifconfig_lists_the_interfaces_like_native() {
    require_kvm("issue #15");
    // busybox-static: SIOCGIFCONF and every SIOCGIF* read, from a static binary. Packet and byte
    // counters move between the two runs, so their digits are left out.
    let busybox = Path::new("/bin/busybox");
    let mask = |o: &Output| -> String {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                if l.contains("packets") || l.contains("bytes") || l.contains("errors") {
                    l.replace(|c: char| c.is_ascii_digit(), "#")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let native = sidebyside::native(busybox, &["ifconfig", "-a"]);
    assert!(
        native.status.success(),
        "busybox ifconfig natively:\n{}",
        show(&native)
    );
    let lwk = sidebyside::lwk(busybox, &["ifconfig", "-a"], &[]);
    assert_eq!(
        lwk.status.code(),
        Some(0),
        "busybox ifconfig in the LWK:\n{}",
        show(&lwk)
    );
    assert!(mask(&native).contains("127.0.0.1"), "{}", show(&native));
    assert_eq!(mask(&native), mask(&lwk), "ifconfig -a differs:\n{}", show(&lwk));
    assert!(
        !String::from_utf8_lossy(&lwk.stderr).contains("no known layout"),
        "an interface ioctl was refused:\n{}",
        show(&lwk)
    );
}
