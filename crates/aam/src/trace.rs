//! The timeline (the paper's `sview` data): a ring buffer of events per worker (task runs,
//! sleeps, IMS wake-ups, core moves and the time a worker spent without its core, with TSC
//! timestamps), exported as Chrome trace JSON (opens in Perfetto or chrome://tracing: one
//! process per machine, one thread per worker/CPU and one for its core moves) and as [`rows`] for a picture.
//!
//! Recording is off unless [`MachineBuilder::trace`](crate::MachineBuilder::trace) asks for it.
//! A worker writes its own ring for its tasks, sleeps and dormant spells; two events are written
//! by another thread into the ring of the worker they concern: the IMS wake-up by the sender that
//! woke it (at the moment of the `FUTEX_WAKE`), and a core move by the thread that moved the core
//! (from the grant to the receiving worker's acknowledgement, in the rings of both the worker
//! that lost the CPU and the one that gained it). The lock per event is uncontended except for
//! those two.

use crate::machine::MachineHandle;
use multios_host::tsc;
use multios_trace_event::Trace;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// What a worker was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum EventKind {
    /// Ran one poll of the named task.
    Task,
    /// Slept on its futex until an IMS woke it.
    Sleep,
    /// An IMS wake-up sent to this (sleeping) worker; an instant (`start_tsc == end_tsc`) at
    /// the sender's `FUTEX_WAKE`.
    Ims,
    /// The Machine Manager took this worker's CPU from its machine (name "core lost") or gave
    /// it (name "core gained"): from the grant to the receiving worker's acknowledgement.
    CoreMove,
    /// The worker's machine did not hold its CPU: from losing it to regaining it (or the stop).
    Dormant,
    /// A machine switch on this CPU: the worker handed its core to another machine ("left") or
    /// started serving its machine on it again ("entered"); an instant.
    Switch,
}

impl EventKind {
    /// Category name in the Chrome trace and the picture.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Task => "task",
            EventKind::Sleep => "sleep",
            EventKind::Ims => "ims",
            EventKind::CoreMove => "core move",
            EventKind::Dormant => "no core",
            EventKind::Switch => "machine switch",
        }
    }
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
        self.record_span(kind, name, start_tsc, tsc::now());
    }

    /// Records an instant (e.g. an IMS wake-up) at now.
    pub(crate) fn mark(&self, kind: EventKind, name: &'static str) {
        let now = tsc::now();
        self.record_span(kind, name, now, now);
    }

    pub(crate) fn record_span(&self, kind: EventKind, name: &'static str, start_tsc: u64, end_tsc: u64) {
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

/// One worker's events with times in ns from the earliest event of all rows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// Index of the machine in the slice given to [`rows`].
    pub machine_index: usize,
    pub machine: String,
    pub worker: usize,
    pub cpu: usize,
    pub events: Vec<Span>,
}

/// An event of a [`Row`], in ns from the common origin.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Span {
    pub kind: EventKind,
    pub name: &'static str,
    pub start_ns: f64,
    pub end_ns: f64,
}

/// The recorded events of `machines`, one row per worker (machines in the order given, workers
/// in order), on one time axis starting at the earliest recorded event.
pub fn rows(machines: &[&MachineHandle]) -> Vec<Row> {
    let per_ns = tsc::calibration().ticks_per_ns();
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
    let ns = |t: u64| t.saturating_sub(origin) as f64 / per_ns;
    all.into_iter()
        .map(|(m, worker, cpu, events)| Row {
            machine_index: m,
            machine: machines[m].name().to_string(),
            worker,
            cpu,
            events: events
                .iter()
                .map(|e| Span {
                    kind: e.kind,
                    name: e.name,
                    start_ns: ns(e.start_tsc),
                    end_ns: ns(e.end_tsc.max(e.start_tsc)),
                })
                .collect(),
        })
        .collect()
}

/// Thread id offset of a worker's core-move track in the Chrome trace.
const MOVES_TRACK: u64 = 1000;

/// The recorded events of `machines` as Chrome trace JSON (written by the Trace Event Format
/// writer `profile --trace` also uses, `multios-trace-event`); times in µs from the earliest
/// event. One process per machine, one thread per worker; task runs, sleeps and spells without a
/// core are complete events, IMS wake-ups instants. A core move (grant to acknowledgement) overlaps
/// the worker's sleep or spell without a core without nesting in it, and viewers drop complete
/// events of one thread that do not nest: the moves go on a track of their own per worker
/// (thread id 1000 + worker, "… core moves").
pub fn chrome_trace(machines: &[&MachineHandle]) -> String {
    let mut t = Trace::new();
    for (m, h) in machines.iter().enumerate() {
        t.process_name(m as u64 + 1, format!("machine {}", h.name()));
    }
    for r in rows(machines) {
        let (pid, w) = (r.machine_index as u64 + 1, r.worker as u64);
        let lane = format!("cpu {} (worker {})", r.cpu, r.worker);
        t.thread_name((pid, w), lane.clone());
        if r.events.iter().any(|e| e.kind == EventKind::CoreMove) {
            t.thread_name((pid, MOVES_TRACK + w), format!("{lane} core moves"));
        }
        for e in r.events {
            let ts = e.start_ns / 1e3;
            let dur = (e.end_ns - e.start_ns) / 1e3;
            match e.kind {
                EventKind::Ims => t.instant(e.name, e.kind.label(), ts, (pid, w)),
                EventKind::CoreMove => {
                    t.complete(e.name, e.kind.label(), (ts, dur), (pid, MOVES_TRACK + w), None)
                }
                _ => t.complete(e.name, e.kind.label(), (ts, dur), (pid, w), None),
            }
        }
    }
    t.to_json()
}
