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
            n.cpu,
            n.id,
            super::visible(&n.comm),
            n.tgid
        );
    }
    s
}

/// Open MPI rankfile: one line per MPI rank with its process's CPUs (`slot=0`, or `slot=0-1` for a
/// free rank, which Linux balances over its package). The ranks are the ones the graph recorded
/// (the launcher's OMPI_COMM_WORLD_RANK / PMIX_RANK / PMI_RANK); a graph without ranks numbers its
/// processes in the order they appear.
pub fn rankfile(p: &Placement) -> String {
    let procs: Vec<_> = p.nodes.iter().filter(|n| n.id == n.tgid).collect();
    let mut ranked: Vec<(u32, &crate::place::Assigned)> =
        procs.iter().filter_map(|n| n.rank.map(|r| (r, *n))).collect();
    if ranked.is_empty() {
        ranked = procs.iter().enumerate().map(|(k, n)| (k as u32, *n)).collect();
    }
    ranked.sort_by_key(|x| x.0);
    let mut s = String::new();
    for (rank, n) in ranked {
        let cpus: Vec<usize> = n.cpus().iter().map(|&c| c as usize).collect();
        let _ = writeln!(
            s,
            "rank {rank}=localhost slot={}",
            multios_host::cpus::format_list(&cpus)
        );
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
