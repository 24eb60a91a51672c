//! Asynchronous Abstract Machines (seed 004, Maier et al., ROSS'19) as a Rust library.
//!
//! - [`machine`]: a [`Machine`] owns pinned CPUs and schedules its tasks (local FIFO ready
//!   queues, optional work stealing, interface queues when nothing else is ready);
//! - [`task`]: stackless tasks (Rust futures), their join handles, their size;
//! - [`oneshot`], [`signal`]: the future of a task and the counting signal, free of lost wake-ups;
//! - [`interface`]: served objects, client queues, machine calls in three variants, the
//!   [`interface!`] macro;
//! - [`manager`]: the Machine Manager (static and utilization-based core assignment, core moves);
//! - [`ims`]: spin-then-futex sleeping and the wake-up protocol;
//! - [`os`]: the OS machine, serving system calls as machine calls;
//! - [`trace`]: per-worker event rings exported as Chrome trace JSON;
//! - [`bench`]: the microbenchmarks of the paper's Table 1 and their baselines.
//!
//! ```
//! use multios_aam::{block_on, ConnectOptions, MachineBuilder, ServeOptions};
//!
//! multios_aam::interface! {
//!     pub trait Counter as CounterClient {
//!         fn add(&self, n: u64) -> u64;
//!     }
//! }
//! struct Total(std::sync::atomic::AtomicU64);
//! impl Counter for Total {
//!     async fn add(&self, n: u64) -> u64 {
//!         self.0.fetch_add(n, std::sync::atomic::Ordering::SeqCst) + n
//!     }
//! }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = MachineBuilder::new("counter").cores(1).build()?;
//! let client = MachineBuilder::new("app").cores(1).build()?;
//! let svc = server.serve(Total(0.into()), ServeOptions::default());
//! let c = CounterClient::new(svc.connect(ConnectOptions::default()));
//! let r = block_on(client.spawn("main", async move { c.add(2).await }))?;
//! assert_eq!(r, Ok(2));
//! # Ok(())
//! # }
//! ```
//!
//! Every raw system call and most `unsafe` live in `sys`; the rest is in the task cell (`task`)
//! and the server side of a call (`serve`: the call's future built in a scratch block). The
//! wait-free protocols (the call ring, futures, counting signal, task state, IMS) are in
//! `multios-aam-sync`, where loom checks them. See `crates/aam/README.md`.

pub mod bench;
mod block;
mod builder;
mod domain;
pub mod ims;
pub mod interface;
pub mod kv;
pub mod machine;
pub mod manager;
pub use multios_aam_sync::oneshot;
pub mod os;
pub use multios_aam_sync::signal;
mod serve;
mod sys;
pub mod task;
pub mod trace;
mod worker;

pub use block::block_on;
pub use builder::MachineBuilder;
pub use interface::{Call, CallError, ConnectOptions, Endpoint, ServeOptions, Service};
pub use machine::{
    spawned_task_bytes, Machine, MachineError, MachineHandle, MachineSignal, MachineStats, PanicReport,
};
pub use multios_aam_sync::CountingSignal;
pub use task::{task_size_of, yield_now, JoinHandle, TaskError};
