//! Exports: the graph as GraphML and DOT ([`graph`]), a picture as PNG or SVG ([`picture`]), and a
//! placement as a taskset script, an mpirun rankfile and a cgroup cpuset description
//! ([`placement`]).

pub mod graph;
pub mod picture;
pub mod placement;

/// XML/DOT-safe text.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
