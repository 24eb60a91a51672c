//! The timeline (the paper's `sview` data): a ring buffer of events per worker (task runs and
//! sleeps, with TSC timestamps), exported as Chrome trace JSON (opens in Perfetto or
//! chrome://tracing: one process per machine, one thread per worker/CPU).
//!
//! Recording is off unless [`MachineBuilder::trace`](crate::MachineBuilder::trace) asks for it;
//! each worker writes only its own ring (an uncontended lock per event).

use crate::machine::MachineHandle;
use multios_host::tsc;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// What a worker was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EventKind {
    /// Ran one poll of the named task.
    Task,
    /// Slept on its futex until an IMS woke it.
    Sleep,
}

/// One interval on one worker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    pub kind: EventKind,
    pub name: &'static str,
    pub start_tsc: u64,
    pub end_tsc: u64,
}

/// A worker's most recent events (the oldest are dropped when full).
pub(crate) struct Ring {
    cap: usize,
    events: Mutex<VecDeque<Event>>,
}

impl Ring {
    pub(crate) fn new(cap: usize) -> Ring {
        Ring {
            cap: cap.max(1),
            events: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn record(&self, kind: EventKind, name: &'static str, start_tsc: u64) {
        let end_tsc = tsc::now();
        let mut ev = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if ev.len() == self.cap {
            ev.pop_front();
        }
        ev.push_back(Event {
            kind,
            name,
            start_tsc,
            end_tsc,
        });
    }

    pub(crate) fn snapshot(&self) -> Vec<Event> {
        let ev = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        ev.iter().cloned().collect()
    }
}

#[derive(serde::Serialize)]
struct ChromeEvent {
    name: String,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: usize,
    tid: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<serde_json::Value>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ChromeTrace {
    trace_events: Vec<ChromeEvent>,
    display_time_unit: &'static str,
}

/// The recorded events of `machines` as Chrome trace JSON; times in µs from the earliest event.
pub fn chrome_trace(machines: &[&MachineHandle]) -> String {
    let per_us = tsc::calibration().ticks_per_ns() * 1e3;
    let all: Vec<(usize, usize, usize, Vec<Event>)> = machines
        .iter()
        .enumerate()
        .flat_map(|(m, h)| {
            h.trace_events()
                .into_iter()
                .enumerate()
                .map(move |(w, (cpu, ev))| (m, w, cpu, ev))
        })
        .collect();
    let origin = all
        .iter()
        .flat_map(|(_, _, _, ev)| ev.iter().map(|e| e.start_tsc))
        .min()
        .unwrap_or(0);
    let mut out = Vec::new();
    for (m, h) in machines.iter().enumerate() {
        out.push(ChromeEvent {
            name: "process_name".into(),
            cat: "__metadata",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: m + 1,
            tid: 0,
            args: Some(serde_json::json!({ "name": format!("machine {}", h.name()) })),
        });
    }
    for (m, w, cpu, events) in &all {
        out.push(ChromeEvent {
            name: "thread_name".into(),
            cat: "__metadata",
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: m + 1,
            tid: *w,
            args: Some(serde_json::json!({ "name": format!("cpu {cpu} (worker {w})") })),
        });
        for e in events {
            let ts = e.start_tsc.saturating_sub(origin) as f64 / per_us;
            let dur = e.end_tsc.saturating_sub(e.start_tsc) as f64 / per_us;
            out.push(ChromeEvent {
                name: e.name.to_string(),
                cat: match e.kind {
                    EventKind::Task => "task",
                    EventKind::Sleep => "sleep",
                },
                ph: "X",
                ts,
                dur: Some(dur),
                pid: m + 1,
                tid: *w,
                args: None,
            });
        }
    }
    serde_json::to_string(&ChromeTrace {
        trace_events: out,
        display_time_unit: "ns",
    })
    .unwrap_or_default()
}
