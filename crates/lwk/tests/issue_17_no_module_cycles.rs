//! Issue #17: the files of `crates/lwk/src` import each other without a cycle (before it,
//! `run.rs` ↔ `syscall/exec.rs` and `machine.rs` ↔ `run.rs` did). The graph is read from the
//! source text: every `crate::…`, `super::…` and `self::…` path, and paths through a child module
//! a file declares (`mod elf;` … `elf::load`), resolved to the longest prefix that names a file.
//! Test modules (`#[cfg(test)] mod tests`) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, as paths relative to `root` with '/' separators.
fn sources(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The module path of a source file (`syscall/mod.rs` → `syscall`, `lib.rs` → root); None for
/// the binaries, which are crates of their own.
fn module_of(file: &str) -> Option<Vec<String>> {
    if file.starts_with("bin/") {
        return None;
    }
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    Some(parts)
}

/// The code of `text` without comments and without its test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(k) => &text[..k],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path starting at byte `k` of `s` (`a::b::{c, d::e}` gives `a::b::c` and `a::b::d::e`),
/// as segment lists.
fn paths_at(s: &[char], mut k: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix;
    loop {
        while k < s.len() && s[k].is_whitespace() {
            k += 1;
        }
        if k < s.len() && s[k] == '{' {
            k += 1;
            loop {
                let before = k;
                k = paths_at(s, k, segs.clone(), out);
                while k < s.len() && (s[k].is_whitespace() || s[k] == ',') {
                    k += 1;
                }
                if k >= s.len() || s[k] == '}' {
                    return k + 1;
                }
                if k == before {
                    k += 1; // `*` or another token that is not a path
                }
            }
        }
        let start = k;
        while k < s.len() && is_ident(s[k]) {
            k += 1;
        }
        if k > start {
            segs.push(s[start..k].iter().collect());
        }
        if k + 1 < s.len() && s[k] == ':' && s[k + 1] == ':' {
            k += 2;
        } else {
            out.push(segs);
            return k;
        }
    }
}

/// The files `file` (module `module`, source `text`) takes names from.
fn imports(file: &str, module: &[String], text: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let text = code(text);
    let s: Vec<char> = text.chars().collect();
    let children: BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub ")
                .or_else(|| l.strip_prefix("pub(crate) "))
                .unwrap_or(l);
            rest.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(|m| m.trim().to_string())
        })
        .collect();
    let mut paths = Vec::new();
    let mut k = 0;
    while k < s.len() {
        let starts_word = k == 0 || !(is_ident(s[k - 1]) || s[k - 1] == ':');
        if starts_word && is_ident(s[k]) {
            let mut e = k;
            while e < s.len() && is_ident(s[e]) {
                e += 1;
            }
            let word: String = s[k..e].iter().collect();
            let is_root = matches!(word.as_str(), "crate" | "super" | "self") || children.contains(&word);
            if is_root && e + 1 < s.len() && s[e] == ':' && s[e + 1] == ':' {
                k = paths_at(&s, k, Vec::new(), &mut paths);
                continue;
            }
            k = e;
        } else {
            k += 1;
        }
    }
    let mut deps = BTreeSet::new();
    for p in paths {
        let mut base: Vec<String> = module.to_vec();
        let mut rest = p.as_slice();
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            Some("self") => rest = &rest[1..],
            _ => {}
        }
        let full: Vec<&String> = base.iter().chain(rest.iter()).collect();
        for n in (1..=full.len()).rev() {
            let stem = full[..n].iter().map(|s| s.as_str()).collect::<Vec<_>>().join("/");
            let hit = [format!("{stem}.rs"), format!("{stem}/mod.rs")]
                .into_iter()
                .find(|f| files.contains(f));
            if let Some(f) = hit {
                if f != file {
                    deps.insert(f);
                }
                break;
            }
        }
    }
    deps
}

/// A cycle of `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(k) = stack.iter().position(|s| s == v) {
            let mut cycle = stack[k..].to_vec();
            cycle.push(v.to_string());
            return Some(cycle);
        }
        if done.contains(v) {
            return None;
        }
        stack.push(v.to_string());
        for w in graph.get(v).into_iter().flatten() {
            if let Some(c) = visit(w, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(v.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|v| visit(v, graph, &mut done, &mut Vec::new()))
}

fn graph_of(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut list = Vec::new();
    sources(root, root, &mut list);
    let files: BTreeSet<String> = list.iter().cloned().collect();
    let mut graph = BTreeMap::new();
    for f in &list {
        let Some(module) = module_of(f) else { continue };
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("reading {f}: {e}"));
        graph.insert(f.clone(), imports(f, &module, &text, &files));
    }
    graph
}

#[test]
fn issue_17_lwk_source_files_import_each_other_without_a_cycle() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph_of(&root);
    // The reader sees the imports that matter (a check that it reads anything at all).
    let run = &graph["run.rs"];
    for f in ["machine.rs", "loader/mod.rs", "kernel.rs"] {
        assert!(run.contains(f), "run.rs should import {f}; read: {run:?}");
    }
    assert!(graph["signal/frame.rs"].contains("kernel.rs"));
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "crates/lwk/src has an import cycle: {} (move the shared item to a file both can use)",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn issue_17_the_cycle_finder_finds_the_cycles_issue_17_removed() {
    // Today's files, with run.rs and syscall/exec.rs importing each other as before issue #17.
    let mut graph = BTreeMap::new();
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    graph.insert("run.rs".to_string(), set(&["syscall/exec.rs", "machine.rs"]));
    graph.insert("syscall/exec.rs".to_string(), set(&["run.rs"]));
    graph.insert("machine.rs".to_string(), set(&[]));
    let cycle = find_cycle(&graph).unwrap_or_default();
    assert_eq!(cycle, ["run.rs", "syscall/exec.rs", "run.rs"]);
    // And the path reader resolves brace groups, `super::` and child modules.
    let files = set(&["lib.rs", "a.rs", "a/b.rs", "c/mod.rs", "c/d.rs"]);
    let deps = imports(
        "c/mod.rs",
        &["c".to_string()],
        "mod d;\nuse crate::{a::{b::X, Y}, c};\nfn f() { d::g(); super::a::h(); }\n",
        &files,
    );
    assert_eq!(deps, set(&["a.rs", "a/b.rs", "c/d.rs"]));
}
