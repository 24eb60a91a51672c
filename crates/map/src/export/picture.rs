//! The picture of a graph with its clusters and its placement, drawn with plotters as PNG or SVG
//! (the same drawing): one column per CPU holding the pinned nodes and one for the free nodes (those
//! Linux balances); a node is a box filled with its cluster's colour and labelled with its command,
//! tid, CPU time and cluster; a pair of nodes that interacted is one line, its width growing with
//! the log of what the interactions cost apart, its colour the kind that carried the most, the
//! heaviest pairs labelled with bytes and events. Large graphs (make's hundreds of processes) are
//! drawn with the nodes of one command in one column merged into one box ("cc1 ×40").

use crate::graph::{EdgeKind, Graph};
use crate::partition::{traffic, CostModel};
use crate::place::Placement;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;

/// Above this many nodes, nodes of one command in one column are merged.
pub const MAX_BOXES: usize = 24;
/// Pairs labelled with their traffic, heaviest first.
pub const LABELLED: usize = 12;

const FAMILY: &str = "sans-serif";
const BOX_H: i32 = 46;
const ROW_GAP: i32 = 30;
const COL_GAP: i32 = 150;
const MARGIN: i32 = 30;
const TOP: i32 = 96;

fn kind_color(k: EdgeKind) -> RGBColor {
    match k {
        EdgeKind::Pipe => RGBColor(0, 114, 178),
        EdgeKind::Unix => RGBColor(86, 180, 233),
        EdgeKind::Tcp => RGBColor(0, 158, 115),
        EdgeKind::Udp => RGBColor(230, 159, 0),
        EdgeKind::Wakeup => RGBColor(120, 120, 120),
        EdgeKind::Futex => RGBColor(213, 94, 0),
        EdgeKind::Signal => RGBColor(204, 121, 167),
    }
}

/// A light version of cluster `c`'s colour for a box's fill.
fn cluster_fill(c: usize) -> RGBColor {
    let RGBColor(r, g, b) = multios_plot::colors::series(c);
    let mix = |x: u8| (f64::from(x) * 0.3 + 255.0 * 0.7).round() as u8;
    RGBColor(mix(r), mix(g), mix(b))
}

fn human(v: f64) -> String {
    match v {
        v if v >= (1u64 << 30) as f64 => format!("{:.1} GiB", v / (1u64 << 30) as f64),
        v if v >= (1u64 << 20) as f64 => format!("{:.1} MiB", v / (1u64 << 20) as f64),
        v if v >= 1024.0 => format!("{:.1} KiB", v / 1024.0),
        v => format!("{v:.0} B"),
    }
}

fn count(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e4 => format!("{:.0}k", v / 1e3),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// One box: graph nodes drawn together.
struct Box_ {
    col: usize,
    cluster: usize,
    title: String,
    detail: String,
    x: i32,
    y: i32,
    w: i32,
}

/// One line: the pairs between two boxes.
struct Link {
    a: usize,
    b: usize,
    kind: EdgeKind,
    bytes: f64,
    events: f64,
    cost: f64,
}

/// What is drawn: the columns, the boxes, the lines.
pub struct Picture {
    title: String,
    subtitle: String,
    columns: Vec<String>,
    boxes: Vec<Box_>,
    links: Vec<Link>,
    kinds: Vec<EdgeKind>,
    clusters: usize,
    width: u32,
    height: u32,
}

/// Builds the picture of `g`: `clusters` lists node ids per cluster (a node's first cluster is its
/// colour), `placement` says where each node goes, `cost` weighs the lines.
pub fn layout(
    g: &Graph,
    clusters: &[Vec<u32>],
    placement: &Placement,
    cost: &CostModel,
    title: &str,
) -> Picture {
    let cluster_of = |id: u32| {
        clusters
            .iter()
            .position(|c| c.contains(&id))
            .unwrap_or(clusters.len())
    };
    // columns: each CPU with a pinned node (in CPU order), then the free nodes
    let mut cpus: Vec<u32> = placement
        .nodes
        .iter()
        .filter(|n| n.pinned)
        .map(|n| n.cpu)
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let free_cpus: Vec<u32> = {
        let mut d: Vec<u32> = placement
            .nodes
            .iter()
            .filter(|n| !n.pinned)
            .flat_map(|n| n.domain.clone())
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    };
    let any_free = placement.nodes.iter().any(|n| !n.pinned);
    let mut columns: Vec<String> = cpus.iter().map(|c| format!("CPU {c} (pinned)")).collect();
    if any_free {
        let list: Vec<usize> = free_cpus.iter().map(|&c| c as usize).collect();
        columns.push(format!(
            "free: Linux balances over {}",
            multios_host::cpus::format_list(&list)
        ));
    }
    let col_of = |id: u32| -> usize {
        match placement.nodes.iter().find(|n| n.id == id) {
            Some(n) if n.pinned => cpus.iter().position(|&c| c == n.cpu).unwrap_or(0),
            _ => cpus.len(),
        }
    };
    // boxes: one per node, or per (column, command) when there are many nodes
    let merge = g.nodes.len() > MAX_BOXES;
    let mut key_of: BTreeMap<u32, (usize, String)> = BTreeMap::new();
    let mut members: BTreeMap<(usize, String), Vec<u32>> = BTreeMap::new();
    for n in &g.nodes {
        // the command name as the other exports show it (a control byte as `\x01`)
        let comm = super::visible(&n.comm);
        let key = if merge {
            (col_of(n.id), comm.into_owned())
        } else if let Some(r) = n.rank {
            (col_of(n.id), format!("{comm} {} · rank {r}", n.id))
        } else {
            (col_of(n.id), format!("{comm} {}", n.id))
        };
        key_of.insert(n.id, key.clone());
        members.entry(key).or_default().push(n.id);
    }
    let mut boxes: Vec<Box_> = Vec::new();
    let mut index: BTreeMap<(usize, String), usize> = BTreeMap::new();
    let mut ordered: Vec<(&(usize, String), &Vec<u32>)> = members.iter().collect();
    let work = |ids: &[u32]| -> f64 {
        ids.iter()
            .filter_map(|id| g.nodes.iter().find(|n| n.id == *id))
            .map(|n| n.cpu_ns as f64)
            .sum()
    };
    ordered.sort_by(|a, b| {
        (a.0 .0, cluster_of(a.1[0]))
            .cmp(&(b.0 .0, cluster_of(b.1[0])))
            .then(work(b.1).total_cmp(&work(a.1)))
    });
    for (key, ids) in ordered {
        let cluster = cluster_of(ids[0]);
        let title = if ids.len() > 1 {
            format!("{} ×{}", key.1, ids.len())
        } else {
            key.1.clone()
        };
        let tag = if cluster < clusters.len() {
            format!("cluster {cluster}")
        } else {
            "no cluster".into()
        };
        index.insert(key.clone(), boxes.len());
        boxes.push(Box_ {
            col: key.0,
            cluster,
            title,
            detail: format!("{:.1} ms CPU · {tag}", work(ids) / 1e6),
            x: 0,
            y: 0,
            w: 0,
        });
    }
    // lines: pairs of boxes, summed
    let mut links: BTreeMap<(usize, usize), Link> = BTreeMap::new();
    let mut by_kind: BTreeMap<(usize, usize), BTreeMap<EdgeKind, (u64, u64)>> = BTreeMap::new();
    for e in &g.edges {
        let (Some(ka), Some(kb)) = (key_of.get(&e.from), key_of.get(&e.to)) else {
            continue;
        };
        let (a, b) = (index[ka], index[kb]);
        if a == b {
            continue;
        }
        let k = by_kind
            .entry((a.min(b), a.max(b)))
            .or_default()
            .entry(e.kind)
            .or_default();
        k.0 += e.bytes;
        k.1 += e.count;
    }
    for ((x, y), t) in traffic(g) {
        let (Some(kx), Some(ky)) = (key_of.get(&x), key_of.get(&y)) else {
            continue;
        };
        let (a, b) = (index[kx], index[ky]);
        if a == b {
            continue;
        }
        let l = links.entry((a.min(b), a.max(b))).or_insert(Link {
            a: a.min(b),
            b: a.max(b),
            kind: EdgeKind::Wakeup,
            bytes: 0.0,
            events: 0.0,
            cost: 0.0,
        });
        l.bytes += t.bytes;
        l.events += t.events;
        l.cost += cost.apart(&t);
    }
    for (key, l) in links.iter_mut() {
        if let Some(kinds) = by_kind.get(key) {
            // the kind that carried the most: bytes first, then counts
            if let Some((k, _)) = kinds.iter().max_by(|a, b| a.1.cmp(b.1)) {
                l.kind = *k;
            }
        }
    }
    let mut kinds: Vec<EdgeKind> = links.values().map(|l| l.kind).collect();
    kinds.sort();
    kinds.dedup();
    let mut links: Vec<Link> = links
        .into_values()
        .filter(|l| l.cost > 0.0 || l.events > 0.0)
        .collect();
    links.sort_by(|a, b| b.cost.total_cmp(&a.cost));
    let subtitle = format!(
        "{} nodes, {} clusters · {} placement on {}",
        g.nodes.len(),
        clusters.len(),
        placement.strategy.name(),
        placement.topology
    );
    Picture {
        title: super::visible(title).into_owned(),
        subtitle,
        columns,
        boxes,
        links,
        kinds,
        clusters: clusters.len(),
        width: 0,
        height: 0,
    }
}

impl Picture {
    /// Places the boxes (text widths measured with the drawing's font) and sizes the canvas.
    fn arrange<DB: DrawingBackend>(&mut self, area: &DrawingArea<DB, Shift>) {
        let font: TextStyle = (FAMILY, 15).into_font().into();
        let small: TextStyle = (FAMILY, 12).into_font().into();
        let width_of = |t: &str, f: &TextStyle| {
            area.estimate_text_size(t, f)
                .map_or(8 * t.len() as i32, |s| s.0 as i32)
        };
        let ncols = self.columns.len().max(1);
        let mut col_w = vec![160i32; ncols];
        for (c, name) in self.columns.iter().enumerate() {
            col_w[c] = col_w[c].max(width_of(name, &small) + 10);
        }
        for b in &self.boxes {
            let w = width_of(&b.title, &font).max(width_of(&b.detail, &small)) + 24;
            col_w[b.col] = col_w[b.col].max(w);
        }
        let mut x = MARGIN;
        let mut col_x = Vec::new();
        for w in &col_w {
            col_x.push(x);
            x += w + COL_GAP;
        }
        let mut rows = vec![0i32; ncols];
        for b in &mut self.boxes {
            b.x = col_x[b.col];
            b.w = col_w[b.col];
            b.y = TOP + 26 + rows[b.col] * (BOX_H + ROW_GAP);
            rows[b.col] += 1;
        }
        let tallest = rows.iter().copied().max().unwrap_or(1).max(1);
        let legend_rows = 3 + self.clusters.div_ceil(5) as i32;
        self.width = (x - COL_GAP + MARGIN + 120).max(760) as u32;
        self.height = (TOP + 26 + tallest * (BOX_H + ROW_GAP) + 40 + legend_rows * 24) as u32;
    }

    /// The canvas size (after [`Picture::arrange`]).
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let left = Pos::new(HPos::Left, VPos::Center);
        let center = Pos::new(HPos::Center, VPos::Center);
        let title_font = (FAMILY, 18).into_font().color(&BLACK).pos(left);
        let text_font = (FAMILY, 15).into_font().color(&BLACK).pos(center);
        let small: TextStyle = (FAMILY, 12).into_font().color(&RGBColor(60, 60, 60));
        // title, cut to the width
        let mut title = self.title.clone();
        let max_w = self.width as i32 - 2 * MARGIN;
        while title.chars().count() > 8
            && root
                .estimate_text_size(&title, &title_font)
                .is_ok_and(|s| s.0 as i32 > max_w)
        {
            let keep: String = title.chars().take(title.chars().count() - 4).collect();
            title = format!("{}…", keep.trim_end_matches('…'));
        }
        root.draw(&Text::new(title, (MARGIN, 26), title_font.clone()))
            .map_err(err)?;
        root.draw(&Text::new(
            self.subtitle.clone(),
            (MARGIN, 52),
            small.clone().pos(left),
        ))
        .map_err(err)?;
        // column headings
        let mut heads: BTreeMap<usize, (i32, i32)> = BTreeMap::new();
        for b in &self.boxes {
            heads.entry(b.col).or_insert((b.x, b.w));
        }
        for (c, (x, w)) in &heads {
            let name = self.columns.get(*c).cloned().unwrap_or_default();
            root.draw(&Text::new(name, (x + w / 2, TOP), small.clone().pos(center)))
                .map_err(err)?;
            root.draw(&PathElement::new(
                vec![(*x, TOP + 12), (x + w, TOP + 12)],
                RGBColor(180, 180, 180).stroke_width(1),
            ))
            .map_err(err)?;
        }
        // lines under the boxes
        let costs: Vec<f64> = self.links.iter().map(|l| l.cost.max(1.0)).collect();
        let (lo, hi) = costs.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &c| {
            (lo.min(c.log10()), hi.max(c.log10()))
        });
        let mut arcs = vec![0i32; self.columns.len().max(1)];
        let mut labels: Vec<(i32, i32, i32, i32)> = Vec::new();
        for (k, l) in self.links.iter().enumerate() {
            let (a, b) = (&self.boxes[l.a], &self.boxes[l.b]);
            let t = if hi > lo {
                (costs[k].log10() - lo) / (hi - lo)
            } else {
                1.0
            };
            let width = (1.0 + 7.0 * t).round() as u32;
            let color = kind_color(l.kind);
            let mid_y = |b: &Box_| b.y + BOX_H / 2;
            let (points, label_at) = if a.col == b.col {
                // an arc right of the column
                arcs[a.col] += 1;
                let bulge = 24 + 14 * arcs[a.col];
                let x0 = a.x + a.w;
                let (y0, y1) = (mid_y(a), mid_y(b));
                let pts: Vec<(i32, i32)> = (0..=24)
                    .map(|i| {
                        let s = i as f64 / 24.0;
                        let x = x0 as f64 + bulge as f64 * (std::f64::consts::PI * s).sin();
                        let y = y0 as f64 + (y1 - y0) as f64 * s;
                        (x.round() as i32, y.round() as i32)
                    })
                    .collect();
                (pts, (x0 + bulge + 6, (y0 + y1) / 2))
            } else {
                let (l_box, r_box) = if a.x < b.x { (a, b) } else { (b, a) };
                let p0 = (l_box.x + l_box.w, mid_y(l_box));
                let p1 = (r_box.x, mid_y(r_box));
                (vec![p0, p1], ((p0.0 + p1.0) / 2, (p0.1 + p1.1) / 2))
            };
            root.draw(&PathElement::new(points, color.mix(0.75).stroke_width(width)))
                .map_err(err)?;
            if k < LABELLED && costs[k] >= 0.01 * costs[0] {
                let mut text = l.kind.name().to_string();
                if l.bytes > 0.0 {
                    text.push(' ');
                    text.push_str(&human(l.bytes));
                }
                if l.events > 0.0 {
                    text.push_str(&format!(" · {} ev", count(l.events)));
                }
                let (tw, th) = root
                    .estimate_text_size(&text, &small)
                    .map_or((7 * text.len() as i32, 14), |s| (s.0 as i32, s.1 as i32));
                let (mut x, mut y) = (label_at.0 - tw / 2, label_at.1 - th / 2 - 10);
                if a.col == b.col {
                    x = label_at.0;
                }
                for _ in 0..12 {
                    let hit = labels.iter().any(|&(lx, ly, lw, lh)| {
                        x < lx + lw && lx < x + tw && y < ly + lh + 2 && ly < y + th + 2
                    });
                    if !hit {
                        break;
                    }
                    y += th + 4;
                }
                labels.push((x, y, tw, th));
                root.draw(&Rectangle::new(
                    [(x - 3, y - 2), (x + tw + 3, y + th + 2)],
                    WHITE.mix(0.9).filled(),
                ))
                .map_err(err)?;
                root.draw(&Text::new(
                    text,
                    (x, y + th / 2),
                    small.clone().color(&color).pos(left),
                ))
                .map_err(err)?;
            }
        }
        // boxes
        for b in &self.boxes {
            let fill = if b.cluster < self.clusters {
                cluster_fill(b.cluster)
            } else {
                RGBColor(235, 235, 235)
            };
            root.draw(&Rectangle::new(
                [(b.x, b.y), (b.x + b.w, b.y + BOX_H)],
                fill.filled(),
            ))
            .map_err(err)?;
            let edge = if b.cluster < self.clusters {
                multios_plot::colors::series(b.cluster)
            } else {
                RGBColor(120, 120, 120)
            };
            root.draw(&Rectangle::new(
                [(b.x, b.y), (b.x + b.w, b.y + BOX_H)],
                edge.stroke_width(2),
            ))
            .map_err(err)?;
            root.draw(&Text::new(
                b.title.clone(),
                (b.x + b.w / 2, b.y + 15),
                text_font.clone(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(
                b.detail.clone(),
                (b.x + b.w / 2, b.y + 34),
                small.clone().pos(center),
            ))
            .map_err(err)?;
        }
        // legend
        let mut y = self.height as i32 - (3 + self.clusters.div_ceil(5) as i32) * 24 + 8;
        root.draw(&Text::new(
            "line: a pair · width ∝ log of its cost apart · colour: the kind that carried most · label: bytes · events",
            (MARGIN, y),
            small.clone().pos(left),
        ))
        .map_err(err)?;
        y += 24;
        let mut x = MARGIN;
        for &k in &self.kinds {
            root.draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                kind_color(k).stroke_width(4),
            ))
            .map_err(err)?;
            root.draw(&Text::new(k.name(), (x + 34, y), small.clone().pos(left)))
                .map_err(err)?;
            x += 110;
        }
        y += 24;
        for c in 0..self.clusters {
            let (col, row) = (c % 5, c / 5);
            let (cx, cy) = (MARGIN + col as i32 * 130, y + row as i32 * 24);
            root.draw(&Rectangle::new(
                [(cx, cy - 8), (cx + 22, cy + 8)],
                cluster_fill(c).filled(),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(cx, cy - 8), (cx + 22, cy + 8)],
                multios_plot::colors::series(c).stroke_width(2),
            ))
            .map_err(err)?;
            root.draw(&Text::new(
                format!("cluster {c}"),
                (cx + 30, cy),
                small.clone().pos(left),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}

/// Writes the picture to `path` as PNG or SVG (by its extension). The SVG is drawn into a string
/// and written with one `std::fs::write`: plotters' SVG backend writes its file through a
/// `BufWriter` it never flushes itself, so a failed write (a full disk) was lost on drop and the
/// command reported success.
pub fn write(mut pic: Picture, path: &std::path::Path, svg: bool) -> Result<(), String> {
    multios_plot::ensure_font().map_err(|e| e.to_string())?;
    {
        // measure with a scratch canvas, then draw at the size found
        let mut scratch = String::new();
        let area = SVGBackend::with_string(&mut scratch, (4000, 4000)).into_drawing_area();
        pic.arrange(&area);
    }
    if svg {
        let mut text = String::new();
        {
            let root = SVGBackend::with_string(&mut text, pic.size()).into_drawing_area();
            pic.draw(&root)?;
            root.present().map_err(|e| e.to_string())?;
        }
        std::fs::write(path, text).map_err(|e| format!("cannot write the SVG to {}: {e}", path.display()))
    } else {
        let root = BitMapBackend::new(path, pic.size()).into_drawing_area();
        pic.draw(&root)?;
        root.present().map_err(|e| e.to_string())
    }
}
