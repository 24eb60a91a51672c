//! Issue #13 (and #15's short programs): what `lwk run` pays per run beyond the program. The
//! window's memslots are made as the window is used (`winslots.rs`), not all at VM creation; ld.so's
//! RELRO mprotect of a library's private file mapping no longer flushes every shadow table; the
//! summary names the start-up phases, the VM thread's steps and the teardown. No timing is
//! asserted, only what the counts must say, and a program that reaches fresh window memory every
//! way (threads, brk, fork, a private file mapping made read-only) behaves as natively
//! (`tests/c/slots.c`). Needs /dev/kvm and gcc: FAILS (never skips) without them.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{assert_same, build_c, require_kvm};

#[test]
fn issue_13_a_dynamic_program_starts_without_a_flush_and_with_few_window_memslots() {
    require_kvm("issue #13");
    let mut cfg = multios_lwk::Config::new("/usr/bin/true", &[]);
    cfg.quiet = true;
    let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("LWK run of true: {e}"));
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    let c = &o.costs;
    // ld.so's RELRO mprotects (the program's, libc's private file mapping) drop their ranges'
    // shadow entries; none drops every shadow table.
    assert_eq!(c.flushes, 0, "{c:?}");
    assert!(c.invalidations >= 1, "{c:?}");
    // The 4 GiB window has 32 memslots' worth of chunks; `true` reaches a few.
    let chunks = (cfg.mem_size + (2 << 20)).div_ceil(multios_lwk::winslots::CHUNK);
    assert!(
        c.window_memslots >= 1 && c.window_memslots < chunks / 2,
        "{} of {chunks} window memslots made",
        c.window_memslots
    );
    let names = |l: &[(String, f64)]| l.iter().map(|p| p.0.clone()).collect::<Vec<_>>();
    let phases = names(&c.phases);
    for p in ["kernel", "page tables", "VM and memslots", "vCPU 0"] {
        assert!(phases.iter().any(|n| n == p), "phase {p} missing: {phases:?}");
    }
    let sum: f64 = c.phases.iter().map(|p| p.1).sum();
    assert!(
        (sum - o.startup.as_secs_f64()).abs() < 1e-3 + 0.01 * sum,
        "the phases ({sum} s) add up to the start-up ({:?})",
        o.startup
    );
    let vm = names(&c.vm_thread);
    assert!(vm.iter().any(|n| n == "memslots: window used so far"), "{vm:?}");
    assert_eq!(
        names(&c.teardown),
        [
            "stop the other vCPU threads",
            "stop the proxy and the signal pump",
            "close the VM and its vCPUs",
            "unmap the guest memory"
        ]
    );
}

#[test]
fn issue_13_window_memslots_made_on_demand_serve_threads_brk_forks_and_private_file_maps_like_native() {
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "slots");
    let prog = build_c(dir.path(), "slots", &["-O1"]);
    let o = assert_same(&prog, &[], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("child: parent's map intact"), "{out}");
    assert!(
        out.contains(
            "private file map: written, after PROT_READ SIGSEGV, after RW written, holds ac, file holds f"
        ),
        "{out}"
    );
}
