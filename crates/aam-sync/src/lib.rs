//! The wait-free protocols of the AAM runtime (`multios-aam`, issue #11), kept apart so that loom
//! can check them by exhaustive interleaving (`RUSTFLAGS="--cfg multios_loom"`, see
//! `tests/loom.rs`); normal builds use the standard library's atomics and the futex.
//!
//! - [`ring`]: a client's call ring, one cache line per call carrying the request and its result;
//! - [`oneshot`]: the future of a task;
//! - [`signal`]: the counting signal;
//! - [`task_state`]: a task's state machine (the paper's enqueue handler);
//! - [`parker`]: the IMS sleep/wake protocol of an idle worker;
//! - [`activation`]: IMS to a machine that holds no core: the Machine Manager's grant, and the
//!   machine switch of a core that would start to idle.

pub mod activation;
pub mod oneshot;
pub mod parker;
pub mod ring;
pub mod signal;
pub mod task_state;

#[cfg(multios_loom)]
mod futex_model;
mod shim;
#[cfg(not(multios_loom))]
pub mod sys;

pub use signal::CountingSignal;
