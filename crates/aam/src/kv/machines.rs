//! The key-value service built from machines, as the paper's authors built theirs from SQLite
//! and TCP/IP: a network machine (one task per connection: parse, call the others, reply), a
//! storage machine serving the SQLite store, a compression machine serving zlib, and the OS
//! machine performing `accept`, `recv`, `send` and `close` for the network machine. The network,
//! storage and compression machines share the last usable CPU; the OS machine has the first
//! (Linux's control CPU) with one worker per connection plus two, since a blocked `recv` or
//! `accept` blocks its worker.

use super::protocol::{self, Reply, Request};
use super::store::{self, Store};
use super::{lock, KvError, KvServer};
use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, ServeOptions, Service};
use crate::machine::Machine;
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

/// Where the machines run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    pub os_cpu: usize,
    pub machine_cpu: usize,
    pub os_workers: usize,
    pub idle_spin_us: u64,
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
    // Declared in drop order: the network machine first, the OS machine last.
    net: Machine,
    _storage: Machine,
    _compression: Machine,
    _os: OsMachine,
    _listener: TcpListener,
    pub placement: Placement,
}

impl MachineServer {
    /// Listens on an ephemeral port of 127.0.0.1 and serves up to `connections` connections at
    /// once (the OS machine gets `connections + 2` workers).
    pub fn start(connections: usize, idle_spin: Duration) -> Result<MachineServer, KvError> {
        let list: Vec<usize> = CpuSet::allowed().0.into_iter().collect();
        let (Some(&os_cpu), Some(&machine_cpu)) = (list.first(), list.last()) else {
            return Err(KvError::Io("choose CPUs", "no usable CPU".into()));
        };
        let placement = Placement {
            os_cpu,
            machine_cpu,
            os_workers: connections + 2,
            idle_spin_us: idle_spin.as_micros() as u64,
        };
        let os = OsMachine::start(os_cpu, placement.os_workers, idle_spin, 32)?;
        let on = |name: &str| {
            MachineBuilder::new(name)
                .cpus(CpuSet([machine_cpu].into()))
                .idle_spin(idle_spin)
                .build()
        };
        let net = on("kv-net")?;
        let storage = on("kv-storage")?;
        let compression = on("kv-compression")?;
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
            net,
            _storage: storage,
            _compression: compression,
            _os: os,
            _listener: listener,
            placement,
        })
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
        self.net.stop();
    }
}
