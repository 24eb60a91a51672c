//! A field-by-field check of a Trace Event Format document (JSON Object Format), after the
//! format's definition ("Trace Event Format", Google, the document chrome://tracing and Perfetto
//! implement): the fields every event carries, those each phase adds, their types and ranges.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// What is wrong, and where: the event's index (none for the document itself) and the field.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{}field '{field}': {msg}", event.map(|i| format!("traceEvents[{i}]: ")).unwrap_or_default())]
pub struct FormatError {
    pub event: Option<usize>,
    pub field: String,
    pub msg: String,
}

/// What a conforming document holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// `"ph": "X"` events.
    pub complete: usize,
    /// `"ph": "i"` or `"I"` events.
    pub instant: usize,
    /// `"ph": "M"` events.
    pub metadata: usize,
    /// Complete events per name.
    pub by_name: BTreeMap<String, usize>,
    /// (pid, tid) of every thread with an event that is not metadata.
    pub threads: BTreeSet<(u64, u64)>,
    /// (pid, tid) of every `thread_name`.
    pub named_threads: BTreeSet<(u64, u64)>,
}

/// The fields the format defines; anything else in an event is refused.
const FIELDS: &[&str] = &[
    "name", "cat", "ph", "ts", "tts", "pid", "tid", "dur", "tdur", "args", "s", "id", "id2", "bp", "sf",
    "stack", "esf", "estack", "cname",
];
/// Metadata event names and the `args` field each carries.
const METADATA: &[(&str, &str)] = &[
    ("process_name", "name"),
    ("process_labels", "labels"),
    ("process_sort_index", "sort_index"),
    ("thread_name", "name"),
    ("thread_sort_index", "sort_index"),
];
/// (start µs, end µs, event index) of a thread's complete events.
type Spans = Vec<(f64, f64, usize)>;

/// Slack for the nesting of complete events, µs (times written as f64 microseconds).
const EPS_US: f64 = 1e-3;

/// Checks `doc` field by field; returns what it holds.
pub fn check(doc: &Value) -> Result<Counts, FormatError> {
    let top = doc
        .as_object()
        .ok_or_else(|| err(None, "(document)", "not a JSON object"))?;
    if let Some(u) = top.get("displayTimeUnit") {
        if u != "ms" && u != "ns" {
            return Err(err(
                None,
                "displayTimeUnit",
                format!("{u} is neither \"ms\" nor \"ns\""),
            ));
        }
    }
    let events = top
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| err(None, "traceEvents", "missing or not an array"))?;
    let mut c = Counts::default();
    let mut spans: BTreeMap<(u64, u64), Spans> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let o = e
            .as_object()
            .ok_or_else(|| err(Some(i), "(event)", "not a JSON object"))?;
        if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(err(Some(i), k, "not a field of the format"));
        }
        let name = string(o, i, "name")?;
        let ph = string(o, i, "ph")?;
        if let Some(cat) = o.get("cat") {
            if !cat.is_string() {
                return Err(err(Some(i), "cat", "not a string"));
            }
        }
        let id = (uint(o, i, "pid")?, uint(o, i, "tid")?);
        if let Some(a) = o.get("args") {
            if !a.is_object() {
                return Err(err(Some(i), "args", "not an object"));
            }
        }
        match ph {
            "X" => {
                let ts = time(o, i, "ts")?;
                let dur = time(o, i, "dur")?;
                c.complete += 1;
                *c.by_name.entry(name.to_string()).or_default() += 1;
                c.threads.insert(id);
                spans.entry(id).or_default().push((ts, ts + dur, i));
            }
            "i" | "I" => {
                time(o, i, "ts")?;
                if o.contains_key("dur") {
                    return Err(err(Some(i), "dur", "an instant event has no duration"));
                }
                if let Some(s) = o.get("s") {
                    if !matches!(s.as_str(), Some("g" | "p" | "t")) {
                        return Err(err(Some(i), "s", format!("{s} is not a scope (g, p or t)")));
                    }
                }
                c.instant += 1;
                c.threads.insert(id);
            }
            "M" => {
                let (_, arg) = METADATA.iter().find(|(m, _)| *m == name).ok_or_else(|| {
                    err(
                        Some(i),
                        "name",
                        format!("'{name}' is not a metadata event's name"),
                    )
                })?;
                let a = o.get("args").and_then(|a| a.get(arg));
                let ok = match *arg {
                    "sort_index" => a.is_some_and(Value::is_i64),
                    "labels" => a.is_some_and(Value::is_string),
                    _ => a.and_then(Value::as_str).is_some_and(|s| !s.is_empty()),
                };
                if !ok {
                    return Err(err(
                        Some(i),
                        &format!("args.{arg}"),
                        "missing or of the wrong type",
                    ));
                }
                if name == "thread_name" {
                    c.named_threads.insert(id);
                }
                c.metadata += 1;
            }
            other => {
                return Err(err(
                    Some(i),
                    "ph",
                    format!("'{other}': multios writes only X, i and M events"),
                ))
            }
        }
    }
    for v in spans.values_mut() {
        nested(v)?;
    }
    Ok(c)
}

/// The complete events of one thread either nest or follow each other (viewers build their
/// call stacks from them).
fn nested(spans: &mut [(f64, f64, usize)]) -> Result<(), FormatError> {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut open: Vec<(f64, usize)> = Vec::new();
    for &(start, end, i) in spans.iter() {
        while open.last().is_some_and(|&(e, _)| e <= start + EPS_US) {
            open.pop();
        }
        if let Some(&(e, j)) = open.last() {
            if end > e + EPS_US {
                return Err(err(
                    Some(i),
                    "ts",
                    format!("overlaps traceEvents[{j}] on its thread without nesting in it"),
                ));
            }
        }
        open.push((end, i));
    }
    Ok(())
}

fn err(event: Option<usize>, field: &str, msg: impl Into<String>) -> FormatError {
    FormatError {
        event,
        field: field.to_string(),
        msg: msg.into(),
    }
}

fn string<'a>(o: &'a Map<String, Value>, i: usize, f: &str) -> Result<&'a str, FormatError> {
    match o.get(f) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(err(Some(i), f, "not a non-empty string")),
        None => Err(err(Some(i), f, "missing")),
    }
}

fn uint(o: &Map<String, Value>, i: usize, f: &str) -> Result<u64, FormatError> {
    o.get(f)
        .ok_or_else(|| err(Some(i), f, "missing"))?
        .as_u64()
        .ok_or_else(|| err(Some(i), f, "not a non-negative integer"))
}

/// A time in µs: a finite, non-negative number.
fn time(o: &Map<String, Value>, i: usize, f: &str) -> Result<f64, FormatError> {
    let v = o.get(f).ok_or_else(|| err(Some(i), f, "missing"))?;
    v.as_f64().filter(|t| t.is_finite() && *t >= 0.0).ok_or_else(|| {
        err(
            Some(i),
            f,
            format!("{v} is not a finite, non-negative number of µs"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(events: Value) -> Value {
        json!({ "traceEvents": events, "displayTimeUnit": "ns" })
    }

    fn x(ts: f64, dur: f64) -> Value {
        json!({"name": "a", "cat": "c", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 2})
    }

    #[test]
    fn issue_18_each_violation_names_the_event_and_the_field() {
        let cases = [
            (json!([]), None, "traceEvents"),
            (
                json!([{"name": "a", "ph": "X", "ts": 1, "pid": 1, "tid": 1}]),
                Some(0),
                "dur",
            ),
            (
                json!([{"name": "a", "ph": "X", "ts": -1, "dur": 1, "pid": 1, "tid": 1}]),
                Some(0),
                "ts",
            ),
            (
                json!([{"name": "a", "ph": "X", "ts": 1, "dur": 1, "pid": -1, "tid": 1}]),
                Some(0),
                "pid",
            ),
            (
                json!([{"name": "", "ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]),
                Some(0),
                "name",
            ),
            (
                json!([{"name": "a", "ph": "i", "ts": 1, "pid": 1, "tid": 1, "s": "x"}]),
                Some(0),
                "s",
            ),
            (
                json!([{"name": "a", "ph": "i", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]),
                Some(0),
                "dur",
            ),
            (
                json!([{"name": "x_name", "ph": "M", "pid": 1, "tid": 1, "args": {}}]),
                Some(0),
                "name",
            ),
            (
                json!([{"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {}}]),
                Some(0),
                "args.name",
            ),
            (
                json!([{"name": "a", "ph": "Q", "ts": 1, "pid": 1, "tid": 1}]),
                Some(0),
                "ph",
            ),
            (
                json!([{"name": "a", "ph": "i", "ts": 1, "pid": 1, "tid": 1, "when": 2}]),
                Some(0),
                "when",
            ),
            (json!([x(0.0, 10.0), x(5.0, 10.0)]), Some(1), "ts"),
        ];
        for (events, at, field) in cases {
            let d = if events == json!([]) {
                json!({})
            } else {
                doc(events)
            };
            let e = check(&d).expect_err("refused");
            assert_eq!((e.event, e.field.as_str()), (at, field), "{e}");
        }
        let e = check(&json!({"traceEvents": [], "displayTimeUnit": "s"})).expect_err("unit");
        assert_eq!(e.field, "displayTimeUnit");
    }

    #[test]
    fn nested_and_consecutive_complete_events_conform() {
        let c = check(&doc(json!([
            x(0.0, 10.0),
            x(2.0, 3.0),
            x(5.0, 5.0),
            x(10.0, 1.0)
        ])))
        .expect("conforms");
        assert_eq!(c.complete, 4);
        assert_eq!(c.by_name["a"], 4);
        assert_eq!(c.threads.len(), 1);
    }
}
