//! Chrome Trace Event Format (the JSON Perfetto and chrome://tracing open) from per-call records:
//! one complete event (`"ph": "X"`) per system call — name, category `syscall`, `ts` and `dur` in
//! microseconds, `pid` (the thread's process where known, else its tid) and `tid`, and `args` with
//! the call's number and whether it failed — plus one `thread_name` metadata event (`"ph": "M"`)
//! per thread.

use multios_profile::import::CallRecord;
use multios_trace_event::{us, Trace};
use std::collections::BTreeMap;

/// The trace (written by the one Trace Event Format writer, `multios-trace-event`).
pub fn chrome_trace(records: &[CallRecord]) -> Trace {
    let mut threads: BTreeMap<u32, (u32, &str)> = BTreeMap::new();
    let mut t = Trace::with_capacity(records.len() + 8);
    for r in records {
        let pid = r.pid.unwrap_or(r.tid);
        // the thread's latest name (after an exec)
        threads.insert(r.tid, (pid, &r.comm));
        t.complete(
            r.name.as_str(),
            "syscall",
            (us(r.start_s), us(r.duration_s)),
            (pid.into(), r.tid.into()),
            Some(serde_json::json!({ "nr": r.nr, "error": r.error })),
        );
    }
    for (tid, (pid, comm)) in threads {
        t.thread_name((pid.into(), tid.into()), format!("{comm}/{tid}"));
    }
    t
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
        ])
        .to_value();
        multios_trace_event::check(&t).expect("conforms");
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
