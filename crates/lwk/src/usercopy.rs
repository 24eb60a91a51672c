//! Copies between the VMM and guest memory that survive a host fault (issue #16), as Linux's
//! copy_to_user/copy_from_user survive one through their exception table.
//!
//! Guest memory is the VMM's own memory at the same addresses, so the VMM writes a system call's
//! result with a plain store. The page tables say what the *guest* may do there
//! ([`crate::memory::GuestMemory::user_can`]), but the host page may refuse the VMM too: a
//! MAP_SHARED mapping of a file opened read-only is read-only on the host, a file page past the
//! end of its file raises SIGBUS, and a mapping can change between a check and the copy (another
//! vCPU's munmap or mprotect). A plain store there killed the VMM with SIGSEGV. [`copy`] is a
//! small routine in assembly whose every access lies between two labels; the VMM's handler of
//! SIGSEGV and SIGBUS (`signal/host.rs`, installed before the guest runs) asks [`recover`]
//! whether the fault happened there and, if so, resumes at the routine's fixup, which returns
//! failure. No system call per copy: a compare of the faulting address when a fault happens.

use std::arch::global_asm;

// multios_lwk_copy(dst: rdi, src: rsi, len: rdx) -> eax: 0 copied, 1 faulted.
// Every load and store lies in [multios_lwk_copy, multios_lwk_copy_end).
global_asm!(
    ".pushsection .text.multios_lwk_copy,\"ax\",@progbits",
    ".p2align 4",
    ".globl multios_lwk_copy",
    ".hidden multios_lwk_copy",
    "multios_lwk_copy:",
    "    mov rcx, rdx",
    "    cmp rcx, 256",
    "    jb 2f",
    "    rep movsb",
    "    xor eax, eax",
    "    ret",
    "2:",
    "    cmp rcx, 8",
    "    jb 4f",
    "3:",
    "    mov rax, qword ptr [rsi]",
    "    mov qword ptr [rdi], rax",
    "    add rsi, 8",
    "    add rdi, 8",
    "    sub rcx, 8",
    "    cmp rcx, 8",
    "    jae 3b",
    "4:",
    "    test rcx, rcx",
    "    jz 6f",
    "5:",
    "    mov al, byte ptr [rsi]",
    "    mov byte ptr [rdi], al",
    "    inc rsi",
    "    inc rdi",
    "    dec rcx",
    "    jnz 5b",
    "6:",
    "    xor eax, eax",
    "    ret",
    ".globl multios_lwk_copy_end",
    ".hidden multios_lwk_copy_end",
    "multios_lwk_copy_end:",
    ".globl multios_lwk_copy_fixup",
    ".hidden multios_lwk_copy_fixup",
    "multios_lwk_copy_fixup:",
    "    mov eax, 1",
    "    ret",
    ".popsection",
);

extern "C" {
    fn multios_lwk_copy(dst: *mut u8, src: *const u8, len: usize) -> u32;
    fn multios_lwk_copy_end();
    fn multios_lwk_copy_fixup();
}

/// Copies `len` bytes from `src` to `dst`; false when an access faulted on the host (SIGSEGV or
/// SIGBUS, once the VMM's fault handler is installed; before, the fault kills as a plain copy
/// would). Bytes before the fault may have been copied.
///
/// # Safety
/// `src` and `dst` must not overlap, and neither may be memory a Rust reference points into (or
/// the VMM's own data): only guest memory, which the VMM never borrows, and buffers the caller
/// owns may be named. A fault is tolerated; writing where the caller may not is not.
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> bool {
    if len == 0 {
        return true;
    }
    // SAFETY: per the caller's contract; the routine touches exactly [src, src+len) and
    // [dst, dst+len), uses only the caller-saved registers rax, rcx, rsi, rdi and the flags
    // (the C ABI), and a fault inside it returns 1 through the handler's fixup.
    unsafe { multios_lwk_copy(dst, src, len) == 0 }
}

/// Called by the VMM's SIGSEGV/SIGBUS handler for a fault the kernel raised: when it happened in
/// [`copy`], moves the interrupted context to the routine's fixup (which returns failure) and
/// returns true; false for any other fault, which stays the VMM's.
///
/// # Safety
/// `uc` must be the `ucontext_t` the kernel passed to the signal handler (or null).
pub unsafe fn recover(uc: *mut libc::c_void) -> bool {
    // SAFETY: per the contract, `uc` is null or the handler's valid, exclusively ours context.
    let Some(uc) = (unsafe { uc.cast::<libc::ucontext_t>().as_mut() }) else {
        return false;
    };
    let rip = &mut uc.uc_mcontext.gregs[libc::REG_RIP as usize];
    let (start, end) = (
        multios_lwk_copy as *const () as usize as i64,
        multios_lwk_copy_end as *const () as usize as i64,
    );
    if (start..end).contains(rip) {
        *rip = multios_lwk_copy_fixup as *const () as usize as i64;
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_exactly() {
        let src: Vec<u8> = (0..700u32).map(|k| (k * 7 + 3) as u8).collect();
        for len in [0usize, 1, 7, 8, 9, 15, 16, 255, 256, 257, 699] {
            for off in [0usize, 1, 3] {
                let mut dst = vec![0xeeu8; 710];
                // SAFETY: two distinct buffers we own, in bounds.
                assert!(unsafe { copy(dst.as_mut_ptr().add(off), src.as_ptr(), len) });
                assert_eq!(&dst[off..off + len], &src[..len], "len {len} off {off}");
                assert!(dst[..off].iter().all(|&b| b == 0xee));
                assert!(dst[off + len..].iter().all(|&b| b == 0xee), "len {len} off {off}");
            }
        }
    }

    #[test]
    fn a_fault_in_the_copy_is_a_failure_not_a_crash() {
        crate::signal::host::catch_sent_faults();
        // SAFETY: a fresh anonymous mapping of two pages we own; made read-only, then the second
        // page PROT_NONE; unmapped at the end.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            ) as *mut u8;
            assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
            p.write(42);
            assert_eq!(libc::mprotect(p.cast(), 4096, libc::PROT_READ), 0);
            assert_eq!(libc::mprotect(p.add(4096).cast(), 4096, libc::PROT_NONE), 0);
            let data = [1u8; 300];
            for len in [1usize, 8, 300] {
                assert!(
                    !copy(p, data.as_ptr(), len),
                    "write of {len} into a read-only page"
                );
            }
            assert_eq!(p.read(), 42, "the read-only page is unchanged");
            let mut buf = [0u8; 300];
            for len in [1usize, 8, 300] {
                assert!(
                    !copy(buf.as_mut_ptr(), p.add(4096), len),
                    "read of {len} of PROT_NONE"
                );
            }
            // Straddling: the readable bytes before the fault are copied, then failure.
            assert!(!copy(buf.as_mut_ptr(), p.add(4096 - 4), 8));
            assert_eq!(buf[..4], [0, 0, 0, 0]);
            assert!(copy(buf.as_mut_ptr(), p, 1));
            assert_eq!(buf[0], 42);
            libc::munmap(p.cast(), 8192);
        }
    }
}
