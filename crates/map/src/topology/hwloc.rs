//! hwloc's XML topologies (`lstopo --of xml FILE.xml`, versions 1 and 2, real machines or synthetic
//! ones from `lstopo --input "pack:2 core:64 pu:1" --of xml`) read into a [`Topology`].
//!
//! The tree of `<object type="…">` elements is followed from the root: packages, dies, groups, NUMA
//! nodes, data and unified caches and cores become levels in the order they nest; the machine,
//! instruction caches and memory-side caches are transparent (they add no distance); I/O and Misc
//! objects are skipped with their subtrees. hwloc 2 attaches NUMA nodes to an object as memory
//! children, which by hwloc's rule span exactly that object's PUs: they add no distance either (the
//! object they hang from — a package, or the Group hwloc makes for `numa:2` — is the level); an
//! hwloc 1 NUMA node, which holds its PUs, is a level. A PU lacking a level that others have (an
//! irregular machine) gets an object of its own there. Errors name the file, the line and column of
//! the element at fault, and what would fix it.

use super::{Topology, TopologyError};
use roxmltree::Node;
use std::collections::BTreeSet;
use std::path::Path;

/// What an object type becomes.
enum Role {
    /// A level of the tree, named as in synthetic strings.
    Level(&'static str),
    /// A processing unit (the leaves).
    Pu,
    /// No level of its own; its children are followed.
    Transparent,
    /// Skipped with its subtree (I/O and Misc objects hold no PUs).
    Skip,
}

/// The object types hwloc writes (2.x names, and 1.x's Socket and Cache) and what each becomes.
fn role(ty: &str, node: Node) -> Option<Role> {
    Some(match ty {
        "Machine" | "System" => Role::Transparent,
        "Package" | "Socket" => Role::Level("package"),
        "Die" => Role::Level("die"),
        "Group" => Role::Level("group"),
        "NUMANode" => Role::Level("numa"),
        "L5Cache" => Role::Level("l5"),
        "L4Cache" => Role::Level("l4"),
        "L3Cache" => Role::Level("l3"),
        "L2Cache" => Role::Level("l2"),
        "L1Cache" => Role::Level("l1"),
        "L1iCache" | "L2iCache" | "L3iCache" | "MemCache" => Role::Transparent,
        // hwloc 1.x: one Cache type, its level in `depth`, instruction caches with cache_type 2
        "Cache" => match (node.attribute("depth"), node.attribute("cache_type")) {
            (_, Some("2")) => Role::Transparent,
            (Some("1"), _) => Role::Level("l1"),
            (Some("2"), _) => Role::Level("l2"),
            (Some("3"), _) => Role::Level("l3"),
            (Some("4"), _) => Role::Level("l4"),
            _ => Role::Transparent,
        },
        "Core" => Role::Level("core"),
        "PU" => Role::Pu,
        "Bridge" | "PCIDev" | "OSDev" | "Misc" => Role::Skip,
        _ => return None,
    })
}

const KNOWN: &str = "Machine, Package, Die, Group, NUMANode, L1Cache–L5Cache, L1iCache–L3iCache, MemCache, \
                     Core, PU, Bridge, PCIDev, OSDev, Misc (hwloc 1.x: Socket, Cache)";

/// Reads an hwloc XML file.
pub fn from_file(path: &Path) -> Result<Topology, TopologyError> {
    let text = std::fs::read_to_string(path).map_err(|e| TopologyError::Read {
        path: path.display().to_string(),
        msg: format!("{e}; write one with `lstopo --of xml {}`", path.display()),
    })?;
    from_xml(&text, &path.display().to_string())
}

/// One PU found: its OS number, the element (for errors) and its ancestors' (level, object key).
struct Found {
    os: u32,
    line: u32,
    column: u32,
    ancestors: Vec<(&'static str, String)>,
}

struct Walk<'a> {
    path: &'a str,
    pus: Vec<Found>,
}

impl Walk<'_> {
    fn error(&self, node: Node, what: String) -> TopologyError {
        let pos = node.document().text_pos_at(node.range().start);
        TopologyError::Xml {
            path: self.path.to_string(),
            line: pos.row,
            column: pos.col,
            what,
        }
    }

    /// Whether `node`'s subtree holds a PU.
    fn holds_pu(node: Node) -> bool {
        node.descendants()
            .any(|d| d.has_tag_name("object") && d.attribute("type") == Some("PU"))
    }

    fn object(
        &mut self,
        node: Node,
        ancestors: &mut Vec<(&'static str, String)>,
    ) -> Result<(), TopologyError> {
        let Some(ty) = node.attribute("type") else {
            return Err(self.error(
                node,
                "<object> has no type attribute (hwloc writes e.g. type=\"Core\")".into(),
            ));
        };
        let Some(role) = role(ty, node) else {
            return Err(self.error(
                node,
                format!("<object type=\"{ty}\">: unknown object type; hwloc's types are {KNOWN}"),
            ));
        };
        let key = format!("{}", node.range().start);
        match role {
            Role::Skip => Ok(()),
            Role::Pu => {
                let os = match node.attribute("os_index") {
                    Some(v) => v.parse::<u32>().map_err(|_| {
                        self.error(
                            node,
                            format!("<object type=\"PU\">: os_index=\"{v}\" is not a CPU number"),
                        )
                    })?,
                    None => {
                        return Err(self.error(
                            node,
                            "<object type=\"PU\"> has no os_index attribute (the OS CPU number)".into(),
                        ))
                    }
                };
                let pos = node.document().text_pos_at(node.range().start);
                self.pus.push(Found {
                    os,
                    line: pos.row,
                    column: pos.col,
                    ancestors: ancestors.clone(),
                });
                Ok(())
            }
            // a memory child (hwloc 2): its parent's PUs, no distance of its own
            Role::Level("numa") if !Self::holds_pu(node) => Ok(()),
            Role::Level(name) => {
                ancestors.push((name, key));
                let r = self.children(node, ancestors);
                ancestors.pop();
                r
            }
            Role::Transparent => self.children(node, ancestors),
        }
    }

    fn children(
        &mut self,
        node: Node,
        ancestors: &mut Vec<(&'static str, String)>,
    ) -> Result<(), TopologyError> {
        for c in node.children().filter(|c| c.has_tag_name("object")) {
            self.object(c, ancestors)?;
        }
        Ok(())
    }
}

/// Parses hwloc XML text; `path` names it in errors.
pub fn from_xml(text: &str, path: &str) -> Result<Topology, TopologyError> {
    // hwloc writes `<!DOCTYPE topology SYSTEM "hwloc2.dtd">`; the DTD is not needed to read it
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| {
        let pos = e.pos();
        TopologyError::Xml {
            path: path.to_string(),
            line: pos.row,
            column: pos.col,
            what: format!("not well-formed XML: {e}"),
        }
    })?;
    let root = doc.root_element();
    let mut walk = Walk {
        path,
        pus: Vec::new(),
    };
    if !root.has_tag_name("topology") {
        return Err(walk.error(
            root,
            format!(
                "the root element is <{}>, not <topology>: give hwloc's XML (`lstopo --of xml FILE.xml`)",
                root.tag_name().name()
            ),
        ));
    }
    let mut ancestors = Vec::new();
    walk.children(root, &mut ancestors)?;
    let found = walk.pus;
    if found.is_empty() {
        return Err(TopologyError::XmlFile {
            path: path.to_string(),
            what: "no <object type=\"PU\"> in the file: it describes no processing unit".into(),
        });
    }
    let mut seen = BTreeSet::new();
    for f in &found {
        if !seen.insert(f.os) {
            return Err(TopologyError::Xml {
                path: path.to_string(),
                line: f.line,
                column: f.column,
                what: format!("a second PU with os_index=\"{}\"", f.os),
            });
        }
    }
    // The levels in the order they nest, merged over all PUs (an irregular machine may lack a level
    // under some of its PUs).
    let mut names: Vec<&'static str> = Vec::new();
    for f in &found {
        let mut at = 0;
        for (name, _) in &f.ancestors {
            match names.iter().position(|n| n == name) {
                Some(p) => at = p + 1,
                None => {
                    names.insert(at, name);
                    at += 1;
                }
            }
        }
    }
    let keys = found
        .iter()
        .map(|f| {
            let mut key = String::new();
            let k: Vec<String> = names
                .iter()
                .map(|level| {
                    // the PU's object at this level, or one of its own under the parent
                    let own = f.ancestors.iter().find(|(n, _)| n == level);
                    key.push('/');
                    key.push_str(own.map_or("-", |(_, k)| k.as_str()));
                    key.clone()
                })
                .collect();
            (f.os, k)
        })
        .collect();
    names.push("pu");
    Ok(Topology::from_keys(format!("hwloc XML {path}"), &names, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_PACKAGES: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0">
    <object type="NUMANode" os_index="0"/>
    <object type="Package" os_index="0">
      <object type="Core" os_index="0"><object type="PU" os_index="0"/><object type="PU" os_index="2"/></object>
      <object type="Core" os_index="1"><object type="PU" os_index="1"/><object type="PU" os_index="3"/></object>
    </object>
    <object type="Package" os_index="1">
      <object type="L1iCache"><object type="Core" os_index="2"><object type="PU" os_index="4"/></object></object>
    </object>
    <object type="Bridge"><object type="PCIDev"/></object>
  </object>
</topology>
"#;

    #[test]
    fn reads_levels_and_hops() {
        let t = from_xml(TWO_PACKAGES, "t.xml").expect("parses");
        let names: Vec<&str> = t.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["package", "core", "pu"]);
        let os: Vec<u32> = t.pus.iter().map(|p| p.os).collect();
        assert_eq!(os, [0, 2, 1, 3, 4]);
        assert_eq!(t.hops(0, 1), 1); // two PUs of one core
        assert_eq!(t.hops(0, 2), 2); // two cores of one package
        assert_eq!(t.hops(0, 4), 3); // across packages
        assert_eq!(t.levels[0].arity, 2);
        assert_eq!(t.levels[2].arity, 2);
    }

    #[test]
    fn errors_name_the_element() {
        let no_os = TWO_PACKAGES.replace("<object type=\"PU\" os_index=\"3\"/>", "<object type=\"PU\"/>");
        let e = from_xml(&no_os, "t.xml").expect_err("no os_index").to_string();
        assert!(
            e.starts_with("t.xml, line 7, column ") && e.contains("no os_index"),
            "{e}"
        );
        let bad = TWO_PACKAGES.replace("type=\"Core\" os_index=\"1\"", "type=\"Kore\"");
        let e = from_xml(&bad, "t.xml").expect_err("type").to_string();
        assert!(
            e.contains("line 7, column 7") && e.contains("type=\"Kore\""),
            "{e}"
        );
        let dup = TWO_PACKAGES.replace("os_index=\"4\"", "os_index=\"2\"");
        let e = from_xml(&dup, "t.xml").expect_err("duplicate").to_string();
        assert!(e.contains("line 10") && e.contains("second PU"), "{e}");
        let cut = &TWO_PACKAGES[..300];
        let e = from_xml(cut, "t.xml").expect_err("cut").to_string();
        assert!(e.contains("not well-formed XML"), "{e}");
        let e = from_xml("<graphml/>", "g.xml").expect_err("root").to_string();
        assert!(e.contains("line 1, column 1") && e.contains("<graphml>"), "{e}");
        let e = from_xml("<topology><object type=\"Machine\"/></topology>", "e.xml")
            .expect_err("empty")
            .to_string();
        assert!(e.contains("no <object type=\"PU\">"), "{e}");
    }
}
