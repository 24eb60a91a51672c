//! Issue #15 (`validate --terms touch`): with `--per-process`, both backends record each process's
//! new anonymous ranges — the ranges the LWK populates at map time — by length. A C program built
//! here maps known lengths (and others the LWK does not populate) and grows its break; run with
//! and without doing so, the difference of its `anon_maps` is exactly those ranges, and the
//! profile says version 6.

mod common;

use common::{compile_c, require_root, scratch, serial};
use multios_profile::{anon_bucket, AnonMaps, Profile};
use multios_profiler::{Backend, Options};

const MAPPER: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static void map(size_t len, int prot, int flags) {
    if (mmap(0, len, prot, flags, -1, 0) == MAP_FAILED) exit(2);
}

int main(int argc, char **argv) {
    if (argc < 2) return 0;
    int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
    /* Populated at map time by the LWK: three of 64 KiB, one of 6 MiB, a break grown 256 KiB. */
    for (int i = 0; i < 3; i++) map(64 << 10, rw, anon);
    map(6 << 20, rw, anon);
    if (sbrk(256 << 10) == (void *)-1) return 3;
    /* Not: shared, read-only, a reservation, a stack, a file, a failed call. */
    map(64 << 10, rw, MAP_SHARED | MAP_ANONYMOUS);
    map(64 << 10, PROT_READ, anon);
    map(1 << 20, rw, anon | MAP_NORESERVE);
    map(64 << 10, rw, anon | MAP_STACK);
    int fd = open(argv[0], O_RDONLY);
    if (fd < 0 || mmap(0, 4096, rw, MAP_PRIVATE, fd, 0) == MAP_FAILED) return 4;
    if (mmap(0, 0, rw, anon, -1, 0) != MAP_FAILED) return 5;
    return 0;
}
"#;

fn run(backend: Backend, argv: &[String]) -> Profile {
    multios_profiler::profile(&Options {
        backend: Some(backend),
        command: argv.iter().map(std::ffi::OsString::from).collect(),
        per_process: true,
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("profiling {argv:?} failed: {e}"))
}

/// The root process's ranges.
fn root_maps(p: &Profile) -> AnonMaps {
    assert_eq!(p.exit.as_ref().and_then(|e| e.code), Some(0), "{:?}", p.exit);
    let root = p.processes.first().expect("processes[]");
    root.anon_maps
        .clone()
        .unwrap_or_else(|| panic!("no anon_maps for the root: {root:?}"))
}

fn check(backend: Backend) {
    let dir = scratch(&format!("anon-{backend:?}"));
    let exe = compile_c(&dir, "mapper", MAPPER, &[]);
    let exe = exe.display().to_string();
    let quiet = run(backend, std::slice::from_ref(&exe));
    let maps = run(backend, &[exe.clone(), "maps".into()]);
    // 6 for the anonymous ranges; 7 under eBPF, which records the calls' gaps too.
    let want = if backend == Backend::Ebpf { 7 } else { 6 };
    assert_eq!(maps.written_version(), want, "anon_maps say version 6, gaps 7");
    let (a, b) = (root_maps(&quiet), root_maps(&maps));
    let want: [(u64, u64); 3] = [(64 << 10, 3), (256 << 10, 1), (6 << 20, 1)];
    assert_eq!(b.calls - a.calls, 5, "{a:?} → {b:?}");
    assert_eq!(
        b.bytes - a.bytes,
        3 * (64 << 10) + (256 << 10) + (6 << 20),
        "{a:?} → {b:?}"
    );
    let at = |m: &AnonMaps, k: usize| {
        (
            m.hist_log2_bytes.get(k).copied().unwrap_or(0),
            m.bytes_log2.get(k).copied().unwrap_or(0),
        )
    };
    for k in 0..multios_profile::ANON_BUCKETS {
        let (n, s) = want
            .iter()
            .filter(|(len, _)| anon_bucket(*len) == k)
            .fold((0, 0), |(n, s), (len, c)| (n + c, s + len * c));
        let (na, sa) = at(&a, k);
        let (nb, sb) = at(&b, k);
        assert_eq!((nb - na, sb - sa), (n, s), "bucket {k}: {a:?} → {b:?}");
    }
    // What the LWK populates of them at its default cap of 4 MiB: the 6 MiB range's head only.
    let cap = 4u64 << 20;
    let populated = b.populated_bytes(cap) - a.populated_bytes(cap);
    assert_eq!(populated, (3 * (64 << 10) + (256 << 10) + cap) as f64);
}

#[test]
fn issue_15_ebpf_records_the_anonymous_ranges_a_program_maps() {
    let _g = serial();
    require_root();
    check(Backend::Ebpf);
}

#[test]
fn issue_15_ptrace_records_the_anonymous_ranges_a_program_maps() {
    let _g = serial();
    check(Backend::Ptrace);
}
