//! The KVM VM: /dev/kvm, the VM fd and the memslots (guest-physical == host-virtual).

use crate::memory::GuestMemory;
use crate::sys;
use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::{Kvm, VmFd};
use std::os::fd::AsRawFd;

/// Errors opening KVM or creating the VM.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error(
        "/dev/kvm does not exist: the LWK needs KVM (load kvm_intel/kvm_amd, or run on a host with \
         nested virtualization)"
    )]
    NoKvm,
    #[error("no permission to open /dev/kvm: run as root or add your user to the 'kvm' group")]
    Permission,
    #[error("opening /dev/kvm: {0}")]
    Open(std::io::Error),
    #[error("{what}: {source}")]
    Kvm {
        what: &'static str,
        source: kvm_ioctls::Error,
    },
    #[error("moving the VMM's KVM fds out of the guest's way: {0}")]
    Fd(std::io::Error),
    #[error("KVM_SET_USER_MEMORY_REGION: {0}")]
    Memslot(std::io::Error),
}

/// An open KVM and its VM.
pub struct Vm {
    pub kvm: Kvm,
    pub vm: VmFd,
    /// How long making it took, step by step (`costs.rs`: `lwk run --summary`'s `vm_thread`).
    pub steps: Vec<(&'static str, std::time::Duration)>,
    /// KVM's supported CPUID table, when asked for already ([`Vm::supported_cpuid`]).
    pub cpuid: Option<kvm_bindings::CpuId>,
}

/// Checks that /dev/kvm can be opened, with the errors the CLI and tests print.
pub fn check_kvm() -> Result<(), VmError> {
    open_kvm(3).map(drop)
}

fn open_kvm(fd_floor: i32) -> Result<Kvm, VmError> {
    // /dev/kvm's first fd is a temporary in the guest's range (`sys::low_fds`).
    let _low = sys::low_fds();
    let fd = Kvm::open_with_cloexec(true).map_err(|e| match e.errno() {
        libc::ENOENT | libc::ENXIO | libc::ENODEV => VmError::NoKvm,
        libc::EACCES | libc::EPERM => VmError::Permission,
        n => VmError::Open(std::io::Error::from_raw_os_error(n)),
    })?;
    let high = sys::dup_high(fd, fd_floor).map_err(VmError::Fd)?;
    // `fd` was just opened by us and is owned by nobody else; it is replaced by `high`.
    sys::close(fd);
    Ok(sys::kvm::kvm_from(high))
}

/// A second handle on the open /dev/kvm `kvm`, at or above `fd_floor` (close-on-exec).
fn reuse_kvm(kvm: &Kvm, fd_floor: i32) -> Result<Kvm, VmError> {
    let high = sys::dup_high(kvm.as_raw_fd(), fd_floor).map_err(VmError::Fd)?;
    Ok(sys::kvm::kvm_from(high))
}

impl Vm {
    /// Opens KVM, creates a VM and registers `mem`; every fd lands at or above `fd_floor`.
    pub fn new(mem: &GuestMemory, fd_floor: i32) -> Result<Self, VmError> {
        let t0 = std::time::Instant::now();
        Self::with_kvm(open_kvm(fd_floor)?, mem, fd_floor, t0)
    }

    /// A new VM made through the /dev/kvm descriptor of `self` (a forked child's, issue #16): not
    /// opened again by path, which the guest may have made unreachable since the start (a chroot)
    /// or forbidden (setuid to an unprivileged user). KVM_CREATE_VM acts on the calling process,
    /// so the child's VM is its own even through a descriptor its parent opened.
    pub fn again(&self, mem: &GuestMemory, fd_floor: i32) -> Result<Self, VmError> {
        let t0 = std::time::Instant::now();
        Self::with_kvm(reuse_kvm(&self.kvm, fd_floor)?, mem, fd_floor, t0)
    }

    /// The VM of `kvm` over `mem`; the first step's time counts from `t0` (opening /dev/kvm).
    fn with_kvm(kvm: Kvm, mem: &GuestMemory, fd_floor: i32, t0: std::time::Instant) -> Result<Self, VmError> {
        let mut t = t0;
        let mut steps = Vec::new();
        let mut mark = |name: &'static str| {
            steps.push((name, t.elapsed()));
            t = std::time::Instant::now();
        };
        let low_fds = sys::low_fds();
        let low = kvm.create_vm().map_err(|source| VmError::Kvm {
            what: "KVM_CREATE_VM",
            source,
        })?;
        // `high` duplicates the VM fd just created; the new VmFd owns it, the old one is dropped
        // (closing the low fd).
        let high = sys::dup_high(low.as_raw_fd(), fd_floor).map_err(VmError::Fd)?;
        let vm = sys::kvm::vm_from(&kvm, high).map_err(|source| VmError::Kvm {
            what: "KVM_CREATE_VM",
            source,
        })?;
        drop(low);
        drop(low_fds);
        mark("open /dev/kvm, create the VM");
        // A memslot over the LWK's system and stub pages (contiguous host ranges), one over the
        // window's page tables (issue #14), and those of the thunk page and the window that are
        // used so far (`winslots.rs`: the others are made when first used, issue #13).
        let slots = [
            (0, mem.sys.base, mem.stubs.end()),
            (2, mem.pt_pool.base, mem.pt_pool.end()),
        ];
        debug_assert!(mem.sys.end() == mem.stubs.base && mem.thunks.end() == mem.app.base);
        for (slot, start, end) in slots {
            let region = kvm_userspace_memory_region {
                slot,
                flags: 0,
                guest_phys_addr: start,
                memory_size: end - start,
                userspace_addr: start,
            };
            // SAFETY: the host range is covered by live mappings owned by `mem`, which outlives the
            // VM (the caller keeps it in an Arc next to the Vm and drops the Vm first).
            unsafe { vm.set_user_memory_region(region) }.map_err(|source| VmError::Kvm {
                what: "KVM_SET_USER_MEMORY_REGION",
                source,
            })?;
            mark(if slot == 0 {
                "memslot: LWK pages"
            } else {
                "memslot: page-table pool"
            });
        }
        mem.slots.attach(vm.as_raw_fd()).map_err(VmError::Memslot)?;
        mark("memslots: window used so far");
        Ok(Vm {
            kvm,
            vm,
            steps,
            cpuid: None,
        })
    }
}

impl Vm {
    /// Asks KVM for the CPUID table the vCPUs get (KVM_GET_SUPPORTED_CPUID, ≈ 0.3 ms here) and
    /// keeps it in `cpuid`; a failure is left for the caller to report when it needs the table.
    pub fn supported_cpuid(&mut self) {
        let t = std::time::Instant::now();
        self.cpuid = self
            .kvm
            .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
            .ok();
        self.steps.push(("KVM_GET_SUPPORTED_CPUID", t.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_errors_say_what_to_do() {
        assert!(VmError::NoKvm.to_string().contains("/dev/kvm does not exist"));
        assert!(VmError::Permission
            .to_string()
            .contains("add your user to the 'kvm' group"));
    }
}
