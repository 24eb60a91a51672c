//! Issue #16: the calls the LWK serves itself write their results as Linux's copy_to_user does —
//! EFAULT into a page the guest may not write (read-only private, a read-only MAP_SHARED file
//! mapping, PROT_NONE, a buffer running into a read-only page, a page mprotected read-only, a
//! shared file mapping's page past the end of its file, SIGBUS for a plain store) and
//! the page left as it was — and read their arguments as copy_from_user does (EFAULT from
//! PROT_NONE). Before, they checked only that the address lay in the window: the guest's
//! read-only pages were written, and the store into a read-only shared file mapping (read-only on
//! the host too) killed the VMM with SIGSEGV. These tests need /dev/kvm and gcc: they FAIL (never
//! skip) when one is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #16 tests need KVM and it is not usable here: {e}");
    }
}

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Builds tests/c/NAME.c with gcc `flags` into `dir`.
fn build_c(name: &str, flags: &[&str], dir: &Scratch) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let out = dir
        .path()
        .join(format!("{name}{}", flags.concat().replace('-', "_")));
    let o = Command::new("gcc")
        .args(flags)
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(
        o.status.success(),
        "gcc {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `tests/c/i16r_results.c` (built with `flags`) natively and in the LWK with `extra`
/// arguments and checks that both print the same, every refused call EFAULT, no page changed,
/// and the VMM alive at the end.
fn same_as_native(flags: &[&str], extra: &[&str]) {
    require_kvm();
    // One directory per test (they run in parallel, in one process).
    let tag = format!("rowrites{}{}", flags.concat(), extra.concat()).replace('-', "_");
    let dir = Scratch::new("multios-issue16", &tag);
    let prog = build_c("i16r_results", flags, &dir);
    let file = |tag: &str| dir.path().join(format!("ro-{tag}.dat"));
    let native = run(Command::new(&prog).arg(file("native")).args(extra));
    assert!(native.status.success(), "native run: {}", show(&native));
    let lwk = run(Command::new(RUNNER).arg(&prog).arg(file("lwk")).args(extra));
    assert_eq!(
        lwk.status.code(),
        Some(0),
        "the VMM must survive the guest's calls: {}",
        show(&lwk)
    );
    let (n, l) = (
        String::from_utf8_lossy(&native.stdout),
        String::from_utf8_lossy(&lwk.stdout),
    );
    assert!(n.ends_with("survived\n"), "native: {}", show(&native));
    for line in n.lines() {
        assert!(!line.contains("CHANGED"), "natively: {line}");
        if line.contains(": -1 ") {
            assert!(line.ends_with("EFAULT"), "natively not EFAULT: {line}");
        }
    }
    let diff: Vec<String> = n
        .lines()
        .zip(l.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("native: {a}\n   lwk: {b}"))
        .collect();
    assert!(
        diff.is_empty() && n.lines().count() == l.lines().count(),
        "the LWK differs from native:\n{}\n\nLWK {}",
        diff.join("\n"),
        show(&lwk)
    );
}

#[test]
fn issue_16_local_calls_do_not_write_pages_the_guest_cannot_write() {
    same_as_native(&[], &[]);
}

#[test]
fn issue_16_local_calls_do_not_write_pages_the_guest_cannot_write_static() {
    same_as_native(&["-static"], &[]);
}

/// getrlimit/prlimit64 of RLIMIT_NOFILE, which the LWK serves in `syscall/fdrange.rs`: its
/// `guest_rlimit` writes the old limit with `GuestMemory::write_user_u64` and reads the new one
/// with `read_user_u64`, so both are EFAULT on pages the guest may not write or read.
#[test]
fn issue_16_nofile_limit_is_not_written_into_read_only_pages() {
    same_as_native(&[], &["nofile"]);
}

/// The checked copies themselves (`GuestMemory::write_user`, `read_user`, `read_cstr`), on a
/// window whose page tables give four pages read-write, read-only, PROT_NONE and read-write: the
/// guest's protections are honoured, a buffer straddling into a page it may not write is refused
/// whole, and a host page that refuses the VMM (made read-only or PROT_NONE on the host behind
/// the guest's back) is EFAULT for the checked copies and a dropped write / zeroes for the
/// VMM's own — never a fault of the process. (Here, in a test process of its own: the window is
/// at fixed addresses, which the library's unit tests map too.)
#[test]
fn issue_16_checked_writer_honours_guest_and_host_protections() {
    use multios_lwk::memory::{GuestMemory, APP_BASE, PAGE_2M};
    use multios_lwk::pagetable::bits;
    const EFAULT: i64 = -(libc::EFAULT as i64);
    multios_lwk::signal::host::catch_sent_faults();
    let mem = GuestMemory::new(2 * PAGE_2M).unwrap_or_else(|e| panic!("{e}"));
    let (rw, ro) = (
        bits(Some(libc::PROT_READ | libc::PROT_WRITE)),
        bits(Some(libc::PROT_READ)),
    );
    let mut chunk = [0u64; 512];
    chunk[0] = rw;
    chunk[1] = ro;
    chunk[2] = bits(Some(libc::PROT_NONE));
    chunk[3] = rw;
    mem.set_chunk(APP_BASE, &chunk);
    let page = |k: u64| APP_BASE + 4096 * k;

    // Guest protections.
    assert_eq!(mem.write_user_u64(page(0), 7), Ok(()));
    assert_eq!(mem.read_user_u64(page(0)), Ok(7));
    assert_eq!(mem.write_user_u64(page(1), 7), Err(EFAULT), "read-only");
    assert_eq!(mem.read_u64(page(1)), 0, "the read-only page is unchanged");
    assert_eq!(mem.read_user_u64(page(1)), Ok(0), "read-only is readable");
    assert_eq!(mem.write_user_u64(page(2), 7), Err(EFAULT), "PROT_NONE");
    assert_eq!(
        mem.read_user_u64(page(2)),
        Err(EFAULT),
        "PROT_NONE is not readable"
    );
    assert_eq!(mem.write_user_u32(page(4), 7), Err(EFAULT), "unmapped");
    assert_eq!(mem.write_user(page(1) - 4, &[9; 8]), Err(EFAULT), "straddling");
    assert_eq!(
        mem.read_u64(page(1) - 8),
        0,
        "nothing of a refused buffer is written"
    );
    assert_eq!(mem.write_user_u64(0x1000, 7), Err(EFAULT), "below the window");
    assert_eq!(mem.write_user(page(1), &[]), Ok(()), "nothing to write");
    assert_eq!(
        mem.write_user_u64(APP_BASE + 2 * PAGE_2M - 4, 7),
        Err(EFAULT),
        "past the end"
    );

    // Strings: a page at a time, refused where the guest cannot read.
    mem.write(page(1) - 3, b"abcdef\0");
    assert_eq!(mem.read_cstr(page(1) - 3, 4096).as_deref(), Some(&b"abcdef"[..]));
    assert_eq!(mem.read_cstr(page(1) - 3, 4).as_deref(), None, "longer than max");
    mem.write(page(2) - 2, b"xy");
    assert_eq!(mem.read_cstr(page(2) - 2, 4096), None, "runs into PROT_NONE");
    mem.write(page(2) - 2, b"x\0");
    assert_eq!(mem.read_cstr(page(2) - 2, 4096).as_deref(), Some(&b"x"[..]));

    // The host refuses: page 3 is read-write for the guest, then read-only, then PROT_NONE on
    // the host (a read-only shared file mapping, a mapping changed under the check).
    mem.write_u64(page(3), 5);
    for (prot, readable) in [(libc::PROT_READ, true), (libc::PROT_NONE, false)] {
        // SAFETY: page 3 of the window, which this test's GuestMemory owns and no reference
        // points into; set back to read-write below, before the memory is dropped.
        let r = unsafe { libc::mprotect(page(3) as *mut libc::c_void, 4096, prot) };
        assert_eq!(r, 0);
        assert_eq!(mem.write_user_u64(page(3), 6), Err(EFAULT));
        mem.write_u64(page(3), 6); // the VMM's own write: dropped, not a fault
        if readable {
            assert_eq!(mem.read_user_u64(page(3)), Ok(5));
            assert_eq!(mem.read_u64(page(3)), 5);
        } else {
            assert_eq!(mem.read_user_u64(page(3)), Err(EFAULT));
            assert_eq!(
                mem.read_u64(page(3)),
                0,
                "an unreadable host page reads as zeroes"
            );
        }
    }
    // SAFETY: as above: back to read-write.
    let back = unsafe {
        libc::mprotect(
            page(3) as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    assert_eq!(back, 0);
    assert_eq!(mem.read_user_u64(page(3)), Ok(5));
}
