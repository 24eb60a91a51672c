//! multios-lwk: a lightweight kernel in the VMM (issue #5).
//!
//! An unmodified Linux program runs in a KVM guest in ring 3, at native speed. The guest holds
//! no kernel: only a ring-3 LSTAR stub that posts each system call to a per-vCPU shared-memory
//! slot ([`multios_lwk_abi`]) served by a proxy thread in this process. Memory management and
//! process bookkeeping are served by the VMM itself ("LWK in the VMM"); everything else is
//! delegated to Linux after its pointers have been checked against the guest's memory. Guest
//! memory is one address space with the VMM (guest-physical == host-virtual), so delegated
//! pointers need no translation. See docs/LWK.md.

pub mod aside;
pub mod atmap;
pub mod bench;
pub mod config;
pub mod costs;
pub mod cputime;
pub mod faultwatch;
pub mod fc;
pub mod fds;
pub mod guestcpu;
pub mod idlespin;
pub(crate) mod iouring;
pub mod kernel;
pub mod loader;
pub mod local;
pub mod machine;
pub mod memlimit;
pub mod memory;
pub mod mm;
pub mod next;
pub mod outcome;
pub mod overrides;
pub mod pack;
pub mod pagetable;
pub mod partition;
pub mod policy;
pub mod populate;
pub mod procattr;
pub mod procfs;
pub mod procread;
pub mod proxy;
pub mod reserve;
pub mod residency;
pub mod rewrite;
pub mod run;
pub mod shadow;
pub mod signal;
pub mod slot;
pub mod stacklimit;
pub mod stats;
pub mod streams;
pub mod stub;
pub mod sys;
pub mod syscall;
pub mod trace;
pub mod usercopy;
pub mod vcpu;
pub mod vfork;
pub mod vm;
pub mod vmas;
pub mod winslots;

pub use config::{default_partition, Backend, Config, MPI_DAEMONS};
pub use fds::floor as fd_floor;
pub use kernel::ExitStatus;
pub use outcome::{Fault, LwkError, Outcome};
pub use partition::{Partition, PartitionError};
pub use policy::LocalSet;
pub use run::run;
pub use sys::affinity_list as available_cpus;
pub use vm::check_kvm;
