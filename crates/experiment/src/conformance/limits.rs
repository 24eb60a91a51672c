//! The known limits: which conformance difference comes from which documented LWK limit. The file
//! (`crates/experiment/data/lwk-known-limits.txt`, built in; `--known-limits FILE` replaces it)
//! has one entry a line:
//!
//! ```text
//! python test.test_fcntl.TestFcntl.test_fcntl_64_bit | fcntl-notify | F_NOTIFY is refused
//! python test.test_signal.*                          | rt-signals   | …
//! python test_pty                                    | pty-module   | the whole module (a crash or a timeout)
//! stress sigq                                        | rt-signals   | …
//! ```
//!
//! KIND is `python` or `stress`; the id is a test id, a module name (the module as a whole: it
//! timed out or died in the LWK) or a prefix ending in `*`; LIMIT is the key of a limit that
//! docs/LWK.md's "Limits" section tags `limit:KEY`; the rest says why. `#` starts a comment.

use serde::Serialize;
use std::path::Path;

/// The built-in table.
pub const BUILTIN: &str = include_str!("../../data/lwk-known-limits.txt");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Python,
    Stress,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub kind: Kind,
    pub id: String,
    pub limit: String,
    pub why: String,
}

/// The cause given for a difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    pub limit: String,
    pub why: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error("{file}:{line}: {what}; a line is `python|stress ID | LIMIT | WHY` (see crates/experiment/data/lwk-known-limits.txt)")]
    Syntax { file: String, line: usize, what: String },
    #[error("reading the known limits {file}: {source}")]
    Read { file: String, source: std::io::Error },
}

#[derive(Debug, Clone, Default)]
pub struct Limits {
    entries: Vec<Entry>,
}

impl Limits {
    pub fn builtin() -> Result<Limits, LimitsError> {
        Limits::parse(BUILTIN, "crates/experiment/data/lwk-known-limits.txt")
    }

    pub fn load(path: &Path) -> Result<Limits, LimitsError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| LimitsError::Read {
            file: file.clone(),
            source,
        })?;
        Limits::parse(&text, &file)
    }

    pub fn parse(text: &str, file: &str) -> Result<Limits, LimitsError> {
        let mut entries = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split_once('#').map_or(raw, |(l, _)| l).trim();
            if line.is_empty() {
                continue;
            }
            let err = |what: &str| LimitsError::Syntax {
                file: file.to_string(),
                line: n + 1,
                what: what.to_string(),
            };
            let mut parts = line.splitn(3, '|').map(str::trim);
            let (Some(head), Some(limit), Some(why)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(err("expected three fields separated by `|`"));
            };
            let (kind, id) = head
                .split_once(char::is_whitespace)
                .ok_or_else(|| err("no id after the kind"))?;
            let kind = match kind {
                "python" => Kind::Python,
                "stress" => Kind::Stress,
                other => return Err(err(&format!("unknown kind `{other}` (python or stress)"))),
            };
            if limit.is_empty() || limit.contains(char::is_whitespace) {
                return Err(err("LIMIT must be one word (a `limit:KEY` tag of docs/LWK.md)"));
            }
            if why.is_empty() {
                return Err(err("WHY is empty: say what the difference comes from"));
            }
            entries.push(Entry {
                kind,
                id: id.trim().to_string(),
                limit: limit.to_string(),
                why: why.to_string(),
            });
        }
        Ok(Limits { entries })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The cause of a difference in `id` (exact match first, then the longest `*` prefix).
    pub fn cause(&self, kind: Kind, id: &str) -> Option<Cause> {
        let of_kind = || self.entries.iter().filter(move |e| e.kind == kind);
        let hit = of_kind().find(|e| e.id == id).or_else(|| {
            of_kind()
                .filter(|e| e.id.strip_suffix('*').is_some_and(|p| id.starts_with(p)))
                .max_by_key(|e| e.id.len())
        })?;
        Some(Cause {
            limit: hit.limit.clone(),
            why: hit.why.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_longest_prefix() {
        let l = Limits::parse(
            "# comment\npython test.a.* | a | any of a\npython test.a.B.* | b | B's\npython test.a.B.c | c | just c\nstress sigq | q | queue # trailing\n",
            "t",
        )
        .expect("parses");
        let cause = |k, id| l.cause(k, id).map(|c| c.limit);
        assert_eq!(cause(Kind::Python, "test.a.B.c").as_deref(), Some("c"));
        assert_eq!(cause(Kind::Python, "test.a.B.d").as_deref(), Some("b"));
        assert_eq!(cause(Kind::Python, "test.a.X.d").as_deref(), Some("a"));
        assert_eq!(cause(Kind::Python, "test.z"), None);
        assert_eq!(cause(Kind::Stress, "sigq").as_deref(), Some("q"));
        assert_eq!(cause(Kind::Python, "sigq"), None);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Limits::parse("python x | a\n", "f.txt").expect_err("two fields");
        assert!(e.to_string().starts_with("f.txt:1:"), "{e}");
        let e = Limits::parse("\nperl x | a | b\n", "f.txt").expect_err("kind");
        assert!(e.to_string().contains("f.txt:2: unknown kind `perl`"), "{e}");
    }

    /// Every limit the table names is one docs/LWK.md documents.
    #[test]
    fn every_builtin_limit_is_documented() {
        let doc = include_str!("../../../../docs/LWK.md");
        let l = Limits::builtin().expect("the built-in table parses");
        for e in l.entries() {
            assert!(
                doc.contains(&format!("limit:{}", e.limit)),
                "{} {}: limit `{}` has no `limit:{}` tag in docs/LWK.md",
                if e.kind == Kind::Python {
                    "python"
                } else {
                    "stress"
                },
                e.id,
                e.limit,
                e.limit
            );
        }
    }
}
