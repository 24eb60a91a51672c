//! One vCPU: long mode set up entirely through KVM_SET_SREGS/MSRS, starting directly in ring 3
//! (no guest kernel: ring-0 code is emulated on this KVM, so none runs on the normal path).

use crate::memory::{sys_page, GuestMemory, SYS_BASE};
use crate::stub::{self, sel};
use crate::sys;
use kvm_bindings::{kvm_fpu, kvm_msr_entry, kvm_regs, kvm_segment, kvm_xcrs, CpuId, Msrs};
use kvm_ioctls::{VcpuFd, VmFd};

const MSR_EFER: u32 = 0xc000_0080;
const MSR_STAR: u32 = 0xc000_0081;
const MSR_LSTAR: u32 = 0xc000_0082;
const MSR_CSTAR: u32 = 0xc000_0083;
const MSR_SFMASK: u32 = 0xc000_0084;
const MSR_KERNEL_GS_BASE: u32 = 0xc000_0102;

const EFER_SCE: u64 = 1;
const EFER_LME: u64 = 1 << 8;
const EFER_LMA: u64 = 1 << 10;
/// No-execute pages (issue #14: PROT_EXEC is enforced).
const EFER_NXE: u64 = 1 << 11;
const CR0_PE: u64 = 1;
const CR0_MP: u64 = 1 << 1;
const CR0_ET: u64 = 1 << 4;
const CR0_NE: u64 = 1 << 5;
const CR0_WP: u64 = 1 << 16;
const CR0_PG: u64 = 1 << 31;
const CR4_PAE: u64 = 1 << 5;
const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
const CR4_FSGSBASE: u64 = 1 << 16;
const CR4_OSXSAVE: u64 = 1 << 18;

/// Errors while configuring a vCPU.
#[derive(Debug, thiserror::Error)]
pub enum VcpuError {
    #[error("KVM_CREATE_VCPU {id}: {source}")]
    Create { id: u64, source: kvm_ioctls::Error },
    #[error("configuring vCPU {id} ({what}): {source}")]
    Setup {
        id: u64,
        what: &'static str,
        source: kvm_ioctls::Error,
    },
    #[error("moving the vCPU fd out of the guest's way: {0}")]
    Fd(std::io::Error),
}

/// The initial user state of a thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Entry {
    pub rip: u64,
    pub rsp: u64,
    pub fs_base: u64,
    /// Value of rax at entry (0 for a new process and for a clone child).
    pub rax: u64,
    /// All general registers (a clone child starts with its parent's); overrides the above.
    pub regs: Option<kvm_regs>,
}

/// Creates vCPU `id` with its stub, TSS, CPUID, MSRs and ring-3 registers.
pub fn create(
    vm: &VmFd,
    mem: &GuestMemory,
    cpuid: &CpuId,
    id: u64,
    entry: Entry,
    spin_budget: u32,
    fd_floor: i32,
) -> Result<VcpuFd, VcpuError> {
    // The new vCPU's first fd is a temporary in the guest's range (`sys::low_fds`).
    let low_fds = sys::low_fds();
    let low = vm
        .create_vcpu(id)
        .map_err(|source| VcpuError::Create { id, source })?;
    sys::widen_fd_race_for_tests();
    // `high` is a fresh duplicate of a vCPU fd of this VM that nothing else owns; the new VcpuFd
    // takes ownership and `low` (and its fd) is dropped right after.
    let high = {
        use std::os::fd::AsRawFd;
        sys::dup_high(low.as_raw_fd(), fd_floor).map_err(VcpuError::Fd)?
    };
    let vcpu = sys::kvm::vcpu_from(vm, high).map_err(|source| VcpuError::Create { id, source })?;
    drop(low);
    drop(low_fds);
    vcpu.set_cpuid2(cpuid).map_err(|source| VcpuError::Setup {
        id,
        what: "KVM_SET_CPUID2",
        source,
    })?;
    reuse(&vcpu, mem, id, entry, spin_budget)?;
    Ok(vcpu)
}

/// Writes vCPU `id`'s stub and TSS and puts the vCPU in ring 3 at `entry`, with fresh segment,
/// MSR and FPU state: for a new vCPU, and for the vCPU of a thread that exited given to a new
/// thread (KVM cannot destroy a vCPU, so the LWK keeps the fds of exited threads and sets them up
/// again: vCPU ids are not used up by threads that come and go; the caller has completed the
/// vCPU's last MMIO exit).
pub fn reuse(
    vcpu: &VcpuFd,
    mem: &GuestMemory,
    id: u64,
    entry: Entry,
    spin_budget: u32,
) -> Result<(), VcpuError> {
    let err = |what| move |source| VcpuError::Setup { id, what, source };
    stub::write_stub(mem, id, spin_budget);
    let tss = stub::write_tss(mem, id);

    let mut sregs = vcpu.get_sregs().map_err(err("KVM_GET_SREGS"))?;
    let (code, data) = (user_code(), user_data());
    sregs.cs = code;
    sregs.ds = data;
    sregs.es = data;
    sregs.ss = data;
    sregs.fs = kvm_segment {
        base: entry.fs_base,
        ..data
    };
    // GS base = this vCPU's stub: rewritten syscall sites find their stub with rdgsbase.
    sregs.gs = kvm_segment {
        base: stub::stub_addr(id),
        ..data
    };
    sregs.tr = kvm_segment {
        base: tss,
        limit: 103,
        selector: sel::TSS,
        type_: 0xb,
        present: 1,
        dpl: 0,
        db: 0,
        s: 0,
        l: 0,
        g: 0,
        ..Default::default()
    };
    sregs.ldt = kvm_segment {
        selector: 0,
        type_: 2,
        present: 1,
        unusable: 1,
        ..Default::default()
    };
    sregs.gdt.base = SYS_BASE + sys_page::GDT;
    sregs.gdt.limit = 0x38 - 1;
    sregs.idt.base = SYS_BASE + sys_page::IDT;
    sregs.idt.limit = 32 * 16 - 1;
    sregs.cr3 = mem.cr3();
    sregs.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_FSGSBASE | CR4_OSXSAVE;
    sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
    sregs.efer = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
    vcpu.set_sregs(&sregs).map_err(err("KVM_SET_SREGS"))?;

    let msr = |index, data| kvm_msr_entry {
        index,
        data,
        ..Default::default()
    };
    let star = ((sel::KERNEL_DS as u64) << 48) | ((sel::KERNEL_CS as u64) << 32);
    let msrs = Msrs::from_entries(&[
        msr(MSR_EFER, sregs.efer),
        msr(MSR_STAR, star),
        msr(MSR_LSTAR, stub::stub_addr(id)),
        msr(MSR_CSTAR, stub::stub_addr(id)),
        msr(MSR_SFMASK, 0),
        msr(MSR_KERNEL_GS_BASE, 0),
    ])
    .map_err(|_| VcpuError::Setup {
        id,
        what: "MSR list",
        source: kvm_ioctls::Error::new(libc::E2BIG),
    })?;
    vcpu.set_msrs(&msrs).map_err(err("KVM_SET_MSRS"))?;

    let mut xcrs = kvm_xcrs {
        nr_xcrs: 1,
        ..Default::default()
    };
    xcrs.xcrs[0].xcr = 0;
    xcrs.xcrs[0].value = sys::xcr0();
    // Best effort: this KVM lets user code see the host XCR0 anyway.
    let _ = vcpu.set_xcrs(&xcrs);

    let fpu = kvm_fpu {
        fcw: 0x37f,
        mxcsr: 0x1f80,
        ..Default::default()
    };
    vcpu.set_fpu(&fpu).map_err(err("KVM_SET_FPU"))?;

    let regs = entry.regs.unwrap_or(kvm_regs {
        rip: entry.rip,
        rsp: entry.rsp,
        rax: entry.rax,
        rflags: 0x202,
        ..Default::default()
    });
    vcpu.set_regs(&regs).map_err(err("KVM_SET_REGS"))?;
    mem.shadow.created(id as usize);
    Ok(())
}

/// The guest's ring-3 code segment (64-bit, DPL 3).
fn user_code() -> kvm_segment {
    kvm_segment {
        base: 0,
        limit: 0xffff_ffff,
        selector: sel::USER_CS,
        type_: 0xb,
        present: 1,
        dpl: 3,
        db: 0,
        s: 1,
        l: 1,
        g: 1,
        ..Default::default()
    }
}

/// The guest's ring-3 data segment (DPL 3).
fn user_data() -> kvm_segment {
    kvm_segment {
        selector: sel::USER_DS,
        type_: 0x3,
        l: 0,
        db: 1,
        ..user_code()
    }
}

/// Puts a vCPU that stopped in a ring-0 exception reporter back in ring 3 (CS and SS as at start;
/// the caller sets the registers it resumes with). FS and GS keep their bases.
pub fn back_to_ring3(vcpu: &VcpuFd) -> Result<(), kvm_ioctls::Error> {
    let mut sregs = vcpu.get_sregs()?;
    sregs.cs = user_code();
    sregs.ss = user_data();
    vcpu.set_sregs(&sregs)
}
