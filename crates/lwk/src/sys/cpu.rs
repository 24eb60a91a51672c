//! What the CPU supports (CPUID, XCR0).

/// The value of XCR0 on this CPU (the user-visible XSAVE features).
pub fn xcr0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: xgetbv(0) only reads a register; the VMM runs on an x86_64 CPU with OSXSAVE (Linux
    // enables it whenever XSAVE exists, and KVM requires it).
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    ((hi as u64) << 32) | lo as u64
}

/// Bytes of the XSAVE area for the features enabled in XCR0 (CPUID 0xD, sub-leaf 0, EBX): what a
/// signal frame stores of the FPU/SSE/AVX state.
pub fn xsave_size() -> usize {
    let size = std::arch::x86_64::__cpuid_count(0xd, 0).ebx as usize;
    if size >= 576 {
        size
    } else {
        // Legacy area + XSAVE header: the minimum for any CPU with XSAVE.
        576
    }
}
