//! Issue #16 (twenty-fourth session): mseal(2) was ENOSYS in the LWK (the proxy had no layout
//! for it), where Linux seals the range and then refuses munmap, mprotect, mremap and
//! mmap(MAP_FIXED) of it, and the discarding advice of madvise on read-only anonymous memory,
//! with EPERM. The LWK now serves it (`syscall/mseal.rs`), keeping the seals with its memory
//! manager (`Mm::sealed`): a forked child inherits them, exec ends them. `tests/c/mseal.c` checks
//! the arguments, each refused call, brk and shmdt, a fork and an exec, natively and in the LWK
//! (each build, each backend): same output and status. Needs /dev/kvm and gcc: FAILS (never
//! skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, BUILDS, VARIANTS};

#[test]
fn issue_16_mseal() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "mseal");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "mseal", flags);
        for env in VARIANTS {
            let out = assert_same(&prog, &[], env);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("munmap sealed                            Operation not permitted"),
                "{text}"
            );
        }
    }
}
