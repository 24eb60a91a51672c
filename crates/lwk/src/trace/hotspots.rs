//! Ranking a trace's forwarded events by what they cost (`multios lwk hotspots FILE`): per call
//! (or fault) and the function that made it, total VMM time first, with the overridable
//! function (if any) each group was made under.

use super::format::{Kind, Trace};
use super::symbolize::Symbolizer;
use serde::Serialize;
use std::collections::HashMap;

/// One (call, caller) pair.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hotspot {
    pub kind: Kind,
    pub name: String,
    /// The function the call returned into (found on the stack), or "?".
    pub caller: String,
    /// Where the call was made (the wrapper), or "?".
    pub site: String,
    /// The overridable function the events were made under (`overrides::removing`), found
    /// among the call's site, its caller and the return addresses deeper on the stack: e.g.
    /// `malloc` for an mmap glibc's allocator made, `pthread_create` for a clone.
    pub via: Option<String>,
    pub count: u64,
    /// u128: a trace's durations are u64 each, and their sum must not wrap (three hand-written
    /// `dur_ns` of 2⁶³ − 1 summed to 2⁶³ − 3 in a release build, the mean a third of each).
    pub total_ns: u128,
    pub mean_ns: f64,
    /// Share of all the trace's forwarded time.
    pub share: f64,
}

/// A ranked trace.
#[derive(Debug, Clone, Serialize)]
pub struct Hotspots {
    pub program: String,
    pub events: u64,
    pub total_ns: u128,
    /// Events whose caller could be named.
    pub named_callers: u64,
    pub rows: Vec<Hotspot>,
}

/// (kind, call, caller).
type Key = (Kind, String, String);
/// (count, total ns, calls per site, events per overridable function they were made under).
type Sum = (u64, u128, HashMap<String, u64>, HashMap<&'static str, u64>);

/// Ranks `trace`'s events; at most `top` rows (0: all).
pub fn hotspots(trace: &Trace, top: usize) -> Hotspots {
    let mut syms: Vec<Symbolizer> = trace.maps.iter().map(|m| Symbolizer::new(m)).collect();
    let mut names: HashMap<(usize, u64), String> = HashMap::new();
    let mut name = |epoch: usize, a: u64| -> String {
        if a == 0 {
            return "?".into();
        }
        if (crate::memory::THUNK_BASE..crate::memory::THUNK_BASE + (2 << 20)).contains(&a) {
            // A rewritten `syscall` site returns through its thunk (`rewrite.rs`).
            return "(rewritten site)".into();
        }
        names
            .entry((epoch, a))
            .or_insert_with(|| {
                syms.get_mut(epoch)
                    .and_then(|s| s.name(a))
                    .unwrap_or_else(|| format!("{a:#x}"))
            })
            .clone()
    };
    let mut acc: HashMap<Key, Sum> = HashMap::new();
    let (mut total, mut named) = (0u128, 0u64);
    for (i, e) in trace.events.iter().enumerate() {
        let epoch = trace.epoch.get(i).copied().unwrap_or(0);
        let caller = name(epoch, e.caller);
        if caller != "?" && !caller.starts_with("0x") {
            named += 1;
        }
        let site = name(epoch, e.rip);
        let via = std::iter::once(site.clone())
            .chain(std::iter::once(caller.clone()))
            .chain(e.frames.iter().map(|&f| name(epoch, f)))
            .find_map(|n| crate::overrides::removing(&n, &e.name));
        let entry = acc
            .entry((e.kind, e.name.clone(), caller))
            .or_insert_with(|| (0, 0, HashMap::new(), HashMap::new()));
        entry.0 += 1;
        entry.1 += u128::from(e.dur_ns);
        *entry.2.entry(site).or_default() += 1;
        if let Some(v) = via {
            *entry.3.entry(v).or_default() += 1;
        }
        total += u128::from(e.dur_ns);
    }
    let mut rows: Vec<Hotspot> = acc
        .into_iter()
        .map(|((kind, name, caller), (count, t, sites, vias))| Hotspot {
            kind,
            name,
            caller,
            site: sites
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                .map_or_else(|| "?".into(), |s| s.0),
            via: vias
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
                .map(|v| v.0.to_string()),
            count,
            total_ns: t,
            mean_ns: t as f64 / count as f64,
            share: if total > 0 { t as f64 / total as f64 } else { 0.0 },
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| b.count.cmp(&a.count))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.caller.cmp(&b.caller))
    });
    if top > 0 {
        rows.truncate(top);
    }
    Hotspots {
        program: trace.header.program.clone(),
        events: trace.events.len() as u64,
        total_ns: total,
        named_callers: named,
        rows,
    }
}

/// The overrides that would remove ranked events (`lwk hotspots --write-overrides`): of the call
/// itself (clock_gettime) or of the function it was made under (the `via` column: an mmap under
/// malloc, a clone under pthread_create), in rank order.
pub fn overrides_for(h: &Hotspots) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in &h.rows {
        let via = r.via.as_deref().and_then(crate::overrides::catalogued);
        if let Some(f) = crate::overrides::removing(&r.name, &r.name).or(via) {
            if !names.contains(&f) {
                names.push(f);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::format::{Event, Header};

    fn ev(name: &str, dur: u64, caller: u64) -> Event {
        Event {
            t_ns: 0,
            cpu: 0,
            kind: Kind::Call,
            name: name.into(),
            nr: 0,
            dur_ns: dur,
            ret: 0,
            rip: 0,
            caller,
            frames: vec![],
        }
    }

    #[test]
    fn rows_are_ranked_by_total_time_and_shares_add_up() {
        let trace = Trace {
            truncated_line: None,
            header: Header {
                format: crate::trace::format::FORMAT.into(),
                version: 1,
                program: "p".into(),
                pid: 1,
                parent: None,
            },
            events: vec![
                ev("read", 10, 0),
                ev("write", 50, 0),
                ev("read", 30, 0),
                ev("open", 5, 0),
            ],
            maps: Vec::new(),
            epoch: vec![0; 4],
        };
        let h = hotspots(&trace, 0);
        let order: Vec<_> = h
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.count, r.total_ns))
            .collect();
        assert_eq!(order, [("write", 1, 50), ("read", 2, 40), ("open", 1, 5)]);
        let sum: f64 = h.rows.iter().map(|r| r.share).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert_eq!(hotspots(&trace, 2).rows.len(), 2);
        assert_eq!(h.total_ns, 95);
    }
}
