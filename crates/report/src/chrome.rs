//! Chrome Trace Event Format (the JSON Perfetto and chrome://tracing open) from per-call records:
//! one complete event (`"ph": "X"`) per system call — name, category `syscall`, `ts` and `dur` in
//! microseconds, `pid` (the thread's process where known, else its tid) and `tid`, and `args` with
//! the call's number and whether it failed — plus one `thread_name` metadata event (`"ph": "M"`)
//! per thread.

use multios_profile::import::CallRecord;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The trace document: `{"traceEvents": […], "displayTimeUnit": "ns"}`.
pub fn chrome_trace(records: &[CallRecord]) -> Value {
    let mut threads: BTreeMap<u32, (u32, &str)> = BTreeMap::new();
    let mut events: Vec<Value> = Vec::with_capacity(records.len() + 8);
    for r in records {
        let pid = r.pid.unwrap_or(r.tid);
        // the thread's latest name (after an exec)
        threads.insert(r.tid, (pid, &r.comm));
        events.push(json!({
            "name": r.name,
            "cat": "syscall",
            "ph": "X",
            "ts": r.start_s * 1e6,
            "dur": r.duration_s * 1e6,
            "pid": pid,
            "tid": r.tid,
            "args": { "nr": r.nr, "error": r.error },
        }));
    }
    for (tid, (pid, comm)) in threads {
        events.push(json!({
            "name": "thread_name",
            "ph": "M",
            "pid": pid,
            "tid": tid,
            "args": { "name": format!("{comm}/{tid}") },
        }));
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ns" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tid: u32, name: &str, start_s: f64, duration_s: f64) -> CallRecord {
        CallRecord {
            tid,
            pid: None,
            comm: "sh".into(),
            name: name.into(),
            nr: nr_of(name),
            start_s,
            duration_s,
            error: false,
        }
    }

    fn nr_of(name: &str) -> u32 {
        match name {
            "read" => 0,
            "write" => 1,
            _ => 999,
        }
    }

    #[test]
    fn issue_18_one_complete_event_per_call_and_one_name_per_thread() {
        let t = chrome_trace(&[
            rec(7, "read", 1e-3, 2e-6),
            rec(8, "write", 2e-3, 5e-6),
            rec(7, "read", 3e-3, 1e-6),
        ]);
        let ev = t["traceEvents"].as_array().expect("events");
        assert_eq!(ev.len(), 3 + 2);
        let x = &ev[1];
        assert_eq!(x["ph"], "X");
        assert_eq!(x["name"], "write");
        assert_eq!(x["cat"], "syscall");
        assert_eq!(x["tid"], 8);
        assert_eq!(x["pid"], 8);
        assert!((x["ts"].as_f64().expect("ts") - 2000.0).abs() < 1e-9);
        assert!((x["dur"].as_f64().expect("dur") - 5.0).abs() < 1e-9);
        assert_eq!(x["args"]["nr"], 1);
        let m: Vec<_> = ev.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0]["name"], "thread_name");
        assert_eq!(m[0]["args"]["name"], "sh/7");
    }
}
