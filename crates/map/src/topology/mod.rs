//! The architecture layer: processing units (PUs) in a tree of packages, NUMA nodes, caches and
//! cores, read from sysfs, from hwloc's XML (`lstopo --of xml`, [`hwloc`]) or built from an
//! hwloc-style synthetic string (`"pack:2 core:64 pu:1"`, also what `lstopo --of synthetic` prints).
//! The distance between two PUs, in hops, is how many levels one climbs to their common ancestor.

pub mod hwloc;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopologyError {
    #[error("the topology string is empty; write levels as NAME:COUNT, e.g. \"pack:2 core:64 pu:1\"")]
    Empty,
    #[error("topology string, column {column} ('{token}'): {what}")]
    At {
        column: usize,
        token: String,
        what: String,
    },
    #[error("the topology describes {0} PUs; at most {MAX_PUS} are supported")]
    TooLarge(u64),
    #[error("reading {path}: {msg}")]
    Sysfs { path: String, msg: String },
    #[error("reading the topology file {path}: {msg}")]
    Read { path: String, msg: String },
    #[error("{path}, line {line}, column {column}: {what}")]
    Xml {
        path: String,
        line: u32,
        column: u32,
        what: String,
    },
    #[error("{path}: {what}")]
    XmlFile { path: String, what: String },
}

/// The largest machine a synthetic string may describe.
pub const MAX_PUS: u64 = 1 << 16;

/// Level names in their order from the root, with the spellings accepted for each (hwloc's own
/// names, as `lstopo --of synthetic` prints them, among them).
const LEVELS: [(&str, &[&str]); 8] = [
    ("package", &["pack", "package", "socket"]),
    ("die", &["die"]),
    ("numa", &["numa", "numanode", "node", "group"]),
    ("l3", &["l3", "l3cache", "l3d", "l3dcache", "l3ucache"]),
    ("l2", &["l2", "l2cache", "l2d", "l2dcache", "l2ucache"]),
    ("l1", &["l1", "l1d", "l1cache", "l1dcache", "l1ucache"]),
    ("core", &["core"]),
    ("pu", &["pu", "thread"]),
];

/// Levels hwloc may print that carry no distance: instruction caches share their data cache's PUs
/// and the machine is the root. They are accepted and left out.
const TRANSPARENT: [&str; 5] = ["l1i", "l1icache", "l2icache", "l3icache", "machine"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Level {
    pub name: String,
    /// Children per object of the level above (the largest, for an irregular machine).
    pub arity: u32,
}

/// One processing unit (hardware thread).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pu {
    /// The OS CPU number (the synthetic ones count from 0).
    pub os: u32,
    /// The global index of its ancestor at each level, root first; the last entry is the PU itself.
    pub path: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// `sysfs` or the synthetic string.
    pub source: String,
    pub levels: Vec<Level>,
    pub pus: Vec<Pu>,
}

impl Topology {
    /// Parses an hwloc-style synthetic description, e.g. `"pack:2 l3:4 core:8 pu:2"`. Levels go from
    /// the root down; a missing `pu` level means one PU per leaf.
    pub fn synthetic(text: &str) -> Result<Topology, TopologyError> {
        let mut levels: Vec<Level> = Vec::new();
        let mut last_rank: Option<usize> = None;
        // the levels given so far: rank, column and token
        let mut seen: Vec<(usize, usize, &str)> = Vec::new();
        let mut column = 0;
        let mut any = false;
        for token in text.split(' ') {
            let start = column + 1;
            column += token.chars().count() + 1;
            if token.trim().is_empty() {
                continue;
            }
            any = true;
            let at = |what: String| TopologyError::At {
                column: start,
                token: token.to_string(),
                what,
            };
            // a memory attachment, e.g. `[NUMANode(memory=…)]`: no distance between PUs
            if token.starts_with('[') {
                if !token.ends_with(']') {
                    return Err(at("a memory attachment '[…]' is not closed by ']'".into()));
                }
                continue;
            }
            // attributes, e.g. `L2Cache:2(size=524288)`: not needed for distances
            let bare = match token.find('(') {
                Some(i) if token.ends_with(')') => &token[..i],
                Some(_) => return Err(at("attributes '(…)' are not closed by ')'".into())),
                None => token,
            };
            let Some((name, count)) = bare.split_once(':') else {
                return Err(at("expected NAME:COUNT (e.g. core:8)".into()));
            };
            if TRANSPARENT.contains(&name.to_ascii_lowercase().as_str()) {
                if count != "1" {
                    return Err(at(format!(
                        "level '{name}' is left out (it adds no distance) and must have a count of 1"
                    )));
                }
                continue;
            }
            let lower = name.to_ascii_lowercase();
            let Some(rank) = LEVELS
                .iter()
                .position(|(_, names)| names.contains(&lower.as_str()))
            else {
                let known: Vec<&str> = LEVELS.iter().map(|(n, _)| *n).collect();
                return Err(at(format!("unknown level '{name}'; known: {}", known.join(", "))));
            };
            if let Some((_, first, spelled)) = seen.iter().find(|(r, _, _)| *r == rank) {
                return Err(at(format!(
                    "level '{}' is repeated: it is already given at column {first} ('{spelled}'); give each level once",
                    LEVELS[rank].0
                )));
            }
            if let Some(prev) = last_rank {
                if rank < prev {
                    return Err(at(format!(
                        "level '{}' must come before '{}' (levels go from the root down)",
                        LEVELS[rank].0, LEVELS[prev].0
                    )));
                }
            }
            seen.push((rank, start, token));
            let arity: u32 = match count.parse() {
                Ok(n) if n > 0 => n,
                _ => return Err(at(format!("'{count}' is not a positive count"))),
            };
            last_rank = Some(rank);
            levels.push(Level {
                name: LEVELS[rank].0.into(),
                arity,
            });
        }
        if !any {
            return Err(TopologyError::Empty);
        }
        if last_rank != Some(LEVELS.len() - 1) {
            levels.push(Level {
                name: "pu".into(),
                arity: 1,
            });
        }
        let total = levels
            .iter()
            .try_fold(1u64, |acc, l| acc.checked_mul(l.arity as u64));
        let total = match total {
            Some(t) if t <= MAX_PUS => t,
            other => return Err(TopologyError::TooLarge(other.unwrap_or(u64::MAX))),
        };
        let mut pus = Vec::with_capacity(total as usize);
        for i in 0..total {
            let mut span = total;
            let path = levels
                .iter()
                .map(|l| {
                    span /= l.arity as u64;
                    (i / span) as u32
                })
                .collect();
            pus.push(Pu { os: i as u32, path });
        }
        Ok(Topology {
            source: text.trim().to_string(),
            levels,
            pus,
        })
    }

    /// This machine's online CPUs from sysfs: package, NUMA node, L3, core, PU.
    pub fn from_sysfs() -> Result<Topology, TopologyError> {
        let online = multios_host::cpus::CpuSet::online().map_err(|e| TopologyError::Sysfs {
            path: multios_host::cpus::ONLINE.into(),
            msg: e.to_string(),
        })?;
        let read = |p: String| std::fs::read_to_string(&p).map(|s| s.trim().to_string()).ok();
        let numa_of = numa_nodes();
        let mut keys: Vec<(u32, [String; 4])> = Vec::new();
        for cpu in online.to_vec() {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}");
            let pkg = read(format!("{base}/topology/physical_package_id")).unwrap_or_else(|| "0".into());
            let core = read(format!("{base}/topology/core_id")).unwrap_or_else(|| cpu.to_string());
            let l3 = read(format!("{base}/cache/index3/shared_cpu_list")).unwrap_or_else(|| pkg.clone());
            let numa = numa_of
                .get(&(cpu as u32))
                .map(|n| n.to_string())
                .unwrap_or_default();
            keys.push((
                cpu as u32,
                [
                    pkg.clone(),
                    format!("{pkg}/{numa}"),
                    format!("{pkg}/{numa}/{l3}"),
                    format!("{pkg}/{core}"),
                ],
            ));
        }
        let keys = keys.into_iter().map(|(os, k)| (os, k.to_vec())).collect();
        Ok(Topology::from_keys(
            "sysfs".into(),
            &["package", "numa", "l3", "core", "pu"],
            keys,
        ))
    }

    /// A topology from each PU's OS number and the keys of its ancestors, one per level above the
    /// PU (`names` ends with the PU level): PUs with equal keys at a level share that object. Object
    /// numbers follow the order the keys first appear; a level's arity is its largest number of
    /// children under one parent.
    pub(crate) fn from_keys(source: String, names: &[&str], keys: Vec<(u32, Vec<String>)>) -> Topology {
        let above = names.len().saturating_sub(1);
        let mut ids: Vec<BTreeMap<String, u32>> = vec![BTreeMap::new(); above];
        let mut pus = Vec::new();
        for (i, (os, k)) in keys.iter().enumerate() {
            let mut path = Vec::new();
            for (level, key) in k.iter().take(above).enumerate() {
                let next = ids[level].len() as u32;
                path.push(*ids[level].entry(key.clone()).or_insert(next));
            }
            path.push(i as u32);
            pus.push(Pu { os: *os, path });
        }
        let mut levels = Vec::new();
        for (l, name) in names.iter().enumerate() {
            let mut children: BTreeMap<u32, std::collections::BTreeSet<u32>> = BTreeMap::new();
            for pu in &pus {
                let parent = if l == 0 { 0 } else { pu.path[l - 1] };
                children.entry(parent).or_default().insert(pu.path[l]);
            }
            let arity = children.values().map(|c| c.len() as u32).max().unwrap_or(1);
            levels.push(Level {
                name: name.to_string(),
                arity,
            });
        }
        Topology { source, levels, pus }
    }

    /// `spec` read as hwloc XML when it names a `.xml` file (or is XML text itself), else as a
    /// synthetic string; this machine (sysfs) when `spec` is None.
    pub fn resolve(spec: Option<&str>) -> Result<Topology, TopologyError> {
        match spec {
            Some(s) if s.trim_start().starts_with('<') => hwloc::from_xml(s, "the topology XML"),
            Some(s) if s.to_ascii_lowercase().ends_with(".xml") => hwloc::from_file(std::path::Path::new(s)),
            Some(s) => Topology::synthetic(s),
            None => Topology::from_sysfs(),
        }
    }

    pub fn len(&self) -> usize {
        self.pus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pus.is_empty()
    }

    /// Hops between PU indices `a` and `b`: 0 on the same PU, 1 between the PUs of one core, …,
    /// `levels.len()` between packages.
    pub fn hops(&self, a: usize, b: usize) -> u32 {
        let (pa, pb) = (&self.pus[a].path, &self.pus[b].path);
        let common = pa.iter().zip(pb).take_while(|(x, y)| x == y).count();
        (pa.len() - common) as u32
    }

    /// The largest possible distance.
    pub fn max_hops(&self) -> u32 {
        self.levels.len() as u32
    }

    /// The index of the first level whose objects hold more than one PU above `pu` (the top level
    /// with more than one object): used to spread independent work.
    pub fn top_domains(&self) -> usize {
        for l in 0..self.levels.len() {
            let n: std::collections::BTreeSet<u32> = self.pus.iter().map(|p| p.path[l]).collect();
            if n.len() > 1 {
                return l;
            }
        }
        self.levels.len().saturating_sub(1)
    }

    /// One line, e.g. "sysfs: package:1 numa:1 l3:1 core:2 pu:1 (2 PUs)".
    pub fn describe(&self) -> String {
        let l: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{}:{}", l.name, l.arity))
            .collect();
        format!("{}: {} ({} PUs)", self.source, l.join(" "), self.pus.len())
    }
}

/// CPU → NUMA node from /sys/devices/system/node/node*/cpulist (empty if absent).
fn numa_nodes() -> BTreeMap<u32, u32> {
    let mut m = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else {
        return m;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(n) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(list) = std::fs::read_to_string(e.path().join("cpulist")) else {
            continue;
        };
        if let Ok(set) = multios_host::cpus::CpuSet::parse(list.trim()) {
            for c in set.to_vec() {
                m.insert(c as u32, n);
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_tree_and_hops() {
        let t = Topology::synthetic("pack:2 core:4 pu:2").expect("parses");
        assert_eq!(t.len(), 16);
        assert_eq!(t.hops(0, 0), 0);
        assert_eq!(t.hops(0, 1), 1);
        assert_eq!(t.hops(0, 2), 2);
        assert_eq!(t.hops(0, 8), 3);
        let t = Topology::synthetic("pack:2 core:64").expect("parses");
        assert_eq!(t.len(), 128);
        assert_eq!(t.levels.last().map(|l| l.name.as_str()), Some("pu"));
    }

    #[test]
    fn errors_say_where() {
        let e = Topology::synthetic("pack:2 core:x pu:1").expect_err("bad count");
        assert_eq!(
            e,
            TopologyError::At {
                column: 8,
                token: "core:x".into(),
                what: "'x' is not a positive count".into()
            }
        );
        let e = Topology::synthetic("core:2 pack:2")
            .expect_err("order")
            .to_string();
        assert!(e.contains("column 8") && e.contains("must come before"), "{e}");
        let e = Topology::synthetic("pack:2 cores:2")
            .expect_err("name")
            .to_string();
        assert!(e.contains("unknown level 'cores'"), "{e}");
        assert_eq!(Topology::synthetic("  "), Err(TopologyError::Empty));
        assert!(matches!(
            Topology::synthetic("pack:1000 core:1000"),
            Err(TopologyError::TooLarge(_))
        ));
    }

    #[test]
    fn issue_16_a_repeated_level_is_named_as_repeated_and_where() {
        // it used to say "level 'package' must come before 'package'"
        // the column of the repeat, and the column it was first given at
        for (text, column, first) in [
            ("pack:2 pack:2 pu:1", 8, 1),
            ("pack:2 core:2 socket:2", 15, 1),
            ("pack:2 core:2 core:4 pu:1", 15, 8),
        ] {
            let e = Topology::synthetic(text).expect_err("repeated").to_string();
            assert!(
                e.contains(&format!("column {column}"))
                    && e.contains("is repeated")
                    && e.contains(&format!("already given at column {first}"))
                    && !e.contains("must come before"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn sysfs_lists_online_cpus() {
        let t = Topology::from_sysfs().expect("sysfs");
        let online = multios_host::cpus::CpuSet::online().expect("online");
        assert_eq!(t.len(), online.len());
    }
}
