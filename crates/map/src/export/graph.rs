//! GraphML and DOT renderings of a graph, with an optional placement (node → CPU) and partition
//! (clusters drawn as DOT subgraphs).

use super::escape;
use crate::graph::Graph;
use std::fmt::Write;

/// GraphML: node attributes tgid, comm, cpu_ns, rss_pages, syscall families (and cpu when placed);
/// edge attributes kind, bytes, count (and across: a wake-up edge's wake-ups that crossed CPUs, when
/// recorded).
pub fn graphml(g: &Graph, cpu_of: &[(u32, u32)]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n");
    for (id, for_, ty) in [
        ("tgid", "node", "long"),
        ("comm", "node", "string"),
        ("cpu_ns", "node", "long"),
        ("rss_pages", "node", "long"),
        ("fs", "node", "long"),
        ("net", "node", "long"),
        ("mm", "node", "long"),
        ("ipc", "node", "long"),
        ("sched", "node", "long"),
        ("cpu", "node", "long"),
        ("kind", "edge", "string"),
        ("bytes", "edge", "long"),
        ("count", "edge", "long"),
        ("across", "edge", "long"),
    ] {
        let _ = writeln!(
            s,
            "  <key id=\"{id}\" for=\"{for_}\" attr.name=\"{id}\" attr.type=\"{ty}\"/>"
        );
    }
    s.push_str("  <graph edgedefault=\"directed\">\n");
    for n in &g.nodes {
        let _ = write!(
            s,
            "    <node id=\"n{}\"><data key=\"tgid\">{}</data><data key=\"comm\">{}</data><data key=\"cpu_ns\">{}</data><data key=\"rss_pages\">{}</data><data key=\"fs\">{}</data><data key=\"net\">{}</data><data key=\"mm\">{}</data><data key=\"ipc\">{}</data><data key=\"sched\">{}</data>",
            n.id, n.tgid, escape(&n.comm), n.cpu_ns, n.rss_pages, n.syscalls.fs, n.syscalls.net, n.syscalls.mm, n.syscalls.ipc, n.syscalls.sched
        );
        if let Some((_, cpu)) = cpu_of.iter().find(|(id, _)| *id == n.id) {
            let _ = write!(s, "<data key=\"cpu\">{cpu}</data>");
        }
        s.push_str("</node>\n");
    }
    for (k, e) in g.edges.iter().enumerate() {
        let _ = write!(
            s,
            "    <edge id=\"e{k}\" source=\"n{}\" target=\"n{}\"><data key=\"kind\">{}</data><data key=\"bytes\">{}</data><data key=\"count\">{}</data>",
            e.from, e.to, e.kind.name(), e.bytes, e.count
        );
        if let Some(a) = e.across {
            let _ = write!(s, "<data key=\"across\">{a}</data>");
        }
        s.push_str("</edge>\n");
    }
    s.push_str("  </graph>\n</graphml>\n");
    s
}

/// DOT: one subgraph per cluster (`clusters`: lists of node ids), nodes labelled comm/tid (and CPU),
/// edges labelled with their kind and weight, pen width growing with the weight.
pub fn dot(g: &Graph, clusters: &[Vec<u32>], cpu_of: &[(u32, u32)]) -> String {
    let mut s = String::from("digraph multios_map {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
    let label = |id: u32| -> String {
        let n = g.nodes.iter().find(|n| n.id == id);
        let comm = n.map(|n| n.comm.as_str()).unwrap_or("?");
        match cpu_of.iter().find(|(i, _)| *i == id) {
            Some((_, cpu)) => format!("{} {}\\nCPU {}", dot_text(comm), id, cpu),
            None => format!("{} {}", dot_text(comm), id),
        }
    };
    let mut drawn = std::collections::BTreeSet::new();
    for (c, members) in clusters.iter().enumerate() {
        let _ = writeln!(s, "  subgraph cluster_{c} {{\n    label=\"cluster {c}\";");
        for &id in members {
            // a replicated node appears in its first cluster; later ones get a dashed copy
            if drawn.insert(id) {
                let _ = writeln!(s, "    n{id} [label=\"{}\"];", label(id));
            } else {
                let _ = writeln!(
                    s,
                    "    r{c}_{id} [label=\"{} (replica)\", style=\"rounded,dashed\"];",
                    label(id)
                );
            }
        }
        s.push_str("  }\n");
    }
    for n in &g.nodes {
        if drawn.insert(n.id) {
            let _ = writeln!(s, "  n{} [label=\"{}\"];", n.id, label(n.id));
        }
    }
    let max = g.edges.iter().map(weight).fold(1.0, f64::max);
    for e in &g.edges {
        let w = weight(e);
        let what = match (e.bytes, e.across) {
            (b, _) if b > 0 => format!("{} {} B/{}", e.kind.name(), b, e.count),
            (_, Some(a)) => format!("{} ×{} ({a} across CPUs)", e.kind.name(), e.count),
            _ => format!("{} ×{}", e.kind.name(), e.count),
        };
        let _ = writeln!(
            s,
            "  n{} -> n{} [label=\"{what}\", penwidth={:.1}];",
            e.from,
            e.to,
            1.0 + 5.0 * w / max
        );
    }
    s.push_str("}\n");
    s
}

/// A name in a DOT label: [`escape`]d, its backslashes doubled (Graphviz reads `\n` in a label as
/// a line break and drops the backslash of an escape it does not know: `\x01` would show "x01").
fn dot_text(s: &str) -> String {
    escape(s).replace('\\', "\\\\")
}

/// The weight an edge is drawn with: bytes for data, else the count.
pub(crate) fn weight(e: &crate::graph::Edge) -> f64 {
    if e.bytes > 0 {
        e.bytes as f64
    } else {
        e.count as f64
    }
}
