//! The trace's lines: header, events, footer, and reading a trace back.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The format's name, in the header.
pub const FORMAT: &str = "multios-lwk-trace";
/// Its version: bumped when a field changes meaning or goes, or a kind is added. Version 2
/// (issue #13) added calls the LWK served itself (`local`) and the `frames` of each event;
/// version-1 traces read as before.
pub const VERSION: u32 = 2;

/// Errors reading or writing a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{}: not a multios LWK trace (its first line names format {found:?}); write one with `multios lwk run --trace FILE`", path.display())]
    NotATrace { path: PathBuf, found: String },
    #[error("{}: trace format version {found} is newer than this multios reads ({max}); use a newer multios", path.display())]
    Version { path: PathBuf, found: u32, max: u32 },
}

/// The first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub program: String,
    /// The VMM's pid (the guest's getpid).
    pub pid: u32,
    /// Set in a forked child's trace: the parent's pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
}

/// What an event is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A system call the LWK delegated to Linux.
    Call,
    /// A CPU exception the LWK turned into a signal for the guest's handler.
    Fault,
    /// A system call the LWK served itself (in the VMM: memory, threads, signals…): it left the
    /// guest like a delegated one, without a Linux system call behind it.
    Local,
}

/// One forwarded event.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// Start, ns since the run began.
    pub t_ns: u64,
    /// The vCPU.
    pub cpu: u32,
    pub kind: Kind,
    /// The call's name (a fault: the signal's, e.g. "SIGSEGV").
    pub name: String,
    /// The system call's number, or the exception vector.
    pub nr: u64,
    /// Time the VMM took, ns (a fault: the delivery).
    pub dur_ns: u64,
    /// The result (a fault: the faulting address).
    pub ret: i64,
    /// Guest address the call returns to (a fault: the faulting instruction).
    pub rip: u64,
    /// Return address of the function that called the wrapper, found on the guest's stack (0: none).
    pub caller: u64,
    /// Return addresses found deeper on the stack (`caller.rs`), innermost first: the functions
    /// the call was made under (absent in version-1 traces).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<u64>,
}

impl Event {
    /// Writes the event as one JSON line (by hand: this runs on every traced call).
    pub fn write_line(&self, w: &mut impl Write) -> std::io::Result<()> {
        let kind = match self.kind {
            Kind::Call => "call",
            Kind::Fault => "fault",
            Kind::Local => "local",
        };
        write!(
            w,
            r#"{{"t_ns":{},"cpu":{},"kind":"{kind}","name":"{}","nr":{},"dur_ns":{},"ret":{},"rip":{},"caller":{}"#,
            self.t_ns, self.cpu, self.name, self.nr, self.dur_ns, self.ret, self.rip, self.caller
        )?;
        if !self.frames.is_empty() {
            w.write_all(br#","frames":["#)?;
            for (i, f) in self.frames.iter().enumerate() {
                write!(w, "{}{f}", if i > 0 { "," } else { "" })?;
            }
            w.write_all(b"]")?;
        }
        w.write_all(b"}\n")
    }
}

#[derive(Deserialize)]
struct Footer {
    maps: String,
}

/// A trace read back.
#[derive(Debug, Clone)]
pub struct Trace {
    pub header: Header,
    pub events: Vec<Event>,
    /// The guest's /proc/self/maps: one text per program image (an execve writes the map of the
    /// image it replaces), the last one at the end of the run.
    pub maps: Vec<String>,
    /// For each event, the index in `maps` of the map it was made under.
    pub epoch: Vec<usize>,
    /// The line of an event cut off at the end of the file (a run killed while it wrote it, with
    /// SIGKILL: no trace end), which was left out.
    pub truncated_line: Option<usize>,
}

impl Trace {
    /// Reads `path`.
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let parse = |line: usize, reason: String| TraceError::Parse {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let f = std::fs::File::open(path).map_err(io)?;
        let mut lines = std::io::BufReader::new(f).lines();
        let first = lines
            .next()
            .ok_or_else(|| parse(1, "empty file".into()))?
            .map_err(io)?;
        let v: serde_json::Value = serde_json::from_str(&first).map_err(|e| parse(1, e.to_string()))?;
        let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != FORMAT {
            return Err(TraceError::NotATrace {
                path: path.to_path_buf(),
                found: format.to_string(),
            });
        }
        let header: Header = serde_json::from_value(v).map_err(|e| parse(1, e.to_string()))?;
        if header.version > VERSION {
            return Err(TraceError::Version {
                path: path.to_path_buf(),
                found: header.version,
                max: VERSION,
            });
        }
        let mut events = Vec::new();
        let mut maps = Vec::new();
        let mut epoch = Vec::new();
        let mut truncated_line = None;
        let mut lines = lines.enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let line = line.map_err(io)?;
            if line.is_empty() {
                continue;
            }
            if line.starts_with(r#"{"maps""#) {
                let f: Footer = serde_json::from_str(&line).map_err(|e| parse(i + 2, e.to_string()))?;
                maps.push(f.maps);
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(e) => events.push(e),
                // The file's last line, cut off (the run was killed while writing it): left out.
                Err(e) if e.is_eof() && lines.peek().is_none() => {
                    truncated_line = Some(i + 2);
                    break;
                }
                Err(e) => return Err(parse(i + 2, format!("{e} (within the line)"))),
            }
            epoch.push(maps.len());
        }
        // Events after the last map (a run that did not end its trace) are named with it.
        let last = maps.len().saturating_sub(1);
        for e in &mut epoch {
            *e = (*e).min(last);
        }
        Ok(Trace {
            header,
            events,
            maps,
            epoch,
            truncated_line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_line_reads_back_as_the_same_event() {
        let e = Event {
            t_ns: 12,
            cpu: 1,
            kind: Kind::Call,
            name: "write".into(),
            nr: 1,
            dur_ns: 900,
            ret: -14,
            rip: 0x7f00_0000_1234,
            caller: 0x40_1000,
            frames: vec![],
        };
        let mut buf = Vec::new();
        e.write_line(&mut buf).expect("test setup");
        let back: Event = serde_json::from_slice(&buf).expect("test setup");
        assert_eq!(back, e);
        let local = Event {
            kind: Kind::Local,
            frames: vec![0x40_1000, 0x40_2000],
            ..e
        };
        let mut buf = Vec::new();
        local.write_line(&mut buf).expect("test setup");
        assert!(buf.ends_with(b"]}\n"));
        let back: Event = serde_json::from_slice(&buf).expect("test setup");
        assert_eq!(back, local);
    }

    #[test]
    fn a_file_that_is_not_a_trace_is_named_with_what_would_fix_it() {
        let dir = std::env::temp_dir().join(format!("multios-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test setup");
        let p = dir.join("x.json");
        std::fs::write(&p, "{\"format\":\"other\"}\n").expect("test setup");
        let e = Trace::load(&p).expect_err("must fail").to_string();
        assert!(
            e.contains("not a multios LWK trace") && e.contains("--trace"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).expect("test setup");
    }

    /// Reported 2026-11-28: a trace whose run was killed with SIGKILL ends in a cut-off line, and
    /// `lwk hotspots` refused the whole file.
    #[test]
    fn a_trace_cut_off_in_its_last_line_reads_without_it() {
        let dir = std::env::temp_dir().join(format!("multios-trace-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test setup");
        let p = dir.join("t.jsonl");
        let header = format!(r#"{{"format":"{FORMAT}","version":1,"program":"p","pid":1}}"#);
        let e = Event {
            t_ns: 12,
            cpu: 0,
            kind: Kind::Call,
            name: "write".into(),
            nr: 1,
            dur_ns: 900,
            ret: 1,
            rip: 0x40_1000,
            caller: 0,
            frames: vec![],
        };
        let mut body = Vec::new();
        e.write_line(&mut body).expect("test setup");
        let whole = [header.as_bytes(), b"\n", &body, &body[..body.len() / 2]].concat();
        std::fs::write(&p, &whole).expect("test setup");
        let t = Trace::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.events.len(), t.truncated_line), (1, Some(3)));
        // A bad line that is not the last is still an error naming its line.
        let bad = [header.as_bytes(), b"\n", &body[..body.len() / 2], b"\n", &body].concat();
        std::fs::write(&p, &bad).expect("test setup");
        let err = Trace::load(&p).expect_err("a bad line in the middle").to_string();
        assert!(err.contains(":2"), "{err}");
        std::fs::remove_dir_all(&dir).expect("test setup");
    }
}
