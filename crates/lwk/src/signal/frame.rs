//! The signal frame: what the LWK pushes on the guest's stack to enter a handler, and what
//! rt_sigreturn takes back. The frame is the one Linux builds on x86-64 (`struct rt_sigframe`), so
//! glibc's restorer, a handler that reads `ucontext_t`, and `siglongjmp` out of a handler all work:
//!
//! ```text
//!   original rsp ──▶ ┌─────────────────────────────┐ high
//!                    │ red zone (128 bytes)        │
//!                    ├─────────────────────────────┤
//!                    │ XSAVE area (64-aligned) +   │ fpstate: the vCPU's FPU/SSE/AVX state,
//!                    │ FP_XSTATE_MAGIC2            │ restored by rt_sigreturn
//!                    ├─────────────────────────────┤
//!                    │ siginfo (128)               │ ◀── rsi
//!                    │ ucontext (304): flags, link,│ ◀── rdx
//!                    │   stack, sigcontext (all    │
//!                    │   registers), sigmask       │
//!   handler rsp ──▶  │ pretcode = sa_restorer      │ (rsp + 8) % 16 == 0, as after a call
//!                    └─────────────────────────────┘ low
//! ```
//!
//! Handlers installed with SA_ONSTACK run on the thread's alternate stack (sigaltstack), whose
//! settings the frame's uc_stack carries and rt_sigreturn restores.
//!
//! The handler starts with the FPU in its initial state, as on Linux.

use super::{bit, AltStack, SigInfo, SA_NODEFER, SA_ONSTACK, SA_RESETHAND, SA_RESTORER, UNBLOCKABLE};
use crate::kernel::{lock, Kernel, Reply};
use kvm_bindings::kvm_regs;
use kvm_ioctls::VcpuFd;

/// Frame layout (bytes).
const UC_OFF: u64 = 8;
const MCONTEXT_OFF: u64 = UC_OFF + 40;
const SIGMASK_OFF: u64 = MCONTEXT_OFF + 256;
const INFO_OFF: u64 = SIGMASK_OFF + 8;
const FRAME_SIZE: u64 = INFO_OFF + 128;

/// Position in `struct sigcontext` of each kvm_regs field (in u64 words), in Linux's order:
/// r8–r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags, segments, err, trapno, oldmask,
/// cr2, fpstate, reserved.
const SC_RIP: u64 = 16;
const SC_EFLAGS: u64 = 17;
const SC_SEGS: u64 = 18;
const SC_ERR: u64 = 19;
const SC_TRAPNO: u64 = 20;
const SC_OLDMASK: u64 = 21;
const SC_CR2: u64 = 22;
const SC_FPSTATE: u64 = 23;
const UC_FLAGS: u64 = 0x1 | 0x2 | 0x4; // UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;

/// Flags a handler may change through its ucontext (Linux's FIX_EFLAGS).
const FIX_EFLAGS: u64 = 0x40DD5;

/// DF, TF and RF are cleared for the handler.
const HANDLER_CLEARS: u64 = 0x400 | 0x100 | 0x10000;

/// `xsave` with every component in its initial state: x87 control word 0x37f, MXCSR 0x1f80, all
/// registers zero, XSTATE_BV = 0 (XRSTOR then loads the init values of every component).
pub fn initial_fpu(xsave: &kvm_bindings::kvm_xsave) -> kvm_bindings::kvm_xsave {
    let mut x = kvm_bindings::kvm_xsave {
        region: xsave.region,
        ..Default::default()
    };
    // MXCSR_MASK (bytes 28..32) says what the CPU supports: kept as it is.
    let mxcsr_mask = x.region[7];
    // The legacy area (512 bytes) and the XSAVE header (64) are the first 144 words.
    for w in x.region.iter_mut().take(144) {
        *w = 0;
    }
    x.region[0] = 0x037f; // FCW (low half of the first word); FSW = 0
    x.region[6] = 0x1f80; // MXCSR at byte 24
    x.region[7] = mxcsr_mask;
    x
}

/// The general registers in `struct sigcontext` order.
fn sc_regs(r: &kvm_regs) -> [u64; 16] {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp,
    ]
}

fn set_sc_regs(r: &mut kvm_regs, v: &[u64; 16]) {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax,
        r.rcx, r.rsp,
    ] = *v;
}

impl Kernel {
    pub(crate) fn push_frame(
        &self,
        cpu: usize,
        vcpu: &VcpuFd,
        regs: &kvm_regs,
        sig: u64,
        info: SigInfo,
        act: [u64; 4],
    ) -> Result<(), String> {
        let [handler, flags, restorer, mask] = act;
        if flags & SA_RESTORER == 0 || restorer == 0 {
            return Err("the handler has no SA_RESTORER (glibc and musl always set one)".into());
        }
        let xsave = vcpu.get_xsave().map_err(|e| format!("KVM_GET_XSAVE: {e}"))?;
        let xbytes: Vec<u8> = xsave.region.iter().flat_map(|w| w.to_le_bytes()).collect();
        let xlen = crate::sys::xsave_size().min(xbytes.len());
        let mut fp = xbytes[..xlen].to_vec();
        // The software-reserved bytes of the FXSAVE area tell sigreturn (and glibc) the layout.
        fp[464..468].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
        fp[468..472].copy_from_slice(&(xlen as u32 + 4).to_le_bytes());
        fp[472..480].copy_from_slice(&crate::sys::xcr0().to_le_bytes());
        fp[480..484].copy_from_slice(&(xlen as u32).to_le_bytes());
        fp.extend_from_slice(&FP_XSTATE_MAGIC2.to_le_bytes());

        // SA_ONSTACK with an armed alternate stack the thread is not already on: the frame goes
        // at its top (no red zone there); otherwise below the interrupted stack's red zone.
        let alt = lock(&self.threads).get(cpu).and_then(|t| t.sig.altstack);
        let switch = alt.filter(|a| flags & SA_ONSTACK != 0 && !a.contains(regs.rsp));
        let top = match switch {
            Some(a) => a.sp.wrapping_add(a.size),
            None => regs.rsp.wrapping_sub(128),
        };
        let fp_addr = (top.wrapping_sub(fp.len() as u64)) & !63;
        let frame = ((fp_addr.wrapping_sub(FRAME_SIZE)) & !15).wrapping_sub(8);
        if !self.mem.in_app(frame, top.wrapping_sub(frame)) {
            return Err(format!("the stack at {:#x} has no room for a signal frame", top));
        }
        if !self.mem.user_can(frame, top.wrapping_sub(frame), true) {
            // Linux's copy to the user stack faults there too (a stack overflow into a guard).
            return Err(format!(
                "the stack at {top:#x} is not writable (a guard page or an overflow?)"
            ));
        }
        let oldmask = {
            let mut t = lock(&self.threads);
            let t = t.get_mut(cpu);
            t.map_or(0, |t| t.sig.saved_mask.take().unwrap_or(t.sig.mask))
        };
        let mut f = vec![0u8; FRAME_SIZE as usize];
        let put = |f: &mut Vec<u8>, off: u64, v: u64| {
            f[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes())
        };
        put(&mut f, 0, restorer);
        put(&mut f, UC_OFF, UC_FLAGS);
        // uc_stack: the alternate stack as it was, which rt_sigreturn restores (re-arming an
        // SS_AUTODISARM one).
        let uc_stack = AltStack::stack_t(alt, Some(regs.rsp));
        f[(UC_OFF + 16) as usize..(UC_OFF + 40) as usize].copy_from_slice(&uc_stack);
        for (k, v) in sc_regs(regs).iter().enumerate() {
            put(&mut f, MCONTEXT_OFF + 8 * k as u64, *v);
        }
        put(&mut f, MCONTEXT_OFF + 8 * SC_RIP, regs.rip);
        put(&mut f, MCONTEXT_OFF + 8 * SC_EFLAGS, regs.rflags);
        // cs, gs, fs, ss as four u16.
        let segs = u64::from(crate::stub::sel::USER_CS) | (u64::from(crate::stub::sel::USER_DS) << 48);
        put(&mut f, MCONTEXT_OFF + 8 * SC_SEGS, segs);
        put(&mut f, MCONTEXT_OFF + 8 * SC_OLDMASK, oldmask);
        put(&mut f, MCONTEXT_OFF + 8 * SC_FPSTATE, fp_addr);
        put(&mut f, SIGMASK_OFF, oldmask);
        f[INFO_OFF as usize..][..128].copy_from_slice(&info.bytes(sig));
        if let Some(t) = info.trap {
            put(&mut f, MCONTEXT_OFF + 8 * SC_ERR, t.error);
            put(&mut f, MCONTEXT_OFF + 8 * SC_TRAPNO, t.vector);
            put(&mut f, MCONTEXT_OFF + 8 * SC_CR2, t.cr2);
        }
        self.mem.write(fp_addr, &fp);
        self.mem.write(frame, &f);

        // The handler starts with the FPU in its initial state, as on Linux (fpu__clear_user_states):
        // the interrupted code's state is in the frame, for rt_sigreturn.
        crate::sys::kvm::set_xsave(vcpu, &initial_fpu(&xsave)).map_err(|e| format!("KVM_SET_XSAVE: {e}"))?;
        let mut new = *regs;
        new.rip = handler;
        new.rsp = frame;
        new.rdi = sig;
        new.rsi = frame + INFO_OFF;
        new.rdx = frame + UC_OFF;
        new.rax = 0;
        new.rflags &= !HANDLER_CLEARS;
        vcpu.set_regs(&new).map_err(|e| format!("KVM_SET_REGS: {e}"))?;

        let mut block = oldmask | mask;
        if flags & SA_NODEFER == 0 {
            block |= bit(sig);
        }
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.sig.mask = block & !UNBLOCKABLE;
            if switch.is_some_and(|a| a.autodisarm) {
                t.sig.altstack = None;
            }
        }
        if flags & SA_RESETHAND != 0 {
            lock(&self.signals.actions)[sig as usize].raw = [libc::SIG_DFL as u64, 0, 0, 0];
            crate::signal::host::follow(sig as i32, libc::SIG_DFL as u64, 0);
        }
        Ok(())
    }

    fn restore_fpu(&self, vcpu: &VcpuFd, fp: u64) -> Result<(), String> {
        let xlen = crate::sys::xsave_size().min(4096);
        if !self.mem.user_can(fp, xlen as u64 + 4, false) {
            return Err(format!("its FPU state at {fp:#x} is outside guest memory"));
        }
        let mut bytes = vec![0u8; xlen];
        self.mem.read(fp, &mut bytes);
        if bytes[464..468] != FP_XSTATE_MAGIC1.to_le_bytes() {
            return Err("its FPU state lacks FP_XSTATE_MAGIC1".into());
        }
        let mut xsave = vcpu.get_xsave().map_err(|e| format!("KVM_GET_XSAVE: {e}"))?;
        for (k, w) in xsave.region.iter_mut().enumerate().take(xlen / 4) {
            *w = u32::from_le_bytes([bytes[4 * k], bytes[4 * k + 1], bytes[4 * k + 2], bytes[4 * k + 3]]);
        }
        crate::sys::kvm::set_xsave(vcpu, &xsave).map_err(|e| format!("KVM_SET_XSAVE: {e}"))
    }

    /// rt_sigreturn from vCPU `cpu`: `rsp` at the call points at the ucontext of the frame (the
    /// handler's `ret` popped the restorer's address). Restores the registers, the FPU state and
    /// the signal mask.
    pub(crate) fn sigreturn(&self, cpu: usize, vcpu: &VcpuFd, rsp: u64) -> Reply {
        let uc = rsp;
        if !self.mem.user_can(uc, FRAME_SIZE - UC_OFF, false) {
            return self.bad_sigreturn(format!("its frame at {uc:#x} is outside guest memory"));
        }
        let Ok(mut regs) = vcpu.get_regs() else {
            return self.bad_sigreturn("KVM_GET_REGS failed".into());
        };
        let mc = uc + (MCONTEXT_OFF - UC_OFF);
        let word = |k: u64| self.mem.read_u64(mc + 8 * k);
        let mut gpr = [0u64; 16];
        for (k, v) in gpr.iter_mut().enumerate() {
            *v = word(k as u64);
        }
        set_sc_regs(&mut regs, &gpr);
        regs.rip = word(SC_RIP);
        regs.rflags = (regs.rflags & !FIX_EFLAGS) | (word(SC_EFLAGS) & FIX_EFLAGS);
        let fp = word(SC_FPSTATE);
        if fp != 0 {
            if let Err(why) = self.restore_fpu(vcpu, fp) {
                return self.bad_sigreturn(why);
            }
        }
        let mask = self.mem.read_u64(uc + (SIGMASK_OFF - UC_OFF));
        let mut ss = [0u8; 24];
        self.mem.read(uc + 16, &mut ss);
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.sig.mask = mask & !UNBLOCKABLE;
            // Like Linux's restore_altstack: a bad uc_stack is ignored.
            if let Ok(alt) = AltStack::parse(&ss) {
                t.sig.altstack = alt;
            }
        }
        match vcpu.set_regs(&regs) {
            Ok(()) => Reply::Resumed,
            Err(e) => self.bad_sigreturn(format!("KVM_SET_REGS: {e}")),
        }
    }

    fn bad_sigreturn(&self, why: String) -> Reply {
        self.end_with_sigsegv(format!("rt_sigreturn: {why}"));
        Reply::Stop
    }
}
