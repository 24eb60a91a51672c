//! The key-value service written the ordinary way: a blocking accept thread and one thread per
//! connection (the thread pool grows to the number of connections), doing parsing, zlib and
//! SQLite inline; the store is shared behind a mutex.

use super::protocol::{self, Reply, Request};
use super::store::{self, Store};
use super::{KvError, KvServer};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The answer to one request line.
pub fn answer(store: &Store, line: &[u8]) -> Reply {
    match protocol::parse(line) {
        Err(e) => Reply::Err(e.to_string()),
        Ok(Request::Put { key, value }) => match store.put(&key, &store::compress(&value)) {
            Ok(()) => Reply::Ok,
            Err(e) => Reply::Err(e.to_string()),
        },
        Ok(Request::Get { key }) => match store
            .get(&key)
            .and_then(|c| c.map(|c| store::decompress(&c)).transpose())
        {
            Ok(Some(v)) => Reply::Value(v),
            Ok(None) => Reply::NotFound,
            Err(e) => Reply::Err(e.to_string()),
        },
    }
}

/// Answers every complete line in `buf` (removing them); true if the input was bad (a line too
/// long), after which the connection closes.
pub fn answer_lines(store: &Store, buf: &mut Vec<u8>) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let lines = protocol::take_lines(buf);
    for line in lines.as_deref().unwrap_or_default() {
        answer(store, line).append_to(&mut out);
    }
    if let Err(e) = &lines {
        Reply::Err(e.to_string()).append_to(&mut out);
    }
    (out, lines.is_err())
}

fn serve_connection(store: &Store, mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let (out, bad) = answer_lines(store, &mut buf);
        if s.write_all(&out).is_err() || bad {
            return;
        }
    }
}

/// The open connections (a clone of each stream, to shut it down) and their threads.
type Connections = Arc<Mutex<Vec<(TcpStream, JoinHandle<()>)>>>;

/// The thread-per-connection server.
pub struct ThreadServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    conns: Connections,
}

impl ThreadServer {
    /// Listens on an ephemeral port of 127.0.0.1.
    pub fn start() -> Result<ThreadServer, KvError> {
        let store = Arc::new(Store::open()?);
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| KvError::Io("bind 127.0.0.1:0", e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| KvError::Io("local_addr", e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Connections = Arc::default();
        let (st, cs) = (stop.clone(), conns.clone());
        let acceptor = std::thread::Builder::new()
            .name("kv-accept".into())
            .spawn(move || {
                for s in listener.incoming() {
                    if st.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(s) = s else { continue };
                    let Ok(peer) = s.try_clone() else { continue };
                    let store = store.clone();
                    if let Ok(h) = std::thread::Builder::new()
                        .name("kv-conn".into())
                        .spawn(move || serve_connection(&store, s))
                    {
                        super::lock(&cs).push((peer, h));
                    }
                }
            })
            .map_err(|e| KvError::Io("spawn the accept thread", e.to_string()))?;
        Ok(ThreadServer {
            addr,
            stop,
            acceptor: Some(acceptor),
            conns,
        })
    }
}

impl KvServer for ThreadServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ThreadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        for (s, h) in std::mem::take(&mut *super::lock(&self.conns)) {
            let _ = s.shutdown(std::net::Shutdown::Both);
            let _ = h.join();
        }
    }
}
