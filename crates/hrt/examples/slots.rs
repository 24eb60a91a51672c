use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::Kvm;
use std::time::Instant;
fn main() {
    let kvm = Kvm::new().unwrap();
    println!("nr_memslots {}", kvm.get_nr_memslots());
    let vm = kvm.create_vm().unwrap();
    let cpuid = kvm.get_supported_cpuid(80).unwrap();
    for e in cpuid.as_slice() { if e.function == 0x8000_0008 { println!("maxphyaddr {}", e.eax & 0xff); } }
    let mut slot = 0;
    for sz_gib in [2u64, 32, 256, 1024, 4096] {
        let size = sz_gib << 20;
        let base = 0x1000_0000_0000u64; // unmapped host range
        let r = kvm_userspace_memory_region { slot, flags: 0, guest_phys_addr: base, memory_size: size, userspace_addr: base };
        let t = Instant::now();
        let res = unsafe { vm.set_user_memory_region(r) };
        let add = t.elapsed();
        let r0 = kvm_userspace_memory_region { memory_size: 0, ..r };
        let t = Instant::now();
        let res2 = if res.is_ok() { unsafe { vm.set_user_memory_region(r0) } } else { Ok(()) };
        println!("slot {sz_gib} MiB: add {res:?} {add:?}, delete {res2:?} {:?}", t.elapsed());
        slot += 1;
    }
    // many 1 GiB slots
    let t = Instant::now();
    let mut n = 0;
    for k in 0..200u64 {
        let base = 0x2000_0000_0000u64 + (k << 30);
        let r = kvm_userspace_memory_region { slot: 100 + k as u32, flags: 0, guest_phys_addr: base, memory_size: 1 << 30, userspace_addr: base };
        if unsafe { vm.set_user_memory_region(r) }.is_err() { println!("fail at {k}"); break; }
        n += 1;
    }
    println!("{n} 1-GiB slots in {:?} ({:?} each)", t.elapsed(), t.elapsed() / n);
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    for l in s.lines() { if l.starts_with("VmRSS") || l.starts_with("VmPTE") { println!("{l}"); } }
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    for l in m.lines() { if l.starts_with("VmallocUsed") || l.starts_with("MemFree") { println!("{l}"); } }
}
