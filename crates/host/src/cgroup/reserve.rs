//! A reserved partition of CPUs for the LWK (IHK's `reserve cpu`; `multios lwk run --reserve`,
//! issue #14): for the run, no other task is scheduled on the LWK's CPUs and the scheduler does not
//! balance load onto or off them; everything is put back when the run ends, and a reservation a
//! killed multios left behind is swept at the next start.
//!
//! * **cgroup v2** with the cpuset controller: an *isolated* cpuset partition. The kernel then
//!   takes those CPUs out of every other cgroup's effective CPUs (no other task may run there), out
//!   of the scheduler's load balancing and out of the unbound workqueues. The LWK's vCPU threads
//!   must be inside it while the proxy stays outside, so the VMM process goes into a threaded
//!   subtree of its own, `multios-lwk-reserve-<pid>`, whose threaded child `lwk` is the isolated
//!   partition — a *remote* partition (its parent is not a partition root), for which the
//!   exclusive CPUs are written down the path first (`cpuset.cpus.exclusive`, Linux ≥ 6.7). The
//!   vCPU threads are admitted with `cgroup.threads`; the others stay in the threaded domain, on
//!   the remaining CPUs. The end puts the process back in its cgroup and removes both.
//! * **cgroup v1** (a hybrid system, where cpuset is bound to the v1 hierarchy and cgroup v2 cannot
//!   have it — this machine): the equivalent by hand, as `cset shield` does. An exclusive cpuset
//!   `multios-lwk-reserve-<pid>` holds the LWK's CPUs with `sched_load_balance` off, a second one
//!   (`…-linux`) the other CPUs; the root's `sched_load_balance` is turned off (so the two are
//!   separate scheduling domains and the reserved CPUs are in none), and every task of the root
//!   cpuset — kernel threads that may move included — is moved into `…-linux`. Tasks in other
//!   cpusets and per-CPU kernel threads stay where they are ([`Reservation::still_allowed`]
//!   counts what may still run on the reserved CPUs). A v1 cpuset move sets a task's CPU affinity
//!   to the cpuset's CPUs, so the affinity of every task that had narrowed its own (`taskset`, a
//!   pinned benchmark, another LWK's vCPU) is recorded first and set again after the move back.
//!   The end moves every task back, puts those affinities back, restores the root's balancing
//!   and removes both cpusets.
//!
//! A record of what to restore (`/run/multios/lwk-reserve-<pid>`) lets [`sweep_stale`] undo the
//! reservation of a multios that was killed (SIGKILL) before it could: cpusets whose pid no longer
//! runs are emptied (their tasks moved back to the root) and removed, and the root's balancing put
//! back. Only one reservation exists at a time.

use super::{io, write_file, CgroupError};
use crate::cpus::format_list;
use std::fs;
use std::path::{Path, PathBuf};

/// Errors of a reservation.
#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    #[error("--reserve: {0}")]
    Cgroup(#[from] CgroupError),
    #[error("--reserve needs the cpuset cgroup controller: {0}")]
    NoCpuset(String),
    #[error("--reserve: the LWK's CPUs {cpus} would leave Linux no CPU (the cpuset root has {all}); give the LWK fewer CPUs with --cpus")]
    NoneLeft { cpus: String, all: String },
    #[error("--reserve: CPUs {cpus} are not all in the cpuset root ({all})")]
    NotAvailable { cpus: String, all: String },
    #[error("--reserve: CPUs {cpus} could not be isolated: {why}")]
    NotIsolated { cpus: String, why: String },
    #[error("--reserve: multios pid {pid} holds a reservation ({dir}); one reservation at a time")]
    Busy { pid: i32, dir: String },
}

/// The name of a reservation's cgroups: `multios-lwk-reserve-<pid>` (v1 adds `-linux`).
const PREFIX: &str = "multios-lwk-reserve-";
/// Where the record of what to restore is kept (root only, as the reservation itself).
const RECORDS: &str = "/run/multios";

/// The cpuset hierarchies mounted: the cgroup v2 mount (with its controllers) and the v1 cpuset
/// mount.
#[derive(Debug, Default)]
struct Mounts {
    v2: Option<(PathBuf, String)>,
    v1: Option<PathBuf>,
}

fn mounts() -> Mounts {
    let mut m = Mounts::default();
    for line in fs::read_to_string("/proc/mounts").unwrap_or_default().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let dir = PathBuf::from(f[1]);
        if f[2] == "cgroup2" && m.v2.is_none() {
            let ctl = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            m.v2 = Some((dir, ctl.trim().to_string()));
        } else if f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset") {
            m.v1 = Some(dir);
        }
    }
    m
}

/// Where the reservation is made.
#[derive(Debug, PartialEq, Eq)]
enum Hierarchy {
    V2(PathBuf),
    V1(PathBuf),
}

/// cgroup v2 when it has the cpuset controller, else the v1 cpuset hierarchy; an error that says
/// what is mounted when neither can hold a reservation.
fn choose(m: &Mounts) -> Result<Hierarchy, ReserveError> {
    match (&m.v2, &m.v1) {
        (Some((root, ctl)), _) if ctl.split_whitespace().any(|c| c == "cpuset") => {
            Ok(Hierarchy::V2(root.clone()))
        }
        (_, Some(v1)) => Ok(Hierarchy::V1(v1.clone())),
        (Some((root, ctl)), None) => Err(ReserveError::NoCpuset(format!(
            "cgroup v2 is mounted at {} but its controllers are \"{ctl}\" (no cpuset: enable it with \
             `echo +cpuset > {}/cgroup.subtree_control` where the parent offers it), and no v1 cpuset \
             hierarchy is mounted",
            root.display(),
            root.display()
        ))),
        (None, None) => Err(ReserveError::NoCpuset(
            "neither cgroup v2 nor a v1 cpuset hierarchy is mounted (see /proc/mounts)".into(),
        )),
    }
}

/// True while process `pid` runs (a zombie does not: its reservation may be swept).
fn running(pid: i32) -> bool {
    if !crate::sys::pid_alive(pid) {
        return false;
    }
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.split_whitespace().next());
    state != Some("Z") && state != Some("X")
}

fn read(path: &Path) -> Result<String, CgroupError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(io("cannot read", path))
}

/// The CPUs of a cpuset list ("0-3,6").
fn parse_list(s: &str) -> Vec<usize> {
    crate::CpuSet::parse(s).map(|c| c.to_vec()).unwrap_or_default()
}

/// How the CPUs are held.
#[derive(Debug)]
enum Kind {
    V2 {
        /// The threaded domain holding the VMM process, and its isolated partition.
        dir: PathBuf,
        part: PathBuf,
        /// The cgroup the process was in before (to go back to).
        home: PathBuf,
    },
    V1 {
        root: PathBuf,
        lwk: PathBuf,
        linux: PathBuf,
        /// The root's `cpuset.sched_load_balance` before.
        balance: String,
        /// Tasks that had narrowed their CPU affinity, and to what.
        pinned: Vec<(i32, Vec<usize>)>,
    },
}

/// A live reservation; restored on drop.
#[derive(Debug)]
pub struct Reservation {
    cpus: Vec<usize>,
    kind: Kind,
    /// The file a thread's tid is written to, to run on the reserved CPUs.
    admit: PathBuf,
    record: Option<PathBuf>,
    /// Tasks moved off the reserved CPUs (v1).
    moved: usize,
    done: bool,
}

impl Reservation {
    /// Reserves `cpus` for the calling process's LWK (see the module documentation). A stale
    /// reservation is swept first.
    pub fn isolate(cpus: &[usize]) -> Result<Reservation, ReserveError> {
        sweep_stale();
        let list = format_list(cpus);
        let m = mounts();
        if let Some(busy) = live_reservation(&m) {
            return Err(busy);
        }
        match choose(&m)? {
            Hierarchy::V2(root) => isolate_v2(&root, cpus, &list),
            Hierarchy::V1(root) => isolate_v1(&root, cpus, &list),
        }
    }

    /// Puts thread `tid` (0: the calling thread) of this process on the reserved CPUs.
    pub fn admit(&self, tid: i32) -> Result<(), ReserveError> {
        let tid = if tid == 0 { gettid() } else { tid };
        Ok(write_file(&self.admit, &tid.to_string())?)
    }

    /// The file a tid (or "0": the writer) is written to, to run on the reserved CPUs (for a
    /// child that enters before exec).
    pub fn admit_path(&self) -> &Path {
        &self.admit
    }

    /// The reserved CPUs.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// What the reservation is, in a sentence (for notes and reports).
    pub fn summary(&self) -> String {
        let list = format_list(&self.cpus);
        match &self.kind {
            Kind::V2 { part, .. } => format!(
                "CPUs {list} reserved: cgroup v2 isolated partition {} (no other task, no load balancing, no unbound workqueues)",
                part.display()
            ),
            Kind::V1 { lwk, .. } => format!(
                "CPUs {list} reserved: cgroup v1 exclusive cpuset {} without load balancing; {} tasks moved to the other CPUs",
                lwk.display(),
                self.moved
            ),
        }
    }

    /// Threads of the machine, other than this process's, still allowed to run on a reserved
    /// CPU (per-CPU kernel threads, tasks of other cpusets), with their names.
    pub fn still_allowed(&self) -> Vec<(i32, String)> {
        let own = std::process::id();
        let mut v = Vec::new();
        for pid in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(p) = pid.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if p == own {
                continue;
            }
            for t in fs::read_dir(pid.path().join("task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let status = fs::read_to_string(t.path().join("status")).unwrap_or_default();
                let field = |k: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(k))
                        .map(|v| v.trim().to_string())
                        .unwrap_or_default()
                };
                let allowed = parse_list(&field("Cpus_allowed_list:"));
                if allowed.iter().any(|c| self.cpus.contains(c)) {
                    let tid = t.file_name().to_str().and_then(|n| n.parse().ok()).unwrap_or(0);
                    v.push((tid, field("Name:")));
                }
            }
        }
        v
    }

    /// Gives the CPUs back (idempotent; also done on drop).
    pub fn restore(&mut self) -> Result<(), ReserveError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let r = match &self.kind {
            Kind::V2 { dir, part, home } => restore_v2(dir, part, Some(home)),
            Kind::V1 {
                root,
                lwk,
                linux,
                balance,
                pinned,
            } => restore_v1(root, lwk, linux, balance, pinned),
        };
        if let Some(rec) = &self.record {
            let _ = fs::remove_file(rec);
        }
        r
    }

    /// In a forked child: the parent owns the reservation; this copy must never restore it.
    pub fn disown(mut self) {
        self.done = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("warning: {e}");
        }
    }
}

fn gettid() -> i32 {
    crate::sys::gettid()
}

/// The record of a reservation (what a sweep restores): the root's balancing before and the
/// narrowed affinities (v1).
fn write_record(pid: u32, balance: &str, pinned: &[(i32, Vec<usize>)]) -> Option<PathBuf> {
    let dir = Path::new(RECORDS);
    fs::create_dir_all(dir).ok()?;
    let p = dir.join(format!("lwk-reserve-{pid}"));
    let mut text = format!("sched_load_balance={balance}\n");
    for (tid, cpus) in pinned {
        text.push_str(&format!("affinity {tid} {}\n", format_list(cpus)));
    }
    fs::write(&p, text).ok()?;
    Some(p)
}

/// The root's balancing and the narrowed affinities a record holds.
fn read_record(pid: i32) -> (Option<String>, Vec<(i32, Vec<usize>)>) {
    let text = fs::read_to_string(Path::new(RECORDS).join(format!("lwk-reserve-{pid}"))).unwrap_or_default();
    let balance = text
        .lines()
        .find_map(|l| l.strip_prefix("sched_load_balance="))
        .map(str::to_string);
    let pinned = text
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("affinity ")?.split_whitespace();
            Some((w.next()?.parse().ok()?, parse_list(w.next()?)))
        })
        .collect();
    (balance, pinned)
}

/// The tasks listed in `tasks` (a v1 `tasks` file) whose CPU affinity is narrower than `all`.
fn narrowed(tasks: &Path, all: &[usize]) -> Vec<(i32, Vec<usize>)> {
    fs::read_to_string(tasks)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|t| t.parse::<i32>().ok())
        .filter_map(|tid| {
            let cpus = crate::sys::cpus_of(&crate::sys::get_affinity(tid).ok()?);
            (all.iter().any(|c| !cpus.contains(c))).then_some((tid, cpus))
        })
        .collect()
}

/// Sets the recorded affinities again (tasks that have exited meanwhile are passed over).
fn repin(pinned: &[(i32, Vec<usize>)]) {
    for (tid, cpus) in pinned {
        if let Ok(set) = crate::sys::cpu_set(cpus) {
            let _ = crate::sys::set_affinity(*tid, &set);
        }
    }
}

/// The reservation cgroups under `root` and the pid each belongs to (v1's `-linux` ones too).
fn reservations(root: &Path) -> Vec<(i32, PathBuf)> {
    fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let pid = name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()?;
            Some((pid, e.path()))
        })
        .collect()
}

/// A reservation of a process that still runs (not this one), as the Busy error.
fn live_reservation(m: &Mounts) -> Option<ReserveError> {
    let roots = m.v2.iter().map(|(r, _)| r.clone()).chain(m.v1.clone());
    for root in roots {
        for (pid, dir) in reservations(&root) {
            if running(pid) {
                return Some(ReserveError::Busy {
                    pid,
                    dir: dir.display().to_string(),
                });
            }
        }
    }
    None
}

/// Undoes the reservations of processes that no longer run (a multios killed with SIGKILL);
/// returns what it did, one sentence each.
pub fn sweep_stale() -> Vec<String> {
    let m = mounts();
    let mut done = Vec::new();
    if let Some((root, _)) = &m.v2 {
        for (pid, dir) in reservations(root) {
            if running(pid) {
                continue;
            }
            let r = restore_v2(&dir, &dir.join("lwk"), None);
            done.push(swept(pid, &dir, r));
            let _ = fs::remove_file(Path::new(RECORDS).join(format!("lwk-reserve-{pid}")));
        }
    }
    if let Some(root) = &m.v1 {
        let mut pids: Vec<i32> = reservations(root).into_iter().map(|(p, _)| p).collect();
        pids.dedup();
        for pid in pids {
            if running(pid) {
                continue;
            }
            let lwk = root.join(format!("{PREFIX}{pid}"));
            let linux = root.join(format!("{PREFIX}{pid}-linux"));
            let (balance, pinned) = read_record(pid);
            let balance = balance.unwrap_or_else(|| "1".into());
            let r = restore_v1(root, &lwk, &linux, &balance, &pinned);
            done.push(swept(pid, &lwk, r));
            let _ = fs::remove_file(Path::new(RECORDS).join(format!("lwk-reserve-{pid}")));
        }
    }
    done
}

/// The sentence [`sweep_stale`] reports for one reservation.
fn swept(pid: i32, dir: &Path, r: Result<(), ReserveError>) -> String {
    match r {
        Ok(()) => format!(
            "gave back the CPUs multios pid {pid} reserved and did not give back ({}; it was killed)",
            dir.display()
        ),
        Err(e) => format!(
            "the reservation of multios pid {pid} ({}) is stale and could not be undone: {e}",
            dir.display()
        ),
    }
}

fn isolate_v2(root: &Path, cpus: &[usize], list: &str) -> Result<Reservation, ReserveError> {
    let all = read(&root.join("cpuset.cpus.effective"))?;
    check_cpus(cpus, list, &all)?;
    let pid = std::process::id();
    let home = fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("0::")
                .map(|p| root.join(p.trim_start_matches('/')))
        })
        .unwrap_or_else(|| root.to_path_buf());
    let sub = root.join("cgroup.subtree_control");
    if !read(&sub)?.split_whitespace().any(|c| c == "cpuset") {
        write_file(&sub, "+cpuset")?;
    }
    let dir = root.join(format!("{PREFIX}{pid}"));
    let part = dir.join("lwk");
    fs::create_dir(&dir).map_err(io("cannot create", &dir))?;
    let record = write_record(pid, "", &[]);
    let setup = || -> Result<(), ReserveError> {
        write_file(&dir.join("cgroup.subtree_control"), "+cpuset")?;
        // A remote partition: the exclusive CPUs are given down the path to it.
        write_file(&dir.join("cpuset.cpus.exclusive"), list)?;
        fs::create_dir(&part).map_err(io("cannot create", &part))?;
        write_file(&part.join("cgroup.type"), "threaded")?;
        write_file(&part.join("cpuset.cpus"), list)?;
        write_file(&part.join("cpuset.cpus.exclusive"), list)?;
        write_file(&part.join("cpuset.cpus.partition"), "isolated")?;
        let state = read(&part.join("cpuset.cpus.partition"))?;
        if state != "isolated" {
            return Err(ReserveError::NotIsolated {
                cpus: list.to_string(),
                why: format!(
                    "{} reads \"{state}\"",
                    part.join("cpuset.cpus.partition").display()
                ),
            });
        }
        // The whole process goes into the threaded domain (on the other CPUs); its vCPU threads
        // are admitted into the partition one by one.
        write_file(&dir.join("cgroup.procs"), &pid.to_string())?;
        Ok(())
    };
    match setup() {
        Ok(()) => Ok(Reservation {
            cpus: cpus.to_vec(),
            admit: part.join("cgroup.threads"),
            kind: Kind::V2 { dir, part, home },
            record,
            moved: 0,
            done: false,
        }),
        Err(e) => {
            let _ = restore_v2(&dir, &part, Some(&home));
            if let Some(r) = record {
                let _ = fs::remove_file(r);
            }
            Err(e)
        }
    }
}

fn restore_v2(dir: &Path, part: &Path, home: Option<&Path>) -> Result<(), ReserveError> {
    // Processes still inside (this one, or children a killed multios left) go back: to `home`,
    // or to the root for a stale reservation.
    let root = dir.parent().unwrap_or(dir).to_path_buf();
    let target = home.unwrap_or(&root).join("cgroup.procs");
    for _ in 0..3 {
        let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for p in procs.split_whitespace() {
            let _ = write_file(&target, p);
        }
    }
    let _ = write_file(&part.join("cpuset.cpus.partition"), "member");
    remove_dir(part)?;
    remove_dir(dir)
}

/// Removes an empty cgroup, retrying while its last tasks exit.
fn remove_dir(dir: &Path) -> Result<(), ReserveError> {
    let mut last = None;
    for _ in 0..100 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(CgroupError::Io {
        what: "cannot remove",
        path: dir.display().to_string(),
        source: last.unwrap_or_else(|| std::io::Error::other("busy")),
    }
    .into())
}

/// `cpus` must be in `all` (the root's CPUs) and leave at least one.
fn check_cpus(cpus: &[usize], list: &str, all: &str) -> Result<Vec<usize>, ReserveError> {
    let all_cpus = parse_list(all);
    if cpus.is_empty() || cpus.iter().any(|c| !all_cpus.contains(c)) {
        return Err(ReserveError::NotAvailable {
            cpus: list.to_string(),
            all: all.to_string(),
        });
    }
    let rest: Vec<usize> = all_cpus.into_iter().filter(|c| !cpus.contains(c)).collect();
    if rest.is_empty() {
        return Err(ReserveError::NoneLeft {
            cpus: list.to_string(),
            all: all.to_string(),
        });
    }
    Ok(rest)
}

fn isolate_v1(root: &Path, cpus: &[usize], list: &str) -> Result<Reservation, ReserveError> {
    let all = read(&root.join("cpuset.cpus"))?;
    let rest = check_cpus(cpus, list, &all)?;
    let mems = read(&root.join("cpuset.mems"))?;
    let pid = std::process::id();
    let lwk = root.join(format!("{PREFIX}{pid}"));
    let linux = root.join(format!("{PREFIX}{pid}-linux"));
    let balance = read(&root.join("cpuset.sched_load_balance"))?;
    // A move into a v1 cpuset resets the task's affinity: what was narrowed is put back after.
    let pinned = narrowed(&root.join("tasks"), &parse_list(&all));
    let record = write_record(pid, &balance, &pinned);
    fs::create_dir(&lwk).map_err(io("cannot create", &lwk))?;
    let setup = || -> Result<usize, ReserveError> {
        write_file(&lwk.join("cpuset.cpus"), list)?;
        write_file(&lwk.join("cpuset.mems"), &mems)?;
        write_file(&lwk.join("cpuset.sched_load_balance"), "0")?;
        if let Err(e) = write_file(&lwk.join("cpuset.cpu_exclusive"), "1") {
            let holders: Vec<String> = fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|d| d.path() != lwk && d.path().is_dir())
                .filter(|d| {
                    let c = parse_list(&read(&d.path().join("cpuset.cpus")).unwrap_or_default());
                    c.iter().any(|x| cpus.contains(x))
                })
                .map(|d| d.path().display().to_string())
                .collect();
            return Err(ReserveError::NotIsolated {
                cpus: list.to_string(),
                why: format!("{e}; cpusets that hold them too: {}", holders.join(", ")),
            });
        }
        fs::create_dir(&linux).map_err(io("cannot create", &linux))?;
        write_file(&linux.join("cpuset.cpus"), &format_list(&rest))?;
        write_file(&linux.join("cpuset.mems"), &mems)?;
        write_file(&root.join("cpuset.sched_load_balance"), "0")?;
        Ok(move_all(&root.join("tasks"), &linux.join("tasks")))
    };
    match setup() {
        Ok(moved) => Ok(Reservation {
            cpus: cpus.to_vec(),
            admit: lwk.join("tasks"),
            kind: Kind::V1 {
                root: root.to_path_buf(),
                lwk,
                linux,
                balance,
                pinned,
            },
            record,
            moved,
            done: false,
        }),
        Err(e) => {
            let _ = restore_v1(root, &lwk, &linux, &balance, &pinned);
            if let Some(r) = record {
                let _ = fs::remove_file(r);
            }
            Err(e)
        }
    }
}

/// Moves every task listed in `from` (a v1 `tasks` file) to `to`, a few passes for tasks forked
/// meanwhile; tasks that cannot move (per-CPU kernel threads) stay. Returns how many moved.
fn move_all(from: &Path, to: &Path) -> usize {
    let mut moved = std::collections::BTreeSet::new();
    for _ in 0..3 {
        let tasks = fs::read_to_string(from).unwrap_or_default();
        let mut any = false;
        for t in tasks.split_whitespace() {
            if !moved.contains(t) && write_file(to, t).is_ok() {
                moved.insert(t.to_string());
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    moved.len()
}

fn restore_v1(
    root: &Path,
    lwk: &Path,
    linux: &Path,
    balance: &str,
    pinned: &[(i32, Vec<usize>)],
) -> Result<(), ReserveError> {
    let tasks = root.join("tasks");
    for dir in [linux, lwk] {
        if dir.exists() {
            move_all(&dir.join("tasks"), &tasks);
        }
    }
    repin(pinned);
    if !balance.is_empty() {
        let _ = write_file(&root.join("cpuset.sched_load_balance"), balance);
    }
    let a = remove_dir(lwk);
    let b = remove_dir(linux);
    a.and(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_must_leave_linux_a_cpu_and_use_cpus_it_has() {
        assert!(matches!(check_cpus(&[1], "1", "0-1"), Ok(r) if r == vec![0]));
        assert!(matches!(
            check_cpus(&[0, 1], "0-1", "0-1"),
            Err(ReserveError::NoneLeft { .. })
        ));
        assert!(matches!(
            check_cpus(&[4], "4", "0-1"),
            Err(ReserveError::NotAvailable { .. })
        ));
        assert!(matches!(
            check_cpus(&[], "", "0-1"),
            Err(ReserveError::NotAvailable { .. })
        ));
    }

    #[test]
    fn cgroup_v2_with_cpuset_is_preferred_and_a_missing_controller_is_named() {
        let v2 = |ctl: &str| Some((PathBuf::from("/sys/fs/cgroup"), ctl.to_string()));
        let v1 = Some(PathBuf::from("/sys/fs/cgroup/cpuset"));
        let m = |v2, v1| Mounts { v2, v1 };
        assert_eq!(
            choose(&m(v2("cpu cpuset memory"), v1.clone())).ok(),
            Some(Hierarchy::V2("/sys/fs/cgroup".into()))
        );
        // This machine: cpuset bound to the v1 hierarchy, cgroup v2 without it.
        assert_eq!(
            choose(&m(v2("hugetlb"), v1.clone())).ok(),
            Some(Hierarchy::V1("/sys/fs/cgroup/cpuset".into()))
        );
        let e = choose(&m(v2("memory pids"), None))
            .expect_err("no cpuset")
            .to_string();
        assert!(e.contains("no cpuset") && e.contains("\"memory pids\""), "{e}");
        let e = choose(&m(None, None)).expect_err("nothing").to_string();
        assert!(e.contains("neither cgroup v2 nor a v1 cpuset"), "{e}");
    }

    #[test]
    fn reservation_cgroups_are_found_by_their_pid() {
        let d = std::env::temp_dir().join(format!("multios-reserve-names-{}", std::process::id()));
        for n in [
            "multios-lwk-reserve-41",
            "multios-lwk-reserve-41-linux",
            "multios-noise-7-0",
            "other",
        ] {
            fs::create_dir_all(d.join(n)).expect("scratch dir");
        }
        let mut found: Vec<i32> = reservations(&d).into_iter().map(|(p, _)| p).collect();
        found.sort();
        assert_eq!(found, vec![41, 41]);
        let _ = fs::remove_dir_all(&d);
    }
}
