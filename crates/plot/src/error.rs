//! Errors of this crate: each names the figure, series or file at fault and the fix.

use std::path::PathBuf;

/// Why a figure could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A coordinate that must be a finite number is not.
    #[error("figure \"{figure}\", {place}: {axis} = {value} is not a finite number; {fix}")]
    NotFinite {
        /// Title of the figure.
        figure: String,
        /// Where: series and point index, or grid index.
        place: String,
        /// "x", "y" or "z".
        axis: &'static str,
        /// The offending value.
        value: f64,
        /// How to fix it.
        fix: &'static str,
    },
    /// A value on a logarithmic axis that is zero or negative.
    #[error(
        "figure \"{figure}\", {place}: {axis} = {value} cannot be drawn on a logarithmic {axis} axis; \
         use a linear axis, or give NaN for a point that has no value"
    )]
    NonPositiveOnLog {
        /// Title of the figure.
        figure: String,
        /// Where: series and point index, or grid index.
        place: String,
        /// "x" or "y".
        axis: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A heat map whose grid is not a proper grid.
    #[error("heat map \"{figure}\": {detail}")]
    Grid {
        /// Title of the figure.
        figure: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// A timeline with a bar or mark that cannot be drawn.
    #[error("timeline \"{figure}\": {detail}")]
    Timeline {
        /// Title of the figure.
        figure: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The drawing library failed while rendering a file.
    #[error("{path}: drawing failed: {message}")]
    Render {
        /// The file being drawn.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
    /// No usable font for the text of the figure: the message names the paths tried
    /// and the fix.
    #[error("{message}")]
    Font {
        /// What was tried and how to fix it.
        message: String,
    },
}
