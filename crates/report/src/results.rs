//! Result documents → measured-against-projected rows. Results are read as plain JSON (the
//! `--json` output of the commands that wrote them), so this crate depends on none of them.

use crate::data::{Measured, MeasuredRow};
use crate::error::ReportError;
use serde_json::{json, Value};

/// What a result document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// `multios validate --json`: points with measured and refined speedups.
    Validate,
    /// `multios emulate --compare --json`: one paired measurement and its projections.
    EmulateCompare,
    /// `multios demo --json`: its emulation rows (measured and projected speedup per policy).
    Demo,
    /// `multios noise fwq|ftq|selfish|suite --json`: one report per run.
    Noise,
    /// A profile written by `multios lwk run --profile` (local vs delegated placement).
    LwkProfile,
    /// Any other profile (e.g. of the same program elsewhere): its wall time against this one's.
    Profile,
}

/// Recognises a result document by its fields.
pub fn classify(v: &Value) -> Option<ResultKind> {
    let has = |k: &str| v.get(k).is_some();
    if has("schema_version") && has("syscalls") {
        let tool = v.pointer("/collection/tool").and_then(Value::as_str);
        return Some(if tool == Some("multios-lwk") {
            ResultKind::LwkProfile
        } else {
            ResultKind::Profile
        });
    }
    if v.get("points").and_then(Value::as_array).is_some() && has("accuracy_median") {
        return Some(ResultKind::Validate);
    }
    if has("measured_speedup") && has("refined_speedup") {
        return Some(ResultKind::EmulateCompare);
    }
    if v.get("emulation").and_then(Value::as_array).is_some() && has("projections") {
        return Some(ResultKind::Demo);
    }
    if v.get("reports").and_then(Value::as_array).is_some() {
        return Some(ResultKind::Noise);
    }
    None
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// A number, or the median (multios-stats' rule) of a list of numbers, e.g. the demo's per-round times.
fn median_of(v: &Value, k: &str) -> f64 {
    match v.get(k) {
        Some(Value::Array(xs)) => {
            let xs: Vec<f64> = xs.iter().filter_map(Value::as_f64).collect();
            multios_stats::median(&xs).unwrap_or(f64::NAN)
        }
        _ => f(v, k),
    }
}

fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(x)) => x.clone(),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    }
}

fn items<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The report's view of one result document.
pub fn measured(source: &str, v: &Value) -> Result<Measured, ReportError> {
    let kind = classify(v).ok_or_else(|| ReportError::Unknown {
        path: source.to_string(),
    })?;
    let mut m = Measured {
        source: source.to_string(),
        kind: String::new(),
        produced_by: String::new(),
        columns: Vec::new(),
        rows: Vec::new(),
        pairs: Vec::new(),
    };
    match kind {
        ResultKind::Validate => {
            m.kind = "validate".into();
            m.produced_by = format!("multios validate --mechanism {} --json", s(v, "mechanism"));
            m.columns = [
                "γ",
                "policy",
                "f_c (s)",
                "measured",
                "refined (median rt)",
                "naive",
                "accuracy %",
            ]
            .map(String::from)
            .to_vec();
            for p in items(v, "points") {
                m.rows.push(vec![
                    json!(f(p, "gamma")),
                    json!(s(p, "policy")),
                    json!(f(p, "fc")),
                    json!(f(p, "measured")),
                    json!(f(p, "refined_median")),
                    json!(f(p, "naive")),
                    json!(f(p, "accuracy")),
                ]);
                m.pairs.push(MeasuredRow {
                    label: format!(
                        "validate γ={} {} f_c={:.3}µs",
                        f(p, "gamma"),
                        s(p, "policy"),
                        f(p, "fc") * 1e6
                    ),
                    measured: f(p, "measured"),
                    projected: f(p, "refined_median"),
                });
            }
        }
        ResultKind::EmulateCompare => {
            m.kind = "emulate".into();
            m.produced_by = "multios emulate --compare --json".into();
            m.columns = ["native (s)", "emulated (s)", "measured S", "refined S", "naive S"]
                .map(String::from)
                .to_vec();
            m.rows.push(vec![
                json!(f(v, "native_secs")),
                json!(f(v, "emulated_secs")),
                json!(f(v, "measured_speedup")),
                json!(f(v, "refined_speedup")),
                json!(f(v, "naive_speedup")),
            ]);
            m.pairs.push(MeasuredRow {
                label: format!("emulate --compare ({source})"),
                measured: f(v, "measured_speedup"),
                projected: f(v, "refined_speedup"),
            });
        }
        ResultKind::Demo => {
            m.kind = "emulate (demo)".into();
            m.produced_by = "multios demo --json".into();
            m.columns = [
                "policy",
                "mechanism",
                "f_c (s)",
                "native (s, median of rounds)",
                "emulated (s, median of rounds)",
                "measured S",
                "projected S",
            ]
            .map(String::from)
            .to_vec();
            for e in items(v, "emulation") {
                emulation_row(&mut m, e);
            }
        }
        ResultKind::Noise => {
            m.kind = "noise".into();
            m.produced_by = "multios noise … --json".into();
            m.columns = [
                "run",
                "kind",
                "cpu",
                "samples",
                "noise %",
                "detours",
                "detour time (ns)",
            ]
            .map(String::from)
            .to_vec();
            for r in items(v, "reports") {
                m.rows.push(vec![
                    json!(s(r, "label")),
                    json!(s(r, "kind")),
                    r.get("cpu").cloned().unwrap_or(Value::Null),
                    r.get("samples").cloned().unwrap_or(Value::Null),
                    json!(f(r, "noise_pct")),
                    r.get("detours").cloned().unwrap_or(Value::Null),
                    json!(f(r, "detour_ns_total")),
                ]);
            }
        }
        ResultKind::LwkProfile | ResultKind::Profile => {
            let p = multios_profile::from_json_str(source, &v.to_string())?;
            let lwk = kind == ResultKind::LwkProfile;
            m.kind = if lwk { "lwk".into() } else { "profile".into() };
            m.produced_by = if lwk {
                format!("multios lwk run --profile {source} -- {}", p.command.join(" "))
            } else {
                format!("{} of `{}`", p.collection.tool, p.command.join(" "))
            };
            m.columns = ["syscall", "n(s)", "g(s)", "local", "delegated", "delegated g (s)"]
                .map(String::from)
                .to_vec();
            for c in &p.syscalls {
                let pl = c.placement.clone().unwrap_or_default();
                m.rows.push(vec![
                    json!(c.name),
                    json!(c.count),
                    json!(c.total_s),
                    json!(pl.local_count),
                    json!(pl.delegated_count),
                    json!(pl.delegated_total_s),
                ]);
            }
            // no pairs: a profile has no projection to hold its time against (its γ is unknown);
            // the table shows where each call was served
        }
    }
    Ok(m)
}

fn emulation_row(m: &mut Measured, e: &Value) {
    m.rows.push(vec![
        json!(s(e, "policy")),
        json!(s(e, "mechanism")),
        json!(f(e, "fc_s")),
        json!(median_of(e, "native_s")),
        json!(median_of(e, "emulated_s")),
        json!(f(e, "measured_speedup")),
        json!(f(e, "projected_speedup")),
    ]);
    m.pairs.push(MeasuredRow {
        label: format!("emulate {} ({})", s(e, "policy"), s(e, "mechanism")),
        measured: f(e, "measured_speedup"),
        projected: f(e, "projected_speedup"),
    });
}

/// The demo's emulation rows (its `emulation` JSON) as a result the report shows.
pub fn demo_emulation(rows: &[Value]) -> Value {
    json!({ "emulation": rows, "projections": [] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_18_results_are_recognised_by_their_fields() {
        let validate = json!({"points": [{"gamma": 2.0, "policy": "all", "fc": 1e-5, "measured": 1.5,
            "refined_median": 1.6, "naive": 1.9, "accuracy": 93.3}], "accuracy_median": 93.3, "mechanism": "proxy"});
        assert_eq!(classify(&validate), Some(ResultKind::Validate));
        let m = measured("v.json", &validate).expect("validate");
        assert_eq!(m.pairs.len(), 1);
        assert_eq!((m.pairs[0].measured, m.pairs[0].projected), (1.5, 1.6));
        let demo = demo_emulation(&[
            json!({"policy": "mckernel", "mechanism": "shm", "measured_speedup": 0.9,
            "projected_speedup": 0.95}),
        ]);
        assert_eq!(classify(&demo), Some(ResultKind::Demo));
        assert_eq!(measured("demo", &demo).expect("demo").pairs[0].projected, 0.95);
        let cmp = json!({"measured_speedup": 0.8, "refined_speedup": 0.82, "naive_speedup": 1.0});
        assert_eq!(classify(&cmp), Some(ResultKind::EmulateCompare));
        assert_eq!(classify(&json!({"reports": []})), Some(ResultKind::Noise));
        let err = measured("x.json", &json!({"hello": 1})).expect_err("unknown");
        assert!(err.to_string().contains("x.json"), "{err}");
    }
}
