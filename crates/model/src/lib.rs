//! Speedup models for multi-OS environments.
//!
//! Equation numbers refer to Tauro, Liu and Hale, *Modeling Speedup in Multi-OS Environments*
//! (seed `000_…`): the naïve model (eq. 3), the refined model (eq. 4–11) and the queueing extension
//! (§6, eq. 12–13), which this crate extends from one delegate (M/M/1) to `c` delegates (M/M/c).
//!
//! All times are seconds (`f64`).

mod advise;
mod delegation;
mod error;
mod fit;
mod naive;
pub mod paper;
mod policy;
mod queue;
mod refined;
pub mod sweep;
mod terms;
pub mod tree;
mod workload;

pub use advise::{advise, Advice, AdviceItem};
pub use delegation::Delegation;
pub use error::ModelError;
pub use fit::{accuracy, fit_gamma_naive, fit_gamma_refined, median, parse_pairs};
pub use naive::naive;
pub use policy::{Order, Policy};
pub use queue::{erlang_c, mmc, QueueParams, QueueResult};
pub use refined::{refined, Breakdown, GPrime, Params, Projection};
pub use terms::{
    corrected, corrected_t_d, parse_terms, spare, AtMapTouch, ByClass, Cache, CallClass, ImageBytes,
    ImagePrice, Images, MemCall, MemCalls, Term, Terms, Touch,
};
pub use tree::{compose, ProcessTree, TreeProjection};
pub use workload::{Call, Workload};
