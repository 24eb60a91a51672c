//! Issue #12: what `map show`, `map place` and `map record` write. A command name (comm) may hold
//! any byte but NUL and '/': a control byte in one made SVG and GraphML that are not XML (and
//! reached the terminal raw); a picture that could not be written was reported written; and on a
//! one-PU topology placements that put every node on PU 0 were predicted differently.

use multios_map::export::{graph, picture, placement};
use multios_map::partition::{greedy, CostModel, Weights};
use multios_map::place::{self, Strategy};
use multios_map::project::{self, HopModel};
use multios_map::record::{record, Options};
use multios_map::{Edge, EdgeKind, Graph, Node, Topology};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

/// A directory removed when the test ends.
fn scratch(tag: &str) -> scratch::Scratch {
    scratch::Scratch::new("multios-map12x", tag)
}

/// Whether python3's XML parser reads `path` (its message when not).
fn parses_as_xml(path: &Path) -> Result<(), String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The control characters of `text` other than tab and newline.
fn controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| (c < ' ' && c != '\t' && c != '\n') || c == '\u{7f}' || c == '\u{ffff}')
        .collect()
}

/// The graph's exports (GraphML, DOT, SVG, taskset script) in `dir`, each checked: no control
/// character, the XML ones parse.
fn export_and_check(g: &Graph, dir: &Path) -> (String, String, String, String) {
    let cost = CostModel::default();
    let topo = Topology::synthetic("pack:1 core:2").expect("topology");
    let w = Weights::new(g, &cost);
    let part = greedy::partition(&w, Some(topo.len()), 1).partition;
    let p = place::place(g, &part, &topo, &cost, Strategy::Treematch);
    let clusters: Vec<Vec<u32>> = part
        .clusters
        .iter()
        .map(|c| c.members.iter().map(|&m| g.nodes[m].id).collect())
        .collect();
    let cpu_of: Vec<(u32, u32)> = p.nodes.iter().map(|n| (n.id, n.cpu)).collect();
    let gml = graph::graphml(g, &cpu_of);
    let dot = graph::dot(g, &clusters, &cpu_of);
    let script = placement::taskset(&p);
    let svg_path = dir.join("g.svg");
    let title = g.command.join(" ");
    let pic = picture::layout(g, &clusters, &p, &cost, &title);
    picture::write(pic, &svg_path, true).expect("SVG written");
    let svg = std::fs::read_to_string(&svg_path).expect("read the SVG");
    let gml_path = dir.join("g.graphml");
    std::fs::write(&gml_path, &gml).expect("write GraphML");
    for (what, text) in [
        ("GraphML", &gml),
        ("DOT", &dot),
        ("SVG", &svg),
        ("taskset", &script),
    ] {
        assert!(controls(text).is_empty(), "{what}: {:?}\n{text}", controls(text));
    }
    parses_as_xml(&gml_path).unwrap_or_else(|e| panic!("GraphML: {e}\n{gml}"));
    parses_as_xml(&svg_path).unwrap_or_else(|e| panic!("SVG: {e}"));
    (gml, dot, svg, script)
}

#[test]
fn issue_12_control_bytes_in_command_names_export_as_xml_and_visible_text() {
    let names = [
        "a\u{1}b\u{1b}[31m",
        "x\ny; rm -rf /tmp/z",
        "q\"<&>]]>",
        "nc\u{ffff}\u{7f}",
        "back\\slash",
    ];
    let nodes: Vec<Node> = names
        .iter()
        .enumerate()
        .map(|(k, n)| Node::process(100 + k as u32, n, 1_000_000))
        .collect();
    let edges = vec![
        Edge::new(100, 101, EdgeKind::Pipe, 1 << 20, 100),
        Edge::new(102, 103, EdgeKind::Unix, 1 << 16, 50),
        Edge::new(103, 104, EdgeKind::Wakeup, 0, 20),
    ];
    let mut g = Graph::new(nodes, edges);
    g.command = vec!["sh".into(), "-c".into(), "\u{1b}]0;title\u{7}".into()];
    let d = scratch("names");
    let (gml, dot, svg, script) = export_and_check(&g, &d);
    // the control bytes are shown, not dropped
    assert!(gml.contains("a\\x01b\\x1b[31m"), "{gml}");
    assert!(gml.contains("q&quot;&lt;&amp;&gt;]]&gt;"), "{gml}");
    assert!(gml.contains("nc\\u{ffff}\\x7f"), "{gml}");
    // DOT doubles the backslashes: Graphviz drops the backslash of `\x` and breaks a line at `\n`
    assert!(dot.contains("a\\\\x01b\\\\x1b[31m"), "{dot}");
    assert!(dot.contains("back\\\\slash"), "{dot}");
    assert!(svg.contains("a\\x01b\\x1b[31m"), "the box's title");
    assert!(svg.contains("\\x1b]0;title\\x07"), "the picture's title");
    // a newline in a name no longer ends the taskset script's comment
    assert_eq!(
        script.lines().filter(|l| l.starts_with("taskset")).count(),
        names.len()
    );
    assert!(!script.lines().any(|l| l.starts_with("y; rm")), "{script}");
}

#[test]
fn issue_12_a_recorded_program_named_with_a_control_byte_exports_as_xml() {
    // the repro: /bin/true copied under a name with SOH and ESC, recorded (root and BTF needed)
    let d = scratch("recorded");
    let prog = d.join("a\u{1}b\u{1b}c");
    std::fs::copy("/bin/true", &prog).expect("copy /bin/true");
    let r = record(&Options {
        command: vec![prog.display().to_string()],
        pid: None,
        duration: None,
        sample_every: Duration::from_millis(20),
        topology: None,
    })
    .expect("record (root and BTF tracepoints needed)");
    assert!(
        r.graph.nodes.iter().any(|n| n.comm == "a\u{1}b\u{1b}c"),
        "the kernel's comm: {:?}",
        r.graph.nodes
    );
    let (gml, _, svg, _) = export_and_check(&r.graph, &d);
    assert!(gml.contains("a\\x01b\\x1bc") && svg.contains("a\\x01b\\x1bc"));
}

#[test]
fn issue_12_a_picture_that_cannot_be_written_is_an_error() {
    // a small SVG went through plotters' BufWriter, flushed on drop only: /dev/full "succeeded"
    let g = Graph::new(
        vec![Node::process(1, "a", 1_000_000), Node::process(2, "b", 1_000_000)],
        vec![Edge::new(1, 2, EdgeKind::Pipe, 4096, 4)],
    );
    let cost = CostModel::default();
    let topo = Topology::synthetic("pack:1 core:2").expect("topology");
    let w = Weights::new(&g, &cost);
    let part = greedy::partition(&w, Some(topo.len()), 1).partition;
    let p = place::place(&g, &part, &topo, &cost, Strategy::Affinity);
    let d = scratch("full");
    let full = d.join("full.svg");
    std::os::unix::fs::symlink("/dev/full", &full).expect("symlink to /dev/full");
    let pic = picture::layout(&g, &[vec![1, 2]], &p, &cost, "t");
    let e = picture::write(pic, &full, true).expect_err("/dev/full takes nothing");
    assert!(e.contains("full.svg") && e.contains("No space left"), "{e}");
}

#[test]
fn issue_12_placements_that_put_every_node_on_the_one_pu_predict_the_same() {
    // head | cat | wc recorded by `map record` (d2/g1.json): on `pack:1` every strategy puts the
    // four nodes on PU 0; affinity leaves them free, which was priced as split between CPUs
    // (10.763 ms for affinity and Linux's placement, 8.607 ms for treematch and round-robin)
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/head_cat_wc.json");
    let g = Graph::load(&path).expect("graph");
    let cost = CostModel::default();
    let topo = Topology::synthetic("pack:1").expect("topology");
    assert_eq!(topo.len(), 1);
    let w = Weights::new(&g, &cost);
    let part = greedy::partition(&w, Some(topo.len()), 1).partition;
    let hop = HopModel::linear(cost, 0.5, topo.max_hops());
    let mut predicted = Vec::new();
    for s in Strategy::ALL {
        let p = place::place(&g, &part, &topo, &cost, s);
        assert!(p.nodes.iter().all(|n| n.pu == 0), "{s:?}");
        let pu: Vec<usize> = p.nodes.iter().map(|n| n.pu).collect();
        let free: Vec<bool> = p.nodes.iter().map(|n| !n.pinned).collect();
        predicted.push((s.name(), project::bounds(&w, &topo, &pu, &free, &hop).ns));
        let linux = project::bounds(&w, &topo, &pu, &vec![true; pu.len()], &hop).ns;
        predicted.push(("linux (nothing pinned)", linux));
    }
    let first = predicted[0].1;
    assert!(first > 0.0);
    for (name, ns) in &predicted {
        assert!(
            (ns - first).abs() <= 1e-9 * first,
            "{name}: {ns} against {first}: {predicted:?}"
        );
    }
}
