//! Issue #13 (and #15's short programs): what `lwk run` pays per run beyond the program. The
//! window's memslots are made as the window is used (`winslots.rs`), not all at VM creation; ld.so's
//! RELRO mprotect of a library's private file mapping no longer flushes every shadow table; the
//! summary names the start-up phases, the VM thread's steps and the teardown. No timing is
//! asserted, only what the counts must say, and a program that reaches fresh window memory every
//! way (threads, brk, fork) behaves as natively (`tests/c/slots.c`; the private file mapping made
//! read-only and back is `tests/c/tighten.c`'s). Needs /dev/kvm and gcc: FAILS (never skips) without them.

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
    // The 4 GiB window has 8 memslots' worth of chunks; `true` reaches three: its image and heap,
    // its libraries (above the heap's reserve) and its stack with the mappings below it.
    let chunks = cfg.mem_size / multios_lwk::winslots::CHUNK;
    assert!(
        chunks == 8 && (1..=3).contains(&c.window_memslots),
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
    for step in ["memslots: window used so far", "KVM_GET_SUPPORTED_CPUID"] {
        assert!(vm.iter().any(|n| n == step), "{step} missing: {vm:?}");
    }
    assert_eq!(
        names(&c.teardown),
        [
            "stop the other vCPU threads",
            "stop the proxy and the signal pump",
            "read KVM's statistics and count the resident pages",
            "close the VM and its vCPUs",
            "unmap the guest memory"
        ]
    );
}

#[test]
fn issue_13_window_memslots_made_on_demand_serve_threads_brk_and_forks_like_native() {
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "slots");
    let prog = build_c(dir.path(), "slots", &["-O1"]);
    let o = assert_same(&prog, &[], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("child: parent's map intact"), "{out}");
    assert!(out.contains("big map 6"), "{out}");
}

/// The sites rewritten, from `lwk-run`'s `LWK_VERBOSE=1` line.
fn sites_rewritten(stderr: &[u8]) -> usize {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .find(|l| l.ends_with("sites rewritten"))
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    words[words.len() - 3]
        .parse()
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn issue_13_the_site_cache_rewrites_the_same_sites_and_ignores_a_damaged_entry() {
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "sitecache");
    let cache = dir.path().join("sites");
    let cache_s = cache.to_str().expect("utf-8 path");
    let env = [("MULTIOS_LWK_SITE_CACHE", cache_s), ("LWK_VERBOSE", "1")];
    let sh = std::path::Path::new("/bin/sh");
    let args = ["-c", "echo $((6 * 7))"];
    let run = || {
        let o = sidebyside::lwk(sh, &args, &env);
        assert!(o.status.success(), "{}", sidebyside::show(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "42\n");
        sites_rewritten(&o.stderr)
    };
    let entries = || -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(&cache)
            .expect("the cache directory")
            .map(|e| e.expect("entry").path())
            .collect();
        v.sort();
        v
    };
    let first = run();
    assert!(first > 100, "{first} sites");
    let made = entries();
    assert!(!made.is_empty(), "no cache entry written");
    let kept: Vec<Vec<u8>> = made.iter().map(|p| std::fs::read(p).expect("entry")).collect();
    // From the entries: the same sites.
    assert_eq!(run(), first);
    assert_eq!(entries(), made);
    // Damaged entries (a site's offset changed) do not match the code: decoded again, same
    // sites, and written anew.
    for (p, bytes) in made.iter().zip(&kept) {
        let mut b = bytes.clone();
        if b.len() > 17 {
            b[17] ^= 0x5a;
        }
        std::fs::write(p, b).expect("damaging an entry");
    }
    assert_eq!(run(), first);
    for (p, bytes) in made.iter().zip(&kept) {
        assert_eq!(&std::fs::read(p).expect("entry"), bytes, "{}", p.display());
    }
}
