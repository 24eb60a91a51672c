//! Issue #16 (twenty-third session): a program started with signals ignored keeps them ignored
//! across exec, and the guest is such a program. The LWK read the VMM's dispositions when the
//! guest started — after Rust's runtime had set SIGPIPE to SIG_IGN and the VMM had installed its
//! own handlers — and so passed on only the signals it does not use itself: a program started
//! with SIGPIPE ignored was killed by SIGPIPE in the LWK where natively its write returned EPIPE;
//! SIGUSR2, the fault signals and glibc's 32 and 33 came out SIG_DFL. The dispositions are now
//! read before `main` (`signal/inherited.rs`). `tests/c/ignored.c` starts itself with signals
//! ignored, natively and through the LWK; same output and status. Needs /dev/kvm and gcc: FAILS
//! (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{build_c, native, require_kvm, show, BUILDS, RUNNER};
use std::os::unix::process::ExitStatusExt;

#[test]
fn issue_16_inherited_ignores() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "ignored");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "ignored", flags);
        let p = prog.to_str().expect("a UTF-8 scratch path");
        for sigs in [&["13", "1", "12", "11", "32", "33"][..], &["2", "3"], &[]] {
            let mut natively: Vec<&str> = sigs.to_vec();
            natively.extend(["--", p]);
            let mut in_lwk: Vec<&str> = sigs.to_vec();
            in_lwk.extend(["--", RUNNER, p]);
            let (n, l) = (native(&prog, &natively), native(&prog, &in_lwk));
            assert_eq!(
                (n.status.code(), n.status.signal(), &n.stdout),
                (l.status.code(), l.status.signal(), &l.stdout),
                "{sigs:?}\n--- native\n{}\n--- LWK\n{}",
                show(&n),
                show(&l)
            );
        }
    }
}
