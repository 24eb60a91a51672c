//! The key-value service written the ordinary asynchronous way: a Tokio multi-thread runtime (one
//! worker per usable CPU), an accept loop and one task per connection that reads lines, answers
//! them inline (zlib and SQLite, the store behind a mutex, as the thread server does) and writes
//! the replies.

use super::ordinary::answer_lines;
use super::store::Store;
use super::{KvError, KvServer};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

async fn serve_connection(store: Arc<Store>, mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let (out, bad) = answer_lines(&store, &mut buf);
        if s.write_all(&out).await.is_err() || bad {
            return;
        }
    }
}

/// The Tokio server; stops (runtime shut down, connections closed) when dropped.
pub struct TokioServer {
    addr: SocketAddr,
    stop: Arc<Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub workers: usize,
}

impl TokioServer {
    /// Listens on an ephemeral port of 127.0.0.1 with `workers` runtime threads.
    pub fn start(workers: usize) -> Result<TokioServer, KvError> {
        let store = Arc::new(Store::open()?);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name("kv-tokio")
            .enable_io()
            .build()
            .map_err(|e| KvError::Io("start the Tokio runtime", e.to_string()))?;
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| KvError::Io("bind 127.0.0.1:0", e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| KvError::Io("local_addr", e.to_string()))?;
        let stop = Arc::new(Notify::new());
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("kv-tokio-main".into())
            .spawn(move || {
                rt.block_on(async move {
                    loop {
                        tokio::select! {
                            _ = st.notified() => break,
                            r = listener.accept() => {
                                if let Ok((s, _)) = r {
                                    tokio::spawn(serve_connection(store.clone(), s));
                                }
                            }
                        }
                    }
                });
                // Connection tasks still reading are dropped with the runtime.
                rt.shutdown_background();
            })
            .map_err(|e| KvError::Io("spawn the Tokio server thread", e.to_string()))?;
        Ok(TokioServer {
            addr,
            stop,
            thread: Some(thread),
            workers: workers.max(1),
        })
    }
}

impl KvServer for TokioServer {
    fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TokioServer {
    fn drop(&mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
