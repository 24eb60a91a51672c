//! The one writer of Chrome's Trace Event Format in multios (the JSON Perfetto, chrome://tracing
//! and speedscope open), and its field-by-field checker.
//!
//! Two producers use it: `multios profile --trace` (one complete event per system call,
//! `multios-report`) and the AAM timeline (`multios aam trace`: task runs, sleeps, core moves as
//! complete events, IMS wake-ups as instants, `multios-aam`). Both write the JSON Object Format,
//! `{"traceEvents": […], "displayTimeUnit": "ns"}`, with times in microseconds.
//!
//! [`check`] reads a document back and verifies every event against the format's definition
//! (the fields each phase needs, their types and ranges, the metadata names, and that the
//! complete events of one thread nest or follow each other, which trace viewers require); the
//! tests of both producers call it.

mod check;

pub use check::{check, Counts, FormatError};

use serde::Serialize;
use std::io::Write;

/// One event, in the order its fields are written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub name: String,
    pub cat: String,
    pub ph: &'static str,
    pub ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u64,
    pub tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
    /// Scope of an instant event ("t": its thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<&'static str>,
}

/// A trace being built: events in the order they were added.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    events: Vec<Event>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    trace_events: &'a [Event],
    display_time_unit: &'static str,
}

/// Microseconds, the format's time unit, from seconds.
pub fn us(seconds: f64) -> f64 {
    seconds * 1e6
}

impl Trace {
    pub fn new() -> Trace {
        Trace::default()
    }

    pub fn with_capacity(n: usize) -> Trace {
        Trace {
            events: Vec::with_capacity(n),
        }
    }

    /// A complete event (`"ph": "X"`): `ts_us` and `dur_us` in microseconds from the trace's origin.
    pub fn complete(
        &mut self,
        name: impl Into<String>,
        cat: &str,
        (ts_us, dur_us): (f64, f64),
        (pid, tid): (u64, u64),
        args: Option<serde_json::Value>,
    ) {
        self.events.push(Event {
            name: name.into(),
            cat: cat.to_string(),
            ph: "X",
            ts: ts_us,
            dur: Some(dur_us.max(0.0)),
            pid,
            tid,
            args,
            s: None,
        });
    }

    /// An instant event (`"ph": "i"`) on its thread (`"s": "t"`).
    pub fn instant(&mut self, name: impl Into<String>, cat: &str, ts_us: f64, (pid, tid): (u64, u64)) {
        self.events.push(Event {
            name: name.into(),
            cat: cat.to_string(),
            ph: "i",
            ts: ts_us,
            dur: None,
            pid,
            tid,
            args: None,
            s: Some("t"),
        });
    }

    /// The `process_name` metadata event (`"ph": "M"`) naming process `pid`.
    pub fn process_name(&mut self, pid: u64, name: impl Into<String>) {
        self.metadata("process_name", (pid, 0), name.into());
    }

    /// The `thread_name` metadata event naming thread `tid` of process `pid`.
    pub fn thread_name(&mut self, (pid, tid): (u64, u64), name: impl Into<String>) {
        self.metadata("thread_name", (pid, tid), name.into());
    }

    fn metadata(&mut self, what: &str, (pid, tid): (u64, u64), name: String) {
        self.events.push(Event {
            name: what.to_string(),
            cat: "__metadata".to_string(),
            ph: "M",
            ts: 0.0,
            dur: None,
            pid,
            tid,
            args: Some(serde_json::json!({ "name": name })),
            s: None,
        });
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The document as JSON text.
    pub fn to_json(&self) -> String {
        let mut v = Vec::new();
        // Writing to a Vec cannot fail and every field serializes.
        let _ = self.write_to(&mut v);
        String::from_utf8(v).unwrap_or_default()
    }

    /// The document as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self.document()).unwrap_or_default()
    }

    /// Streams the document to `w` (no intermediate string: traces of millions of calls).
    pub fn write_to(&self, w: impl Write) -> serde_json::Result<()> {
        serde_json::to_writer(w, &self.document())
    }

    /// Writes the document to `path`, buffered.
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
        self.write_to(&mut w).map_err(std::io::Error::other)?;
        w.flush()
    }

    fn document(&self) -> Document<'_> {
        Document {
            trace_events: &self.events,
            display_time_unit: "ns",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_18_every_kind_of_event_is_written_as_the_format_defines_it() {
        let mut t = Trace::new();
        t.process_name(1, "machine a");
        t.thread_name((1, 3), "cpu 0");
        t.complete(
            "read",
            "syscall",
            (10.0, 2.5),
            (1, 3),
            Some(serde_json::json!({"nr": 0})),
        );
        t.instant("wake", "ims", 11.0, (1, 3));
        let v: serde_json::Value = serde_json::from_str(&t.to_json()).expect("JSON");
        assert_eq!(v, t.to_value());
        assert_eq!(v["displayTimeUnit"], "ns");
        let ev = v["traceEvents"].as_array().expect("events");
        assert_eq!(
            ev[0],
            serde_json::json!({"name": "process_name", "cat": "__metadata", "ph": "M", "ts": 0.0,
                               "pid": 1, "tid": 0, "args": {"name": "machine a"}})
        );
        assert_eq!(ev[1]["name"], "thread_name");
        assert_eq!(
            ev[2],
            serde_json::json!({"name": "read", "cat": "syscall", "ph": "X", "ts": 10.0, "dur": 2.5,
                               "pid": 1, "tid": 3, "args": {"nr": 0}})
        );
        assert_eq!(
            ev[3],
            serde_json::json!({"name": "wake", "cat": "ims", "ph": "i", "ts": 11.0, "pid": 1,
                               "tid": 3, "s": "t"})
        );
        let c = check(&v).expect("conforms");
        assert_eq!((c.complete, c.instant, c.metadata), (1, 1, 2));
    }

    #[test]
    fn a_negative_duration_is_written_as_zero() {
        let mut t = Trace::new();
        t.complete("x", "c", (1.0, -1e-9), (1, 1), None);
        assert_eq!(t.events()[0].dur, Some(0.0));
    }
}
