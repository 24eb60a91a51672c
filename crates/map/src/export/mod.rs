//! Exports: the graph as GraphML and DOT ([`graph`]), a picture as SVG ([`svg`]), and a placement as
//! a taskset script, an mpirun rankfile and a cgroup cpuset description ([`placement`]).

pub mod graph;
pub mod placement;
pub mod svg;

/// XML/DOT-safe text.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
