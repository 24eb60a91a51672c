//! `multios report`: one self-contained HTML file per program (issue #18).
//!
//! [`build`] gathers the data — the profile's table and syscall CDF, the refined model's
//! projections over policy × γ × f_c (computed by `multios-model`, as `multios model refined`
//! computes them), and measured-against-projected rows from the result files given (validate,
//! emulate, demo, lwk, noise) — with the command that produced each part. [`render`] embeds that
//! data as JSON in one HTML page whose small hand-written script draws the tables and SVG charts
//! (hover for values). No network, no CDN: the page works offline.

mod chrome;
mod data;
mod error;
mod extrap;
mod html;
mod records;
mod results;

pub use chrome::chrome_trace;
pub use data::{build, Cdf, Inputs, Measured, MeasuredRow, ProfileRow, ProjectionCell, Report, Section};
pub use error::ReportError;
pub use extrap::extrap_text;
pub use html::render;
pub use records::{records_table, write_trace};
pub use results::{classify, demo_emulation, ResultKind};

/// Builds the report and writes the page to `out`; returns the data embedded in it.
pub fn write(inputs: &Inputs, out: &std::path::Path) -> Result<Report, ReportError> {
    let r = build(inputs)?;
    std::fs::write(out, render(&r)?).map_err(|e| ReportError::Write {
        path: out.display().to_string(),
        source: e,
    })?;
    Ok(r)
}
