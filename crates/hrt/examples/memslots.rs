//! What this KVM accepts and costs in memslots (docs/MULTIVERSE.md, "Measured"): the slot count,
//! the guest's physical address width, the time to add and delete one slot of each size over
//! unmapped host memory (guest-physical == host-virtual), and the kernel memory 200 slots of 1 GiB
//! take. `cargo run --release -p multios-hrt --example memslots`

use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::{Kvm, VmFd};
use std::time::{Duration, Instant};

fn set(vm: &VmFd, slot: u32, base: u64, size: u64) -> Result<Duration, kvm_ioctls::Error> {
    let r = kvm_userspace_memory_region {
        slot,
        flags: 0,
        guest_phys_addr: base,
        memory_size: size,
        userspace_addr: base,
    };
    let t = Instant::now();
    // SAFETY: the VM never runs: no vCPU exists, so KVM never touches the (unmapped) host range.
    unsafe { vm.set_user_memory_region(r) }?;
    Ok(t.elapsed())
}

fn vmalloc_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("VmallocUsed"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kvm = Kvm::new()?;
    println!("KVM_CAP_NR_MEMSLOTS: {}", kvm.get_nr_memslots());
    let vm = kvm.create_vm()?;
    let cpuid = kvm.get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)?;
    if let Some(e) = cpuid.as_slice().iter().find(|e| e.function == 0x8000_0008) {
        println!("guest physical address bits: {}", e.eax & 0xff);
    }
    let base = 0x1000_0000_0000u64;
    for (slot, mib) in [2u64, 32, 64, 256, 1024, 4096, 65536].into_iter().enumerate() {
        let add = set(&vm, slot as u32, base, mib << 20)?;
        let del = set(&vm, slot as u32, base, 0)?;
        println!("{mib:>6} MiB slot: add {add:>12.1?}, delete {del:>10.1?}");
    }
    match set(&vm, 99, 0x7fff_fc00_0000, 64 << 20) {
        Ok(_) => println!("a slot over the last page of the user half: accepted"),
        Err(e) => println!("a slot over the last page of the user half: {e}"),
    }
    let before = vmalloc_kib();
    let t = Instant::now();
    for k in 0..200u64 {
        set(&vm, 100 + k as u32, 0x2000_0000_0000 + (k << 30), 1 << 30)?;
    }
    println!(
        "200 slots of 1 GiB: {:.1?} each, {} MiB of vmalloc",
        t.elapsed() / 200,
        vmalloc_kib().saturating_sub(before) >> 10
    );
    Ok(())
}
