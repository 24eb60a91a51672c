use kvm_ioctls::{Kvm, VcpuExit};
use multios_lwk::{memory::*, stub, vcpu};
use std::sync::atomic::{AtomicU32, Ordering};
fn main() {
    let kvm = Kvm::new().unwrap();
    let vm = kvm.create_vm().unwrap();
    let mem = GuestMemory::new(64 << 20).unwrap();
    let regions = [(&mem.sys, 0u32), (&mem.stubs, 1), (&mem.app, 2)];
    for (r, slot) in regions {
        let m = kvm_bindings::kvm_userspace_memory_region {
            slot,
            flags: 0,
            guest_phys_addr: r.base,
            memory_size: r.len,
            userspace_addr: r.base,
        };
        unsafe { vm.set_user_memory_region(m) }.unwrap();
    }
    stub::write_tables(&mem);
    let cpuid = kvm
        .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
        .unwrap();
    // code: getpid; mov rax->rdi; write to 0x500000 a byte; exit
    let code: &[u8] = &[
        0xb8, 39, 0, 0, 0, 0x0f, 0x05, // mov $39,%eax; syscall
        0x48, 0x89, 0xc7, // mov %rax,%rdi
        0xb8, 60, 0, 0, 0, 0x0f, 0x05, // exit
        0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0, // mov 0, %rax (fault)
    ];
    mem.write(APP_BASE, code);
    let mut v = vcpu::create(
        &vm,
        &mem,
        &cpuid,
        0,
        vcpu::Entry {
            rip: APP_BASE + 17,
            rsp: APP_BASE + (32 << 20),
            ..Default::default()
        },
        1,
        1000,
    )
    .unwrap();
    let slot = stub::slot_addr(0);
    let state = unsafe { &*(slot as *const AtomicU32) };
    let t0 = std::time::Instant::now();
    loop {
        let e = v.run();
        match e {
            Ok(VcpuExit::MmioWrite(a, d)) => {
                let nr = mem.read_u64(slot + 8);
                let a0 = mem.read_u64(slot + 16);
                println!(
                    "doorbell {a:#x} {d:?} nr={nr} a0={a0} state={} t={:?}",
                    state.load(Ordering::SeqCst),
                    t0.elapsed()
                );
                if nr == 60 {
                    println!("exit {a0}");
                }
                let r = if nr == 39 { 4242 } else { 0 };
                mem.write_u64(slot + 64, r);
                state.store(3, Ordering::SeqCst);
                if nr == 60 {
                    let s = v.get_sregs().unwrap();
                    println!("cs={:?}", s.cs);
                    let r = v.get_regs().unwrap();
                    println!("rip={:#x}", r.rip);
                    break;
                }
            }
            Ok(VcpuExit::Hlt) => {
                let r = v.get_regs().unwrap();
                let s = v.get_sregs().unwrap();
                println!(
                    "hlt rsp={:#x} frame={:x?} cr2={:#x}",
                    r.rsp,
                    (0..7).map(|k| mem.read_u64(r.rsp + 8 * k)).collect::<Vec<_>>(),
                    s.cr2
                );
                break;
            }
            Ok(other) => {
                println!("exit {:?}", other);
                let r = v.get_regs().unwrap();
                println!("{:x?}", r);
                break;
            }
            Err(e) => {
                println!("err {e}");
                break;
            }
        }
    }
}
