//! Exports: the graph as GraphML and DOT ([`graph`]), a picture as PNG or SVG ([`picture`]), and a
//! placement as a taskset script, an mpirun rankfile and a cgroup cpuset description
//! ([`placement`]).
//!
//! Names in a graph are what the kernel recorded: a command name (comm) may hold any byte but NUL
//! and '/', and a graph file written by hand any character. Every exported text shows them through
//! [`visible`], so that a control byte is neither an XML error (XML 1.0 cannot hold C0 controls
//! even as character references) nor a raw escape sequence on a terminal.

pub mod graph;
pub mod picture;
pub mod placement;

use std::borrow::Cow;

/// `s` with the characters no exported text should carry shown as a visible escape: C0 controls
/// but the tab (ESC → `\x1b`, a newline → `\x0a`: a name is one line, and a newline in the taskset
/// script's comment would start a command), DEL, and U+FFFE/U+FFFF (not XML characters) as
/// `\u{fffe}`. A backslash stays as it is.
pub fn visible(s: &str) -> Cow<'_, str> {
    let odd = |c: char| (c < ' ' && c != '\t') || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}';
    if !s.chars().any(odd) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\u{fffe}' | '\u{ffff}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c if odd(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// XML-safe text ([`visible`], then & < > " as entities); DOT takes the same entities.
pub(crate) fn escape(s: &str) -> String {
    visible(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
