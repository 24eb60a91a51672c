//! The key-value service of issue #11: the same line protocol ([`protocol`]) served by a server
//! built from machines ([`machines`]: network, storage on SQLite, compression, OS machine), by
//! the ordinary asynchronous way ([`tokio_server`]: a Tokio runtime, a task per connection) and
//! by a thread-per-connection server ([`ordinary`]), every one over its own SQLite file on disk
//! (WAL, [`store`]), and a bounded loopback load generator ([`loadgen`]) that measures the three
//! side by side in one run ([`compare`]).

pub mod loadgen;
pub mod machines;
pub mod ordinary;
pub mod protocol;
pub mod store;
pub mod tokio_server;

use serde::Serialize;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub use loadgen::{LoadConfig, LoadReport, Mix};
pub use machines::{Layout, MachineRunStats, MachineServer, MachineSetup};
pub use ordinary::ThreadServer;
pub use tokio_server::TokioServer;

/// Errors of the key-value service and its load generator.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error("SQLite: {what}: {why}")]
    Sqlite { what: &'static str, why: String },
    #[error("stored value does not decompress ({0}): the database holds a corrupt value")]
    Corrupt(String),
    #[error("{0}: {1}")]
    Io(&'static str, String),
    #[error("the load generator only targets loopback; {0} is not a loopback address")]
    NotLoopback(SocketAddr),
    #[error("load generator: {0}")]
    BadConfig(&'static str),
    #[error("starting the machines: {0}")]
    Machine(#[from] crate::machine::MachineError),
}

/// A running server.
pub trait KvServer {
    fn addr(&self) -> SocketAddr;
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The three servers under the same load, one after the other in one run.
#[derive(Debug, Clone, Serialize)]
pub struct KvComparison {
    pub load: LoadConfig,
    pub placement: machines::Placement,
    /// How every server stores: "SQLite file in a temp dir, WAL, synchronous=NORMAL".
    pub storage: &'static str,
    pub tokio_workers: usize,
    pub machines: LoadReport,
    pub tokio: LoadReport,
    pub threads: LoadReport,
    /// machines / threads.
    pub throughput_ratio: f64,
    /// machines / threads.
    pub p99_ratio: f64,
    /// machines / Tokio.
    pub throughput_vs_tokio: f64,
    pub p99_vs_tokio: f64,
    /// The machine server under each layout, in the order run (the first is `machines`).
    pub layouts: Vec<LayoutRun>,
}

/// The machine server under one layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutRun {
    pub report: LoadReport,
    pub stats: MachineRunStats,
    /// Against the `Shared` static layout of the same run: throughput and p99 ratios.
    pub throughput_vs_shared: f64,
    pub p99_vs_shared: f64,
}

impl KvComparison {
    /// The run of `layout`, if it was measured.
    pub fn layout(&self, layout: Layout) -> Option<&LayoutRun> {
        self.layouts.iter().find(|l| l.stats.layout == layout)
    }
}

/// What [`compare`] says of the storage.
pub const STORAGE: &str = "SQLite file in a temp dir, WAL, synchronous=NORMAL";

/// Starts each server, runs the generator against it, stops it: threads, Tokio, machines. The
/// machine server's idle workers spin `idle_spin` before they sleep; the Tokio runtime has one
/// worker per usable CPU.
pub fn compare(load: &LoadConfig, idle_spin: Duration) -> Result<KvComparison, KvError> {
    compare_layouts(load, idle_spin, &[])
}

/// The machine server under `layout`, with its run's statistics.
fn run_layout(load: &LoadConfig, idle_spin: Duration, layout: Layout) -> Result<(LoadReport, MachineRunStats, machines::Placement), KvError> {
    let s = MachineServer::start_with(&MachineSetup {
        connections: load.connections,
        idle_spin,
        layout,
        trace: 0,
    })?;
    let name = match layout {
        Layout::Shared => "machines".to_string(),
        l => format!("machines-{}", l.label()),
    };
    let r = loadgen::run(&name, s.addr(), load)?;
    Ok((r, s.run_stats(), s.placement))
}

/// [`compare`], then the machine server again under each of `more` layouts (e.g. the static
/// spread one and the Machine Manager's utilization policy), all under the same load in one run.
pub fn compare_layouts(load: &LoadConfig, idle_spin: Duration, more: &[Layout]) -> Result<KvComparison, KvError> {
    let threads = {
        let s = ThreadServer::start()?;
        loadgen::run("threads", s.addr(), load)?
    };
    let workers = multios_host::CpuSet::allowed().len().max(1);
    let tokio = {
        let s = TokioServer::start(workers)?;
        loadgen::run("tokio", s.addr(), load)?
    };
    let (machines, shared_stats, placement) = run_layout(load, idle_spin, Layout::Shared)?;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let mut layouts = vec![LayoutRun {
        report: machines.clone(),
        stats: shared_stats,
        throughput_vs_shared: 1.0,
        p99_vs_shared: 1.0,
    }];
    for &l in more.iter().filter(|&&l| l != Layout::Shared) {
        let (report, stats, _) = run_layout(load, idle_spin, l)?;
        layouts.push(LayoutRun {
            throughput_vs_shared: ratio(report.throughput_rps, machines.throughput_rps),
            p99_vs_shared: ratio(report.p99_us, machines.p99_us),
            report,
            stats,
        });
    }
    Ok(KvComparison {
        load: *load,
        placement,
        storage: STORAGE,
        tokio_workers: workers,
        throughput_ratio: ratio(machines.throughput_rps, threads.throughput_rps),
        p99_ratio: ratio(machines.p99_us, threads.p99_us),
        throughput_vs_tokio: ratio(machines.throughput_rps, tokio.throughput_rps),
        p99_vs_tokio: ratio(machines.p99_us, tokio.p99_us),
        machines,
        tokio,
        threads,
        layouts,
    })
}
