//! The inputs a suite generates, deterministically (the same bytes on every machine and run):
//! text, pseudo-random bytes, a small C project with its Makefile, HPC Challenge's hpccinf.txt,
//! or a file's content given inline in the suite.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What can go wrong generating an input.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("writing {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("input '{file}': {why}")]
    Bad { file: String, why: String },
}

/// One generated file (a `[[workload.input]]` table).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Path inside the workload's directory (a directory for `cproject`).
    pub file: String,
    /// text | random | cproject | hpccinf | content
    pub kind: String,
    /// Size for text and random (MiB, may be fractional).
    #[serde(default)]
    pub mib: Option<f64>,
    /// Source files of a cproject; N of an hpccinf.
    #[serde(default)]
    pub count: Option<u32>,
    /// The file's content, for `content`.
    #[serde(default)]
    pub text: Option<String>,
    /// Seed of `random` (default 1).
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The largest `text` or `random` input, MiB: it is made in memory before it is written.
pub const MAX_MIB: f64 = 1024.0;
/// The most source files of a `cproject`.
pub const MAX_CPROJECT_FILES: u32 = 10_000;
/// The largest HPL order N of an `hpccinf` (its matrix is 8·N² bytes: 80 GB at the cap).
pub const MAX_HPL_ORDER: u32 = 100_000;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `file` names a path inside a workload's directory: relative, not empty, no `..`
/// component (an input, a suite's `stdin`, a check's `creates`).
pub fn inside_workload_dir(file: &str) -> bool {
    use std::path::Component;
    !file.is_empty()
        && Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

impl Input {
    fn bad(&self, why: impl Into<String>) -> InputError {
        InputError::Bad {
            file: self.file.clone(),
            why: why.into(),
        }
    }

    fn bytes(&self) -> Result<usize, InputError> {
        match self.mib {
            Some(m) if m > 0.0 && m <= MAX_MIB => Ok((m * 1024.0 * 1024.0) as usize),
            Some(m) if m > MAX_MIB => Err(self.bad(format!(
                "mib = {m} is too large: at most {MAX_MIB} (the input is made in memory)"
            ))),
            _ => Err(self.bad(format!("kind '{}' needs mib = SIZE (MiB, > 0)", self.kind))),
        }
    }

    /// `count` of a `cproject` or `hpccinf`, within 1..=`max`.
    fn count(&self, what: &str, max: u32) -> Result<u32, InputError> {
        match self.count {
            None => Err(self.bad(format!("kind '{}' needs count = {what}", self.kind))),
            Some(n) if (1..=max).contains(&n) => Ok(n),
            Some(n) => Err(self.bad(format!(
                "count = {n} is out of range: kind '{}' takes count = {what} in 1–{max}",
                self.kind
            ))),
        }
    }

    /// Checks the input's fields without making anything: the error names the file and the field.
    pub fn check(&self) -> Result<(), InputError> {
        if !inside_workload_dir(&self.file) {
            return Err(self.bad("file must be a relative path inside the workload's directory"));
        }
        match self.kind.as_str() {
            "text" | "random" => self.bytes().map(drop),
            "content" if self.text.is_none() => Err(self.bad("kind 'content' needs text = \"…\"")),
            "content" => Ok(()),
            "hpccinf" => self.count("N (HPL order)", MAX_HPL_ORDER).map(drop),
            "cproject" => self.count("FILES", MAX_CPROJECT_FILES).map(drop),
            k => Err(self.bad(format!(
                "unknown kind '{k}': use text, random, content, hpccinf or cproject"
            ))),
        }
    }

    /// Writes the input into `dir`.
    pub fn generate(&self, dir: &Path) -> Result<(), InputError> {
        // A malformed input is an error before anything is made on disk.
        self.check()?;
        let path = dir.join(&self.file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        match self.kind.as_str() {
            "text" => write_file(&path, &text(self.bytes()?)),
            "random" => write_file(&path, &random(self.bytes()?, self.seed.unwrap_or(1))),
            "content" => match &self.text {
                Some(t) => write_file(&path, t.as_bytes()),
                None => Err(self.bad("kind 'content' needs text = \"…\"")),
            },
            "hpccinf" => {
                let n = self.count("N (HPL order)", MAX_HPL_ORDER)?;
                write_file(&path, multios_lwk::bench::hpcc::input(n, 64).as_bytes())
            }
            "cproject" => {
                let n = self.count("FILES", MAX_CPROJECT_FILES)?;
                cproject(&path, n)
            }
            k => Err(self.bad(format!(
                "unknown kind '{k}': use text, random, content, hpccinf or cproject"
            ))),
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    let mut f = std::fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))
}

/// `len` bytes of line-structured, moderately compressible text (numbered lines of words).
pub fn text(len: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
        "lima", "mike", "november", "oscar", "papa",
    ];
    let mut out = Vec::with_capacity(len + 128);
    let mut i: u64 = 1;
    while out.len() < len {
        let a = (i * 7919) % 100_003;
        let line = format!(
            "{i:08} {} {} {a} {} {:x}\n",
            WORDS[(a % 16) as usize],
            WORDS[(i % 13) as usize],
            WORDS[((a / 16) % 16) as usize],
            a * 31
        );
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// `len` pseudo-random bytes (xorshift64*, seeded), half of them drawn from a small alphabet so
/// that compressors have some work to do.
pub fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.max(1);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        for b in v.to_le_bytes() {
            out.push(if b & 1 == 0 {
                b
            } else {
                b"ACGT"[(b >> 1) as usize % 4]
            });
        }
    }
    out.truncate(len);
    out
}

/// A C project of `n` source files, each with a few functions, a main and a Makefile building them.
fn cproject(dir: &Path, n: u32) -> Result<(), InputError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut objs = Vec::new();
    let mut main = String::from("#include <stdio.h>\n");
    for i in 0..n {
        let mut src = String::new();
        for j in 0..8 {
            src.push_str(&format!(
                "static unsigned f{j}(unsigned x) {{ for (int k = 0; k < {}; k++) x = x * 2654435761u + {j}; return x; }}\n",
                10 + j
            ));
        }
        src.push_str(&format!(
            "unsigned mod{i}(unsigned x) {{ return f0(x) ^ f1(x) ^ f2(x) ^ f3(x) ^ f4(x) ^ f5(x) ^ f6(x) ^ f7(x); }}\n"
        ));
        write_file(&dir.join(format!("mod{i}.c")), src.as_bytes())?;
        main.push_str(&format!("unsigned mod{i}(unsigned);\n"));
        objs.push(format!("mod{i}.o"));
    }
    main.push_str("int main(void) { unsigned s = 1;\n");
    for i in 0..n {
        main.push_str(&format!("  s = mod{i}(s);\n"));
    }
    main.push_str("  printf(\"%u\\n\", s); return 0; }\n");
    write_file(&dir.join("main.c"), main.as_bytes())?;
    let mk = format!(
        "CFLAGS = -O2\nOBJS = main.o {}\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%.o: %.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n",
        objs.join(" ")
    );
    write_file(&dir.join("Makefile"), mk.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_generated_inputs_are_deterministic_and_sized() {
        assert_eq!(text(10_000), text(10_000));
        assert_eq!(text(10_000).len(), 10_000);
        assert_eq!(random(4096, 7), random(4096, 7));
        assert_ne!(random(4096, 7), random(4096, 8));
        assert_eq!(random(1000, 1).len(), 1000);
    }

    #[test]
    fn issue_15_bad_inputs_name_the_file_and_the_fix() {
        let i = Input {
            file: "x".into(),
            kind: "text".into(),
            mib: None,
            count: None,
            text: None,
            seed: None,
        };
        // A malformed input makes nothing on disk (this test once left a /nonexistent directory
        // behind, as root, which later runs' tests and preload statistics then found).
        let dir = std::env::temp_dir().join(format!("multios-inputs-never-made-{}", std::process::id()));
        let e = i.generate(&dir).expect_err("no size").to_string();
        assert!(e.contains("'x'") && e.contains("mib"), "{e}");
        assert!(!dir.exists(), "{} was made", dir.display());
        let e = Input {
            file: "../y".into(),
            ..i
        }
        .generate(Path::new("/tmp"))
        .expect_err("outside")
        .to_string();
        assert!(e.contains("relative path"), "{e}");
    }

    #[test]
    fn issue_16_sizes_and_counts_are_capped_naming_the_field() {
        let i = Input {
            file: "big".into(),
            kind: "text".into(),
            mib: Some(1e13),
            count: None,
            text: None,
            seed: None,
        };
        let e = i.check().expect_err("too large").to_string();
        assert!(
            e.contains("'big'") && e.contains("mib = 10000000000000") && e.contains("at most 1024"),
            "{e}"
        );
        assert!(Input {
            mib: Some(f64::INFINITY),
            ..i.clone()
        }
        .check()
        .is_err());
        assert!(Input {
            mib: Some(f64::NAN),
            ..i.clone()
        }
        .check()
        .is_err());
        assert!(Input {
            mib: Some(2.0),
            ..i.clone()
        }
        .check()
        .is_ok());
        for (kind, n) in [
            ("cproject", u32::MAX),
            ("cproject", 0),
            ("hpccinf", 4_000_000_000),
        ] {
            let e = Input {
                kind: kind.into(),
                mib: None,
                count: Some(n),
                ..i.clone()
            }
            .check()
            .expect_err("out of range")
            .to_string();
            assert!(
                e.contains(&format!("count = {n}")) && e.contains("out of range"),
                "{e}"
            );
        }
    }
}
