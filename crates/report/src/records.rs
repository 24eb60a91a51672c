//! Per-call records (`profile --trace FILE`) written as the file's extension asks: Chrome trace
//! JSON (the default), or one row per call as CSV (`.csv`) or Parquet (`.parquet`, the same rows)
//! for pandas and other dataframe tools.

use crate::ReportError;
use multios_columns::{FileKind, Table, Values};
use multios_profile::import::CallRecord;
use std::path::Path;

/// One row per call: tid, pid (the thread's process, its tid where unknown), comm, name, nr,
/// start_s and duration_s (seconds from the trace's start), error.
pub fn records_table(records: &[CallRecord]) -> Table {
    let col = |f: &dyn Fn(&CallRecord) -> i64| Values::Int(records.iter().map(f).collect());
    let text = |f: &dyn Fn(&CallRecord) -> String| Values::Text(records.iter().map(f).collect());
    let secs = |f: &dyn Fn(&CallRecord) -> f64| Values::Float(records.iter().map(|r| Some(f(r))).collect());
    Table::new()
        .with("tid", col(&|r| r.tid.into()))
        .with("pid", col(&|r| r.pid.unwrap_or(r.tid).into()))
        .with("comm", text(&|r| r.comm.clone()))
        .with("name", text(&|r| r.name.clone()))
        .with("nr", col(&|r| r.nr.into()))
        .with("start_s", secs(&|r| r.start_s))
        .with("duration_s", secs(&|r| r.duration_s))
        .with("error", Values::Bool(records.iter().map(|r| r.error).collect()))
}

/// Writes `records` to `path`: Parquet or CSV by extension, else Chrome trace JSON.
pub fn write_trace(path: &Path, records: &[CallRecord]) -> Result<FileKind, ReportError> {
    let kind = FileKind::of(path);
    match kind {
        FileKind::Parquet | FileKind::Csv => records_table(records).save(path)?,
        FileKind::Other => crate::chrome_trace(records)
            .save(path)
            .map_err(|source| ReportError::Write {
                path: path.display().to_string(),
                source,
            })?,
    }
    Ok(kind)
}
