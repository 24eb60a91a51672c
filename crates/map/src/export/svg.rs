//! A picture of a graph as SVG, written directly (no font files needed): clusters as labelled boxes
//! side by side, nodes as circles labelled with command, tid and CPU, edges as lines whose width grows
//! with their weight, coloured by kind and labelled with bytes or counts, and a legend.

use super::escape;
use super::graph::weight;
use crate::graph::{EdgeKind, Graph};
use std::collections::BTreeMap;
use std::fmt::Write;

fn color(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Pipe => "#1f77b4",
        EdgeKind::Unix => "#17becf",
        EdgeKind::Tcp => "#2ca02c",
        EdgeKind::Udp => "#bcbd22",
        EdgeKind::Wakeup => "#7f7f7f",
        EdgeKind::Futex => "#d62728",
        EdgeKind::Signal => "#9467bd",
    }
}

fn human(v: u64) -> String {
    match v {
        v if v >= 1 << 30 => format!("{:.1} GiB", v as f64 / (1u64 << 30) as f64),
        v if v >= 1 << 20 => format!("{:.1} MiB", v as f64 / (1u64 << 20) as f64),
        v if v >= 1 << 10 => format!("{:.1} KiB", v as f64 / 1024.0),
        v => format!("{v} B"),
    }
}

/// The SVG text. `clusters` lists node ids per cluster (a node's first cluster is where it is drawn);
/// nodes in no cluster are drawn in a last box; `cpu_of` adds the placement.
pub fn svg(g: &Graph, clusters: &[Vec<u32>], cpu_of: &[(u32, u32)], title: &str) -> String {
    let mut boxes: Vec<Vec<u32>> = Vec::new();
    let mut home: BTreeMap<u32, usize> = BTreeMap::new();
    for members in clusters {
        let own: Vec<u32> = members
            .iter()
            .copied()
            .filter(|id| !home.contains_key(id))
            .collect();
        if own.is_empty() {
            continue;
        }
        for &id in &own {
            home.insert(id, boxes.len());
        }
        boxes.push(own);
    }
    let rest: Vec<u32> = g
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| !home.contains_key(id))
        .collect();
    if !rest.is_empty() {
        for &id in &rest {
            home.insert(id, boxes.len());
        }
        boxes.push(rest);
    }
    let (node_w, node_h, gap) = (170.0, 46.0, 26.0);
    let per_col = 6usize;
    let mut pos: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    let mut x = 30.0;
    let top = 70.0;
    let mut frames = Vec::new();
    let mut height: f64 = 0.0;
    for (b, members) in boxes.iter().enumerate() {
        let cols = members.len().div_ceil(per_col).max(1);
        let rows = members.len().min(per_col);
        let w = cols as f64 * (node_w + gap) + gap;
        let h = rows as f64 * (node_h + gap) + gap + 20.0;
        for (k, &id) in members.iter().enumerate() {
            let cx = x + gap + (k / per_col) as f64 * (node_w + gap) + node_w / 2.0;
            let cy = top + 20.0 + gap + (k % per_col) as f64 * (node_h + gap) + node_h / 2.0;
            pos.insert(id, (cx, cy));
        }
        frames.push((b, x, w, h));
        height = height.max(h);
        x += w + 40.0;
    }
    let width = x.max(400.0);
    let total_h = top + height + 140.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{total_h:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"30\" y=\"30\" font-size=\"16\">{}</text>\n",
        escape(title)
    );
    for (b, fx, fw, fh) in &frames {
        let name = if *b < clusters.len() {
            format!("cluster {b}")
        } else {
            "unclustered".into()
        };
        let _ = writeln!(s, "<rect x=\"{fx:.0}\" y=\"{top:.0}\" width=\"{fw:.0}\" height=\"{fh:.0}\" rx=\"12\" fill=\"#f4f4f8\" stroke=\"#999\"/><text x=\"{:.0}\" y=\"{:.0}\" fill=\"#555\">{name}</text>", fx + 10.0, top + 16.0);
    }
    let max = g.edges.iter().map(weight).fold(1.0, f64::max);
    for e in &g.edges {
        let (Some(&(x1, y1)), Some(&(x2, y2))) = (pos.get(&e.from), pos.get(&e.to)) else {
            continue;
        };
        let wdt = 1.0 + 7.0 * weight(e) / max;
        let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0 - 4.0);
        let (dx, dy) = if e.from == e.to { (0.0, -30.0) } else { (0.0, 0.0) };
        let label = if e.bytes > 0 {
            format!("{} {}", e.kind.name(), human(e.bytes))
        } else {
            format!("{} ×{}", e.kind.name(), e.count)
        };
        let _ = writeln!(
            s,
            "<line x1=\"{x1:.0}\" y1=\"{y1:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"{}\" stroke-width=\"{wdt:.1}\" stroke-opacity=\"0.6\"/><text x=\"{:.0}\" y=\"{:.0}\" fill=\"{}\" font-size=\"11\">{}</text>",
            x2 + dx, y2 + dy, color(e.kind), mx + dx, my + dy, color(e.kind), escape(&label)
        );
    }
    for n in &g.nodes {
        let Some(&(cx, cy)) = pos.get(&n.id) else { continue };
        let cpu = cpu_of
            .iter()
            .find(|(id, _)| *id == n.id)
            .map(|(_, c)| format!(" · CPU {c}"))
            .unwrap_or_default();
        let replicas = clusters.iter().filter(|c| c.contains(&n.id)).count();
        let dash = if replicas > 1 {
            " stroke-dasharray=\"4 2\""
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<rect x=\"{:.0}\" y=\"{:.0}\" width=\"{node_w:.0}\" height=\"{node_h:.0}\" rx=\"8\" fill=\"#fffbe6\" stroke=\"#333\"{dash}/><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{} {}</text><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#444\" font-size=\"11\">{}{cpu}{}</text>",
            cx - node_w / 2.0, cy - node_h / 2.0, cx, cy - 4.0, escape(&n.comm), n.id, cx, cy + 13.0,
            format_args!("{:.1} ms", n.cpu_ns as f64 / 1e6),
            if replicas > 1 { format!(" · in {replicas} clusters") } else { String::new() }
        );
    }
    let ly = top + height + 40.0;
    let _ = writeln!(
        s,
        "<text x=\"30\" y=\"{ly:.0}\">edges (width ∝ bytes, or count when no bytes):</text>"
    );
    for (k, kind) in EdgeKind::ALL.iter().enumerate() {
        let lx = 30.0 + k as f64 * 120.0;
        let _ = writeln!(s, "<line x1=\"{lx:.0}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"{}\" stroke-width=\"4\"/><text x=\"{:.0}\" y=\"{:.0}\">{}</text>", ly + 20.0, lx + 30.0, ly + 20.0, color(*kind), lx + 36.0, ly + 24.0, kind.name());
    }
    let _ = writeln!(s, "<text x=\"30\" y=\"{:.0}\" fill=\"#555\">node: command tid, CPU time · placed CPU; dashed = replicated into several clusters</text>", ly + 56.0);
    s.push_str("</svg>\n");
    s
}
