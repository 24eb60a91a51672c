//! Issue #16: ELF files a guest can make, loaded by the VMM. A PT_LOAD whose end wrapped around
//! the address space passed the window check, and its file bytes were written into the LWK's own
//! pages (the system page's exception handlers: the guest's code then ran in ring 0, and a forged
//! frame made the VMM panic) — at start-up, and by an execve of a file the guest wrote itself.
//! More file bytes than memory wrote past the window (a panic), an empty PT_LOAD made the VMM loop
//! for ever, a malformed PT_INTERP was dropped (the program ran without its interpreter), and
//! arguments larger than a small window's stack were written below it. Each damaged copy of a
//! compiled program is refused (126, or SIGSEGV for an execve past its point of no return) or runs
//! as natively, and never panics or hangs the VMM. Needs /dev/kvm and gcc.

#[path = "../../../testsupport/exec_file.rs"]
mod exec_file;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{build_c, require_kvm, run, show, RUNNER};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_GNU_STACK: u32 = 0x6474_e551;

/// A program header's fields (ELF64).
#[derive(Clone, Copy)]
struct Phdr {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

/// The offset of the first program header of type `kind`.
fn find(b: &[u8], kind: u32) -> Option<usize> {
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().ok()?) as usize;
    let (size, n) = (u16_at(b, 0x36), u16_at(b, 0x38));
    (0..n)
        .map(|i| phoff + i * size)
        .find(|&at| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default()) == kind)
}

fn put(b: &mut [u8], at: usize, p: Phdr) {
    b[at..at + 4].copy_from_slice(&p.kind.to_le_bytes());
    b[at + 4..at + 8].copy_from_slice(&p.flags.to_le_bytes());
    for (off, v) in [
        (8, p.offset),
        (16, p.vaddr),
        (24, p.vaddr),
        (32, p.filesz),
        (40, p.memsz),
    ] {
        b[at + off..at + off + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// A copy of `prog` whose PT_GNU_STACK header is replaced by the extra segment `p`.
fn with_segment(dir: &Path, prog: &Path, name: &str, p: Phdr) -> PathBuf {
    let mut b = std::fs::read(prog).expect("reading the program");
    let at = find(&b, PT_GNU_STACK).expect("a PT_GNU_STACK header to replace");
    put(&mut b, at, p);
    write_exec(dir, name, &b)
}

fn write_exec(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let out = dir.join(name);
    exec_file::write(&out, bytes, 0o755);
    out
}

fn lwk(args: &[&Path]) -> Output {
    let mut c = Command::new(RUNNER);
    c.args(args);
    run(c, "in the LWK")
}

fn assert_no_vmm_failure(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("VMM bug") && o.status.code() != Some(101),
        "the VMM failed\n{}",
        show(o)
    );
}

/// The system page's exception handlers (LWK_BASE + 0xa000), reached through a wrapped end.
const LWK_PAGE: u64 = 0x7e00_0000_a000;

#[test]
fn issue_16_a_wrapped_segment_never_reaches_the_lwks_pages() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "elfwrap");
    let prog = build_c(d.path(), "hellomsg", &["-O1", "-static"]);
    let wrap = with_segment(
        d.path(),
        &prog,
        "wrap",
        Phdr {
            kind: PT_LOAD,
            flags: 7,
            offset: 0,
            vaddr: LWK_PAGE,
            filesz: 0x1000,
            memsz: 0u64.wrapping_sub(LWK_PAGE) + 0x40_2000,
        },
    );
    let o = lwk(&[&wrap]);
    assert_no_vmm_failure(&o);
    assert_eq!(o.status.code(), Some(126), "refused at start\n{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ends past the address space"),
        "{}",
        show(&o)
    );
    // The same file executed by a guest: past execve's point of no return, SIGSEGV as Linux.
    let execer = build_c(d.path(), "nestexec", &["-O1", "-static"]);
    let o = lwk(&[&execer, &wrap]);
    assert_no_vmm_failure(&o);
    assert_eq!(o.status.signal(), Some(libc::SIGSEGV), "{}", show(&o));
}

#[test]
fn issue_16_segments_linux_refuses_are_refused_and_empty_ones_ignored() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "elfsegs");
    let prog = build_c(d.path(), "hellomsg", &["-O1", "-static"]);
    let seg = |name: &str, vaddr: u64, filesz: u64, memsz: u64| {
        let p = Phdr {
            kind: PT_LOAD,
            flags: 6,
            offset: 0,
            vaddr,
            filesz,
            memsz,
        };
        with_segment(d.path(), &prog, name, p)
    };
    // More file than memory, at the window's end (written past it) and inside it.
    for (name, vaddr) in [("fgm-end", 0x1_003f_f000), ("fgm-mid", 0x1000_0000)] {
        let o = lwk(&[&seg(name, vaddr, 0x2000, 0x10)]);
        assert_no_vmm_failure(&o);
        assert_eq!(o.status.code(), Some(126), "{name}\n{}", show(&o));
    }
    // An address whose end wraps to 0.
    let o = lwk(&[&seg("wrap0", 0xffff_ffff_ffff_f000, 0x1000, 0x1000)]);
    assert_no_vmm_failure(&o);
    assert_eq!(o.status.code(), Some(126), "{}", show(&o));
    // An empty PT_LOAD maps nothing on Linux: the program runs.
    let empty = seg("empty", 0x1000_0000, 0, 0);
    let n = Command::new(&empty).output().expect("native run");
    let o = lwk(&[&empty]);
    assert_no_vmm_failure(&o);
    assert_eq!(
        (o.status.code(), &o.stdout),
        (n.status.code(), &n.stdout),
        "{}",
        show(&o)
    );
}

#[test]
fn issue_16_a_pt_interp_linux_refuses_is_refused() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "elfinterp");
    let prog = build_c(d.path(), "hellomsg", &["-O1"]);
    let mut b = std::fs::read(&prog).expect("reading the program");
    let at = find(&b, PT_INTERP).expect("a dynamic program has a PT_INTERP");
    let off = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap_or_default()) as usize;
    let len = u64::from_le_bytes(b[at + 32..at + 40].try_into().unwrap_or_default()) as usize;
    // The path's NUL replaced: Linux refuses it (ENOEXEC); it ran ld.so with the last byte cut.
    b[off + len - 1] = b'X';
    let o = lwk(&[&write_exec(d.path(), "nonul", &b)]);
    assert_no_vmm_failure(&o);
    assert_eq!(o.status.code(), Some(126), "{}", show(&o));
    // An empty PT_INTERP: the program ran with no interpreter and faulted at address 0.
    b[at + 32..at + 40].copy_from_slice(&0u64.to_le_bytes());
    let o = lwk(&[&write_exec(d.path(), "empty", &b)]);
    assert_no_vmm_failure(&o);
    assert_eq!(o.status.code(), Some(126), "{}", show(&o));
}

#[test]
fn issue_16_arguments_larger_than_the_stack_are_an_error_not_a_panic() {
    require_kvm("issue #16");
    let d = scratch::Scratch::new("multios-issue16", "elfargs");
    let prog = build_c(d.path(), "hellomsg", &["-O1", "-static"]);
    let big = "A".repeat(100_000);
    let mut c = Command::new(RUNNER);
    c.env("LWK_MEM_MIB", "2").arg(&prog);
    for _ in 0..15 {
        c.arg(&big);
    }
    let o = run(c, "in a 2 MiB window");
    assert_no_vmm_failure(&o);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("do not fit its stack"),
        "{}",
        show(&o)
    );
}
