//! The key-value service built from machines, as the paper's authors built theirs from SQLite
//! and TCP/IP: a network machine (one task per connection: parse, call the others, reply), a
//! storage machine serving the SQLite store, a compression machine serving zlib, and the OS
//! machine performing `accept`, `recv`, `send` and `close` for the network machine. The OS machine
//! has the first usable CPU (Linux's control CPU) with one worker per connection plus two, since a
//! blocked `recv` or `accept` blocks its worker. Where the other three run is the [`Layout`]:
//!
//! - `Shared` (static): network, storage and compression share the last CPU, each with a worker
//!   pinned there (Linux time-shares them);
//! - `Spread` (static): the network machine on the first CPU (beside the OS machine), storage and
//!   compression on the last;
//! - `Managed(policy)`: each of the three has a worker on both CPUs and a Machine Manager with
//!   `policy` gives each CPU to one of them at a time: network starts on the first, storage on
//!   the last, compression with none. A machine that gets a request without holding a core is
//!   activated by the manager (IMS), an idle holder hands its CPU over, and the policy moves
//!   CPUs to where the ready tasks are every millisecond.

use super::protocol::{self, Reply, Request};
use super::store::{self, Store};
use super::{lock, KvError, KvServer};
use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, ServeOptions, Service};
use crate::machine::{Machine, MachineStats};
use crate::manager::{MachineManager, MoveCounts, Policy};
use crate::os::{Os, OsClient, OsMachine};
use crate::task::JoinHandle;
use multios_host::CpuSet;
use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

crate::interface! {
    /// The storage machine's interface.
    pub trait KvStorage as KvStorageClient {
        fn put(&self, key: Vec<u8>, compressed: Vec<u8>) -> Result<(), String>;
        fn get(&self, key: Vec<u8>) -> Result<Option<Vec<u8>>, String>;
    }
}

crate::interface! {
    /// The compression machine's interface.
    pub trait Compressor as CompressorClient {
        fn compress(&self, data: Vec<u8>) -> Vec<u8>;
        fn decompress(&self, data: Vec<u8>) -> Result<Vec<u8>, String>;
    }
}

impl KvStorage for Store {
    async fn put(&self, key: Vec<u8>, compressed: Vec<u8>) -> Result<(), String> {
        Store::put(self, &key, &compressed).map_err(|e| e.to_string())
    }
    async fn get(&self, key: Vec<u8>) -> Result<Option<Vec<u8>>, String> {
        Store::get(self, &key).map_err(|e| e.to_string())
    }
}

/// The compression machine's served object.
pub struct Zlib;

impl Compressor for Zlib {
    async fn compress(&self, data: Vec<u8>) -> Vec<u8> {
        store::compress(&data)
    }
    async fn decompress(&self, data: Vec<u8>) -> Result<Vec<u8>, String> {
        store::decompress(&data).map_err(|e| e.to_string())
    }
}

/// Where the network, storage and compression machines run (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    Shared,
    Spread,
    Managed(Policy),
}

impl Layout {
    /// A short label: "static-shared", "static-spread", "utilization", "proportional".
    pub fn label(self) -> &'static str {
        match self {
            Layout::Shared => "static-shared",
            Layout::Spread => "static-spread",
            Layout::Managed(Policy::Utilization) => "utilization",
            Layout::Managed(Policy::Proportional) => "proportional",
            Layout::Managed(Policy::Static) => "managed-static",
        }
    }
}

/// Where the machines run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    pub os_cpu: usize,
    /// The CPU the storage and compression machines start on (all three with `Shared`).
    pub machine_cpu: usize,
    pub os_workers: usize,
    pub idle_spin_us: u64,
    pub layout: Layout,
}

/// How to start the machine server.
#[derive(Debug, Clone, Copy)]
pub struct MachineSetup {
    pub connections: usize,
    pub idle_spin: Duration,
    pub layout: Layout,
    /// Trace events kept per worker of the network, storage and compression machines (0: none).
    pub trace: usize,
}

/// What the machines did during a run: the manager's moves by cause and the machines' counters.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MachineRunStats {
    pub layout: Layout,
    pub moves: MoveCounts,
    /// Median time from a move's decision until the receiving worker ran (0 without moves).
    pub move_median_ns: f64,
    pub machines: Vec<(String, MachineStats)>,
}

struct Services {
    os: Service<Os>,
    storage: Service<Store>,
    compressor: Service<Zlib>,
    open: Mutex<HashSet<i32>>,
    stop: AtomicBool,
}

async fn answer(storage: &KvStorageClient<Store>, zlib: &CompressorClient<Zlib>, line: &[u8]) -> Reply {
    let failed = |e: String| Reply::Err(e);
    match protocol::parse(line) {
        Err(e) => Reply::Err(e.to_string()),
        Ok(Request::Put { key, value }) => {
            let c = match zlib.compress(value).await {
                Ok(c) => c,
                Err(e) => return failed(e.to_string()),
            };
            match storage.put(key, c).await {
                Ok(Ok(())) => Reply::Ok,
                Ok(Err(e)) => failed(e),
                Err(e) => failed(e.to_string()),
            }
        }
        Ok(Request::Get { key }) => match storage.get(key).await {
            Ok(Ok(None)) => Reply::NotFound,
            Ok(Ok(Some(c))) => match zlib.decompress(c).await {
                Ok(Ok(v)) => Reply::Value(v),
                Ok(Err(e)) => failed(e),
                Err(e) => failed(e.to_string()),
            },
            Ok(Err(e)) => failed(e),
            Err(e) => failed(e.to_string()),
        },
    }
}

async fn send_all(os: &OsClient<Os>, fd: i32, mut out: Vec<u8>) -> bool {
    while !out.is_empty() {
        match os.send(fd, out.clone(), libc::MSG_NOSIGNAL).await {
            Ok(Ok(n)) if n > 0 => {
                out.drain(..n);
            }
            _ => return false,
        }
    }
    true
}

/// A network-machine task serving one connection until the peer closes it.
async fn connection(sv: Arc<Services>, fd: i32) {
    let os = OsClient::new(sv.os.connect(ConnectOptions::default()));
    let storage = KvStorageClient::new(sv.storage.connect(ConnectOptions::default()));
    let zlib = CompressorClient::new(sv.compressor.connect(ConnectOptions::default()));
    let mut buf = Vec::new();
    loop {
        let data = match os.recv(fd, 64 * 1024, 0).await {
            Ok(Ok(d)) if !d.is_empty() => d,
            _ => break,
        };
        buf.extend_from_slice(&data);
        let lines = protocol::take_lines(&mut buf);
        let mut out = Vec::new();
        for line in lines.as_deref().unwrap_or_default() {
            answer(&storage, &zlib, line).await.append_to(&mut out);
        }
        if let Err(e) = &lines {
            Reply::Err(e.to_string()).append_to(&mut out);
        }
        if !send_all(&os, fd, out).await || lines.is_err() {
            break;
        }
    }
    lock(&sv.open).remove(&fd);
    let _ = os.close(fd).await;
}

/// The AAM key-value server.
pub struct MachineServer {
    addr: SocketAddr,
    services: Arc<Services>,
    acceptor: Option<JoinHandle<()>>,
    manager: Option<MachineManager>,
    // Declared in drop order: the network machine first, the OS machine last.
    net: Machine,
    storage: Machine,
    compression: Machine,
    _os: OsMachine,
    _listener: TcpListener,
    pub placement: Placement,
}

impl MachineServer {
    /// Listens on an ephemeral port of 127.0.0.1 and serves up to `connections` connections at
    /// once (the OS machine gets `connections + 2` workers); the `Shared` layout.
    pub fn start(connections: usize, idle_spin: Duration) -> Result<MachineServer, KvError> {
        MachineServer::start_with(&MachineSetup {
            connections,
            idle_spin,
            layout: Layout::Shared,
            trace: 0,
        })
    }

    /// As [`start`](Self::start), with the machines placed by `setup.layout`.
    pub fn start_with(setup: &MachineSetup) -> Result<MachineServer, KvError> {
        let (connections, idle_spin) = (setup.connections, setup.idle_spin);
        if setup.layout == Layout::Managed(Policy::Static) {
            return Err(KvError::BadConfig(
                "a managed layout needs a moving policy (utilization or proportional): with one machine per CPU at a time, a static manager would leave compression without a core",
            ));
        }
        let list: Vec<usize> = CpuSet::allowed().0.into_iter().collect();
        let (Some(&os_cpu), Some(&machine_cpu)) = (list.first(), list.last()) else {
            return Err(KvError::Io("choose CPUs", "no usable CPU".into()));
        };
        let placement = Placement {
            os_cpu,
            machine_cpu,
            os_workers: connections + 2,
            idle_spin_us: idle_spin.as_micros() as u64,
            layout: setup.layout,
        };
        let os = OsMachine::start(os_cpu, placement.os_workers, idle_spin, 32)?;
        let both = CpuSet([os_cpu, machine_cpu].into());
        let on = |name: &str, cpus: CpuSet, active: Option<CpuSet>| {
            let mut b = MachineBuilder::new(name)
                .cpus(cpus)
                .idle_spin(idle_spin)
                .trace(setup.trace);
            if let Some(a) = active {
                b = b.active_cpus(a);
            }
            b.build()
        };
        let (first, last) = (CpuSet([os_cpu].into()), CpuSet([machine_cpu].into()));
        let (net, storage, compression) = match setup.layout {
            Layout::Shared => (
                on("kv-net", last.clone(), None)?,
                on("kv-storage", last.clone(), None)?,
                on("kv-compression", last, None)?,
            ),
            Layout::Spread => (
                on("kv-net", first, None)?,
                on("kv-storage", last.clone(), None)?,
                on("kv-compression", last, None)?,
            ),
            Layout::Managed(_) => (
                on("kv-net", both.clone(), Some(first))?,
                on("kv-storage", both.clone(), Some(last))?,
                on("kv-compression", both, Some(CpuSet::default()))?,
            ),
        };
        let manager = match setup.layout {
            Layout::Managed(policy) => Some(MachineManager::start(
                vec![net.handle(), storage.handle(), compression.handle()],
                policy,
                Duration::from_millis(1),
            )),
            _ => None,
        };
        let services = Arc::new(Services {
            os: os.service.clone(),
            storage: storage.serve(Store::open()?, ServeOptions::default()),
            compressor: compression.serve(Zlib, ServeOptions::default()),
            open: Mutex::new(HashSet::new()),
            stop: AtomicBool::new(false),
        });
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| KvError::Io("bind 127.0.0.1:0", e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| KvError::Io("local_addr", e.to_string()))?;
        let lfd = listener.as_raw_fd();
        let (sv, h) = (services.clone(), net.handle());
        let acceptor = net.spawn("kv-accept", async move {
            let os = OsClient::new(sv.os.connect(ConnectOptions::default()));
            loop {
                let fd = match os.accept(lfd).await {
                    Ok(Ok(fd)) => fd,
                    Ok(Err(_)) if !sv.stop.load(Ordering::SeqCst) => continue,
                    _ => break,
                };
                if sv.stop.load(Ordering::SeqCst) {
                    let _ = os.close(fd).await;
                    break;
                }
                lock(&sv.open).insert(fd);
                let _ = crate::sys::set_nodelay(fd);
                drop(h.spawn("kv-connection", connection(sv.clone(), fd)));
            }
        });
        Ok(MachineServer {
            addr,
            services,
            acceptor: Some(acceptor),
            manager,
            net,
            storage,
            compression,
            _os: os,
            _listener: listener,
            placement,
        })
    }
}

impl MachineServer {
    /// The manager's moves and the machines' counters so far.
    pub fn run_stats(&self) -> MachineRunStats {
        let (moves, move_median_ns) = match &self.manager {
            Some(m) => {
                let mut ns: Vec<f64> = m.moves().iter().map(|m| m.ns).collect();
                ns.sort_by(f64::total_cmp);
                (m.move_counts(), ns.get(ns.len() / 2).copied().unwrap_or(0.0))
            }
            None => (MoveCounts::default(), 0.0),
        };
        MachineRunStats {
            layout: self.placement.layout,
            moves,
            move_median_ns,
            machines: [&self.net, &self.storage, &self.compression, &self._os.machine]
                .iter()
                .map(|m| (m.name().to_string(), m.stats()))
                .collect(),
        }
    }

    /// The network, storage and compression machines (for their traces).
    pub fn machines(&self) -> [crate::MachineHandle; 3] {
        [self.net.handle(), self.storage.handle(), self.compression.handle()]
    }
}

impl KvServer for MachineServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MachineServer {
    fn drop(&mut self) {
        self.services.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = crate::block_on(a);
        }
        // Unblock the OS-machine workers still in `recv` for open connections.
        for &fd in lock(&self.services.open).iter() {
            let _ = crate::sys::shutdown(fd);
        }
        // Let the connection tasks close their sockets before the machines stop.
        let start = std::time::Instant::now();
        while !lock(&self.services.open).is_empty() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.manager.take();
        self.net.stop();
    }
}
