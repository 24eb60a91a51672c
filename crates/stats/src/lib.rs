//! The statistics every multios experiment shares — the single owner of each:
//! - [`median`] and [`quantile`]: one rule, linear interpolation between order statistics (type 7
//!   of R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", *The American
//!   Statistician* 50(4), 1996), so the median of an even count is the mean of the two middle
//!   values; non-finite samples are ignored and an empty series has no median (`None`);
//! - [`Paired`]: the run-by-run comparison of two series taken in alternation, with the
//!   distribution-free confidence interval of its median ([`median_ci_rank`]);
//! - [`ceiling_error`]: the accuracy a perfect model could reach against such medians on this
//!   machine, from the A/A pairs the ABBA order already holds ([`same_side_log_ratios`]).
//!
//! A leaf crate: the profiler, the LWK's benchmarks and the model use it as much as the experiments.

mod ceiling;
mod order;
mod paired;

pub use ceiling::{ceiling_error, same_side_log_ratios, DRAWS};
pub use order::{median, median_sorted, quantile};
pub use paired::{median_ci_rank, paired, paired_diff, Paired};
