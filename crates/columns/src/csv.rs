//! CSV (RFC 4180): fields with a comma, a quote or a line break are quoted, quotes doubled.

use crate::{Table, Values};
use std::fmt::Write as _;

pub(crate) fn write(t: &Table) -> String {
    let mut s = String::with_capacity(32 * (t.rows() + 1) * t.columns().len().max(1));
    let names: Vec<&str> = t.columns().iter().map(|c| c.name.as_str()).collect();
    line(&mut s, names.iter().map(|n| field(n)));
    for r in 0..t.rows() {
        line(&mut s, t.columns().iter().map(|c| cell(&c.values, r)));
    }
    s
}

fn line<I: Iterator<Item = String>>(s: &mut String, cells: I) {
    for (i, c) in cells.enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&c);
    }
    s.push('\n');
}

fn cell(v: &Values, r: usize) -> String {
    match v {
        Values::Int(v) => v[r].to_string(),
        Values::Float(v) => v[r].map(float).unwrap_or_default(),
        Values::Text(v) => field(&v[r]),
        Values::Bool(v) => if v[r] { "True" } else { "False" }.to_string(),
    }
}

/// Shortest text that reads back to the same bits, always with a '.' or an exponent.
fn float(x: f64) -> String {
    let mut s = String::new();
    let _ = write!(s, "{x:?}");
    s
}

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.is_empty() {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Table, Values};

    #[test]
    fn issue_18_values_are_quoted_and_floats_keep_their_type() {
        let t = Table::new()
            .with("n", Values::Int(vec![1, -2]))
            .with("x", Values::Float(vec![Some(2.0), None]))
            .with("s", Values::Text(vec!["a,b".into(), "say \"hi\"".into()]))
            .with("ok", Values::Bool(vec![true, false]));
        assert_eq!(
            t.to_csv().expect("csv"),
            "n,x,s,ok\n1,2.0,\"a,b\",True\n-2,,\"say \"\"hi\"\"\",False\n"
        );
    }

    #[test]
    fn a_ragged_table_is_refused_naming_the_column() {
        let t = Table::new()
            .with("a", Values::Int(vec![1]))
            .with("b", Values::Int(vec![]));
        let e = t.to_csv().expect_err("ragged").to_string();
        assert!(e.contains("'b' has 0 rows"), "{e}");
    }
}
