//! A placement for people who apply it themselves: a taskset script, an mpirun rankfile (ranks in the
//! order the processes appeared) and a cgroup v2 cpuset description (one group per CPU set).

use crate::place::Placement;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `taskset -pc CPU TID` for every node (valid while the recorded threads live; `multios map run`
/// applies a placement to a new run).
pub fn taskset(p: &Placement) -> String {
    let mut s = format!(
        "#!/bin/sh\n# multios map place: {} placement on {}\n",
        p.strategy.name(),
        p.topology
    );
    for n in &p.nodes {
        let _ = writeln!(
            s,
            "taskset -pc {} {}  # {} (process {})",
            n.cpu, n.id, n.comm, n.tgid
        );
    }
    s
}

/// Open MPI rankfile: one rank per process (its first thread's CPU), ranks in the order the processes
/// appear in the graph.
pub fn rankfile(p: &Placement) -> String {
    let mut s = String::new();
    for (rank, n) in p.nodes.iter().filter(|n| n.id == n.tgid).enumerate() {
        let _ = writeln!(s, "rank {rank}=localhost slot={}", n.cpu);
    }
    s
}

/// cgroup v2 cpuset description: for each CPU, the group `multios-map/cpuN` with `cpuset.cpus` and
/// the threads to move into it (`cgroup.threads` of a threaded group).
pub fn cpuset(p: &Placement) -> String {
    let mut by_cpu: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for n in &p.nodes {
        by_cpu.entry(n.cpu).or_default().push(n.id);
    }
    let mut s = String::from(
        "# cgroup v2: mkdir /sys/fs/cgroup/multios-map; echo threaded > cgroup.type in each child\n",
    );
    for (cpu, tids) in by_cpu {
        let list: Vec<String> = tids.iter().map(|t| t.to_string()).collect();
        let _ = writeln!(
            s,
            "multios-map/cpu{cpu}: cpuset.cpus={cpu} threads={}",
            list.join(",")
        );
    }
    s
}
