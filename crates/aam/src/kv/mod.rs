//! The key-value service of issue #11: the same line protocol ([`protocol`]) served by a server
//! built from machines ([`machines`]: network, storage on SQLite, compression, OS machine) and
//! by an ordinary thread-per-connection server ([`ordinary`]), and a bounded loopback load
//! generator ([`loadgen`]) that measures both side by side ([`compare`]).

pub mod loadgen;
pub mod machines;
pub mod ordinary;
pub mod protocol;
pub mod store;

use serde::Serialize;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub use loadgen::{LoadConfig, LoadReport};
pub use machines::MachineServer;
pub use ordinary::ThreadServer;

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

/// Both servers under the same load, one after the other in one run.
#[derive(Debug, Clone, Serialize)]
pub struct KvComparison {
    pub load: LoadConfig,
    pub placement: machines::Placement,
    pub machines: LoadReport,
    pub threads: LoadReport,
    /// machines / threads.
    pub throughput_ratio: f64,
    /// machines / threads.
    pub p99_ratio: f64,
}

/// Starts each server, runs the generator against it, stops it; the machine server's idle
/// workers spin `idle_spin` before they sleep.
pub fn compare(load: &LoadConfig, idle_spin: Duration) -> Result<KvComparison, KvError> {
    let threads = {
        let s = ThreadServer::start()?;
        loadgen::run("threads", s.addr(), load)?
    };
    let (machines, placement) = {
        let s = MachineServer::start(load.connections, idle_spin)?;
        (loadgen::run("machines", s.addr(), load)?, s.placement)
    };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Ok(KvComparison {
        load: *load,
        placement,
        throughput_ratio: ratio(machines.throughput_rps, threads.throughput_rps),
        p99_ratio: ratio(machines.p99_us, threads.p99_us),
        machines,
        threads,
    })
}
