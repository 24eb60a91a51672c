//! The in-situ load's cpuset cgroup: the host toolkit's ([`multios_host::cgroup`]), where the
//! LWK's reserved partition (`multios lwk run --reserve`) lives beside it.

pub use multios_host::cgroup::{CgroupError, Cpuset, Version};
