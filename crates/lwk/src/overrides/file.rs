//! The overrides file: parsed, checked against the catalogue, errors with line and column.

use super::catalogue::{implementation_of, CATALOGUE};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Errors of `--overrides FILE`.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("--overrides {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("--overrides {}:{line}:{column}: {reason}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("--overrides: the override object could not be written: {0}")]
    Embed(multios_host::embed::EmbedError),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileForm {
    /// None: `overrides:` with nothing under it (YAML's null), or no `overrides:` at all; an
    /// error naming the line (a null list was read as an empty one and the run went on with no
    /// override).
    overrides: Option<Vec<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    function: String,
    with: String,
}

/// The overrides a run applies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Overrides {
    /// (function, implementation), in the file's order.
    pub entries: Vec<(String, String)>,
}

impl Overrides {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Overrides, OverrideError> {
        let text = std::fs::read_to_string(path).map_err(|source| OverrideError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Overrides::parse(&text, path)
    }

    /// Parses `text` (from `path`, for the messages).
    pub fn parse(text: &str, path: &Path) -> Result<Overrides, OverrideError> {
        let at = |line: usize, column: usize, reason: String| OverrideError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            reason,
        };
        let form: FileForm = serde_yaml::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            // The location leads the message already: not again at its end.
            let reason = e
                .to_string()
                .replacen(&format!(" at line {line} column {column}"), "", 1);
            at(line, column, reason)
        })?;
        let Some(list) = form.overrides else {
            return Err(match text
                .lines()
                .position(|l| l.trim_start().starts_with("overrides:"))
            {
                Some(i) => at(
                    i + 1,
                    1,
                    "`overrides:` holds no list (it is null): list the functions under it (`  - function: clock_gettime` and `    with: tsc`), or run without --overrides".into(),
                ),
                None => at(
                    1,
                    1,
                    "no `overrides:` list (write `overrides:` and the functions under it; `multios lwk hotspots TRACE --write-overrides FILE` writes one)".into(),
                ),
            });
        };
        let mut entries: Vec<(String, String)> = Vec::new();
        for (index, e) in list.into_iter().enumerate() {
            let (line, column) = locate(text, index, "function");
            let Some(&(_, imp, _)) = CATALOGUE.iter().find(|c| c.0 == e.function) else {
                let known: Vec<_> = CATALOGUE.iter().map(|c| c.0).collect();
                return Err(at(
                    line,
                    column,
                    format!(
                        "no LWK implementation of function '{}' (overridable: {})",
                        e.function.escape_debug(),
                        known.join(", ")
                    ),
                ));
            };
            if e.with != imp {
                let (line, column) = locate(text, index, "with");
                return Err(at(
                    line,
                    column,
                    format!(
                        "'{}' is not an implementation of {} (use: with: {imp})",
                        e.with.escape_debug(),
                        e.function
                    ),
                ));
            }
            if entries.iter().any(|(f, _)| *f == e.function) {
                return Err(at(
                    line,
                    column,
                    format!("function '{}' is named twice", e.function),
                ));
            }
            entries.push((e.function, e.with));
        }
        Ok(Overrides { entries })
    }

    /// The overridden functions.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(f, _)| f.as_str())
    }

    /// The file text for `functions` (those with an implementation), as `lwk hotspots` writes it.
    pub fn file_text(functions: &[&str]) -> String {
        let mut s = String::from(
            "# multios LWK function overrides (`multios lwk run --overrides FILE`)\noverrides:\n",
        );
        for f in functions {
            if let Some(imp) = implementation_of(f) {
                s.push_str(&format!("  - function: {f}\n    with: {imp}\n"));
            }
        }
        s
    }
}

/// Line and column (1-based) of the value of `key` in item `index` of the file's `overrides`
/// list (block style: `- function: x` with `with: y` under it, or `- {function: x, with: y}`);
/// the item's own line when the key is not found there, (1, 1) when the item is not.
fn locate(text: &str, index: usize, key: &str) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with("overrides:"))
        .unwrap_or(0);
    let mut items: Vec<usize> = Vec::new();
    let mut indent: Option<usize> = None;
    for (i, l) in lines.iter().enumerate().skip(start) {
        let t = l.trim_start();
        let dash = t
            .strip_prefix('-')
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']));
        if !dash {
            continue;
        }
        let ind = l.len() - t.len();
        if *indent.get_or_insert(ind) == ind {
            items.push(i);
        }
    }
    let Some(&first) = items.get(index) else {
        return (1, 1);
    };
    let end = items.get(index + 1).copied().unwrap_or(lines.len());
    for (i, l) in lines.iter().enumerate().take(end).skip(first) {
        let code = l.split(" #").next().unwrap_or(l);
        let mut from = 0;
        while let Some(p) = code[from..].find(key) {
            let at = from + p;
            from = at + key.len();
            let word_start =
                at == 0 || !matches!(code.as_bytes()[at - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_');
            let Some(after) = code[from..].trim_start_matches([' ', '\t']).strip_prefix(':') else {
                continue;
            };
            if word_start {
                let value = after.trim_start_matches([' ', '\t']);
                let col = code.len() - value.len();
                return (i + 1, code[..col].chars().count() + 1);
            }
        }
    }
    (first + 1, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Overrides, OverrideError> {
        Overrides::parse(t, Path::new("o.yaml"))
    }

    #[test]
    fn a_file_names_functions_and_their_implementations() {
        let o = parse(
            "overrides:\n  - function: clock_gettime\n    with: tsc\n  - function: time\n    with: tsc\n",
        )
        .expect("valid file");
        assert_eq!(o.functions().collect::<Vec<_>>(), ["clock_gettime", "time"]);
    }

    #[test]
    fn a_malformed_file_gives_the_line_and_column() {
        let e = parse("overrides:\n  - function: clock_gettime\n   with: [tsc\n").expect_err("malformed");
        let OverrideError::Syntax { line, column, .. } = e else {
            panic!("{e}")
        };
        assert!(line >= 2, "line {line}");
        assert!(column >= 1);
        let msg = parse("overrides:\n  - function: clock_gettime\n    with: tsc\n    extra: 1\n")
            .expect_err("unknown field")
            .to_string();
        assert!(msg.starts_with("--overrides o.yaml:"), "{msg}");
    }

    #[test]
    fn an_unknown_function_or_implementation_is_named_where_it_is() {
        let e = parse(
            "overrides:\n  - function: clock_gettime\n    with: tsc\n  - function: fopen\n    with: tsc\n",
        )
        .expect_err("fopen has no implementation")
        .to_string();
        assert!(
            e.contains("o.yaml:4:") && e.contains("'fopen'") && e.contains("clock_gettime"),
            "{e}"
        );
        let e = parse("overrides:\n  - function: time\n    with: vdso\n")
            .expect_err("wrong impl")
            .to_string();
        assert!(e.contains("o.yaml:3:") && e.contains("with: tsc"), "{e}");
    }

    #[test]
    fn the_file_hotspots_writes_reads_back() {
        let text = Overrides::file_text(&["clock_gettime", "read", "gettimeofday"]);
        let o = parse(&text).expect("generated file parses");
        assert_eq!(
            o.functions().collect::<Vec<_>>(),
            ["clock_gettime", "gettimeofday"]
        );
    }
}
