//! KVM objects made from descriptors the VMM moved into its own fd range: kvm-ioctls takes a raw
//! descriptor there (an `unsafe` contract: the new object must be its sole owner), so these take
//! an [`OwnedFd`], which carries that ownership.

use kvm_ioctls::{Kvm, VcpuFd, VmFd};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

/// The KVM system object over `fd`, an open /dev/kvm descriptor.
pub fn kvm_from(fd: OwnedFd) -> Kvm {
    // SAFETY: `fd` is owned (OwnedFd) and handed over: Kvm becomes its only owner.
    unsafe { Kvm::from_raw_fd(fd.into_raw_fd()) }
}

/// The VM object over `fd`, a descriptor of a VM that `kvm` created (a duplicate, say).
pub fn vm_from(kvm: &Kvm, fd: OwnedFd) -> Result<VmFd, kvm_ioctls::Error> {
    // SAFETY: `fd` is owned (OwnedFd) and handed over: the VmFd becomes its only owner.
    unsafe { kvm.create_vmfd_from_rawfd(fd.into_raw_fd()) }
}

/// The vCPU object over `fd`, a descriptor of a vCPU of `vm` (a duplicate, say).
pub fn vcpu_from(vm: &VmFd, fd: OwnedFd) -> Result<VcpuFd, kvm_ioctls::Error> {
    // SAFETY: `fd` is owned (OwnedFd) and handed over: the VcpuFd becomes its only owner.
    unsafe { vm.create_vcpu_from_rawfd(fd.into_raw_fd()) }
}

/// Loads an XSAVE image (from a signal frame) into the vCPU.
pub fn set_xsave(vcpu: &VcpuFd, xsave: &kvm_bindings::kvm_xsave) -> Result<(), kvm_ioctls::Error> {
    // SAFETY: `xsave` is a whole kvm_xsave (4096 bytes), obtained from KVM_GET_XSAVE on a vCPU of
    // this VMM (the same CPUID and XCR0: a forked parent's, a cloning thread's, this one's)
    // with at most the first `xsave_size()` bytes replaced; that size comes from CPUID for
    // the XCR0 features this VMM sets, so the kernel reads nothing beyond the struct.
    unsafe { vcpu.set_xsave(xsave) }
}

/// KVM_SET_USER_MEMORY_REGION (_IOW(0xAE, 0x46, struct kvm_userspace_memory_region)).
const KVM_SET_USER_MEMORY_REGION: libc::c_ulong = 0x4020_ae46;

/// Sets one-page memslot `slot` of VM `vm_fd` at guest-physical `gpa`, backed by host page `host`
/// (creating it, or moving it when it exists elsewhere: a move makes this KVM drop every shadow
/// page table it built, like a deletion).
pub fn place_scratch_slot(vm_fd: i32, slot: u32, gpa: u64, host: u64) -> Result<(), std::io::Error> {
    set_memslot(vm_fd, slot, gpa, 4096, host)
}

/// Sets memslot `slot` of VM `vm_fd`: `len` bytes at guest-physical `gpa`, backed by the host
/// range at `host` (guest memory the VMM keeps mapped for the VM's lifetime). Setting a memslot
/// to what it already is does nothing.
pub fn set_memslot(vm_fd: i32, slot: u32, gpa: u64, len: u64, host: u64) -> Result<(), std::io::Error> {
    let region = kvm_bindings::kvm_userspace_memory_region {
        slot,
        flags: 0,
        guest_phys_addr: gpa,
        memory_size: len,
        userspace_addr: host,
    };
    // SAFETY: the ioctl reads `region`, a live local; `[host, host+len)` is guest memory the VMM
    // owns for the VM's lifetime.
    let r = unsafe { libc::ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// KVM_GET_STATS_FD (_IO(0xAE, 0xce)): a descriptor of the binary statistics of the VM or vCPU
/// `fd` (Linux ≥ 5.14), moved to `floor` or above like the VMM's other descriptors.
pub fn stats_fd(fd: i32, floor: i32) -> std::io::Result<OwnedFd> {
    let _low = super::low_fds();
    // SAFETY: the ioctl takes no argument and only creates a new descriptor (or fails).
    let low = unsafe { libc::ioctl(fd, 0xAECE as libc::c_ulong, 0) };
    if low < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let high = super::dup_high(low, floor);
    super::close(low);
    high
}
