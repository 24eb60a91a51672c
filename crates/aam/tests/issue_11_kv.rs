//! Issue #11: the key-value service (machines and threads) returns exactly what was stored,
//! refuses bad requests with an error reply, and the load generator keeps its bounds.

use multios_aam::kv::loadgen::{self, LoadConfig, Mix};
use multios_aam::kv::machines::{Layout, MachineSetup};
use multios_aam::kv::{KvError, KvServer, MachineServer, ThreadServer, TokioServer};
use multios_aam::manager::Policy;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn exchange(addr: SocketAddr, requests: &[&[u8]]) -> Vec<Vec<u8>> {
    let s = TcpStream::connect(addr).expect("connect to the server");
    let mut w = s.try_clone().expect("clone the stream");
    let mut r = BufReader::new(s);
    let mut replies = Vec::new();
    for req in requests {
        w.write_all(req).expect("send a request");
        w.write_all(b"\n").expect("send a newline");
        let mut line = Vec::new();
        r.read_until(b'\n', &mut line).expect("read a reply");
        assert_eq!(
            line.pop(),
            Some(b'\n'),
            "reply to {:?} ends in a newline",
            String::from_utf8_lossy(req)
        );
        replies.push(line);
    }
    replies
}

fn stores_exactly(addr: SocketAddr) {
    let big = [b"PUT big ".as_slice(), &b"0123456789".repeat(3000)].concat();
    let replies = exchange(
        addr,
        &[
            b"GET nothing",
            b"PUT a hello world",
            b"GET a",
            b"PUT a second value, with  two spaces",
            b"GET a",
            b"PUT empty ",
            b"GET empty",
            &big,
            b"GET big",
            b"PUT bin \x01\x02\xff\x00z",
            b"GET bin",
        ],
    );
    let expect: Vec<Vec<u8>> = vec![
        b"NOTFOUND".to_vec(),
        b"OK".to_vec(),
        b"VALUE hello world".to_vec(),
        b"OK".to_vec(),
        b"VALUE second value, with  two spaces".to_vec(),
        b"OK".to_vec(),
        b"VALUE ".to_vec(),
        b"OK".to_vec(),
        [b"VALUE ".as_slice(), &b"0123456789".repeat(3000)].concat(),
        b"OK".to_vec(),
        b"VALUE \x01\x02\xff\x00z".to_vec(),
    ];
    assert_eq!(replies, expect);
}

fn refuses_bad_requests(addr: SocketAddr) {
    let replies = exchange(
        addr,
        &[
            b"DEL a",
            b"GET",
            b"PUT onlykey",
            b"GET a b",
            b"",
            b"PUT k v",
            b"GET k",
        ],
    );
    for (i, r) in replies.iter().take(5).enumerate() {
        assert!(
            r.starts_with(b"ERR "),
            "request {i} got {:?}",
            String::from_utf8_lossy(r)
        );
    }
    // The connection keeps serving after errors.
    assert_eq!(replies[5], b"OK");
    assert_eq!(replies[6], b"VALUE v");
}

#[test]
fn issue_11_kv_threads_store_exactly_and_refuse_bad_requests() -> Result<(), KvError> {
    let s = ThreadServer::start()?;
    stores_exactly(s.addr());
    refuses_bad_requests(s.addr());
    Ok(())
}

#[test]
fn issue_11_kv_tokio_stores_exactly_and_refuses_bad_requests() -> Result<(), KvError> {
    let s = TokioServer::start(2)?;
    stores_exactly(s.addr());
    refuses_bad_requests(s.addr());
    std::thread::scope(|sc| {
        let a = sc.spawn(|| stores_exactly(s.addr()));
        refuses_bad_requests(s.addr());
        a.join().expect("second connection");
    });
    Ok(())
}

#[test]
fn issue_11_kv_machines_store_exactly_and_refuse_bad_requests() -> Result<(), KvError> {
    let s = MachineServer::start(2, Duration::from_micros(20))?;
    stores_exactly(s.addr());
    refuses_bad_requests(s.addr());
    // Two connections at once.
    std::thread::scope(|sc| {
        let a = sc.spawn(|| stores_exactly(s.addr()));
        refuses_bad_requests(s.addr());
        a.join().expect("second connection");
    });
    Ok(())
}

#[test]
fn issue_11_kv_load_generator_keeps_its_bounds() -> Result<(), KvError> {
    let s = MachineServer::start(3, Duration::from_micros(20))?;
    let count = LoadConfig {
        requests: 301,
        connections: 3,
        duration: Duration::from_secs(600),
        value_bytes: 100,
        keys: 5,
        mix: Mix::Uniform,
    };
    let r = loadgen::run("machines", s.addr(), &count)?;
    assert_eq!((r.requests, r.errors, r.mismatches), (301, 0, 0));
    assert!(r.p50_us <= r.p99_us && r.p99_us <= r.p999_us);
    drop(s);

    // A time bound far below what the count would take: the run ends with fewer requests.
    let t = ThreadServer::start()?;
    let timed = LoadConfig {
        requests: usize::MAX,
        duration: Duration::from_millis(200),
        ..count
    };
    let r = loadgen::run("threads", t.addr(), &timed)?;
    assert!(r.requests > 0 && r.requests < usize::MAX);
    assert_eq!((r.errors, r.mismatches), (0, 0));

    let far: SocketAddr = "192.0.2.1:9".parse().expect("a documentation address");
    assert!(matches!(
        loadgen::run("x", far, &count),
        Err(KvError::NotLoopback(_))
    ));
    Ok(())
}

fn managed(layout: Layout, trace: usize) -> Result<MachineServer, KvError> {
    MachineServer::start_with(&MachineSetup {
        connections: 2,
        idle_spin: Duration::from_micros(20),
        layout,
        trace,
    })
}

/// The layouts where a Machine Manager moves the CPUs between the network, storage and
/// compression machines (and the static spread one) store exactly what the others do; the
/// compression machine starts without a core, so the first PUT needs the manager to activate it.
#[test]
fn issue_11_kv_managed_machines_store_exactly() -> Result<(), KvError> {
    for layout in [
        Layout::Spread,
        Layout::Managed(Policy::Utilization),
        Layout::Managed(Policy::Proportional),
    ] {
        let s = managed(layout, 0)?;
        stores_exactly(s.addr());
        refuses_bad_requests(s.addr());
        std::thread::scope(|sc| {
            let a = sc.spawn(|| stores_exactly(s.addr()));
            refuses_bad_requests(s.addr());
            a.join().expect("second connection");
        });
        let st = s.run_stats();
        assert_eq!(st.layout, layout);
        if let Layout::Managed(_) = layout {
            assert!(st.moves.total() >= 1, "{layout:?}: {st:?}");
            let compression = st.machines.iter().find(|(n, _)| n == "kv-compression");
            assert!(
                compression.is_some_and(|(_, m)| m.cores_gained >= 1 && m.ims_without_core >= 1),
                "{st:?}"
            );
        } else {
            assert_eq!(st.moves.total(), 0);
        }
    }
    assert!(matches!(
        managed(Layout::Managed(Policy::Static), 0),
        Err(KvError::BadConfig(_))
    ));
    Ok(())
}

/// The phased mix (small values, then 16 KiB hardly compressible ones) through the managed
/// server: every reply is right, and the moves are in the machines' timelines.
#[test]
fn issue_11_kv_managed_phased_load_is_served_exactly() -> Result<(), KvError> {
    let s = managed(Layout::Managed(Policy::Utilization), 50_000)?;
    let load = LoadConfig {
        requests: 400,
        connections: 2,
        duration: Duration::from_secs(600),
        value_bytes: 64,
        keys: 8,
        mix: Mix::Phased {
            large_bytes: 16 * 1024,
            phase: 50,
        },
    };
    let r = loadgen::run("managed", s.addr(), &load)?;
    assert_eq!((r.requests, r.errors, r.mismatches), (400, 0, 0));
    let moved: usize = s
        .machines()
        .iter()
        .flat_map(|m| m.trace_events())
        .flat_map(|(_, e)| e)
        .filter(|e| e.name == "core gained")
        .count();
    assert!(moved >= 1);
    Ok(())
}
