//! The load generator: `connections` threads on loopback, each with one connection, issuing
//! `PUT k v` then `GET k` (checking the value) in turn, until `requests` requests were issued in
//! all or `duration` passed, whichever comes first.
//!
//! The request mix ([`Mix`]) is uniform (every value `value_bytes` of compressible text) or
//! phased: each connection alternates `phase` requests with such small values and `phase`
//! requests with large, hardly compressible values (`large_bytes`), so the work moves between the
//! storage side (small values: the SQLite commit dominates) and compression (large values: zlib
//! dominates) while the run goes on.

use super::protocol::Reply;
use super::KvError;
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The generator's bounds and request shape.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LoadConfig {
    /// At most this many requests in all.
    pub requests: usize,
    pub connections: usize,
    /// Stop issuing after this long (requests in flight complete).
    #[serde(serialize_with = "secs")]
    pub duration: Duration,
    pub value_bytes: usize,
    /// Distinct keys per connection.
    pub keys: usize,
    pub mix: Mix,
}

/// The request mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mix {
    /// Every value is `value_bytes` of compressible text.
    Uniform,
    /// Phases of `phase` requests per connection: small values (`value_bytes`), then large ones
    /// (`large_bytes` of printable pseudo-random bytes), and so on.
    Phased { large_bytes: usize, phase: usize },
}

impl Mix {
    /// The phased mix `multios aam kv` and `aam bench` use: 16 KiB values every other 100 requests.
    pub const PHASED: Mix = Mix::Phased {
        large_bytes: 16 * 1024,
        phase: 100,
    };
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            requests: 20_000,
            connections: 4,
            duration: Duration::from_secs(10),
            value_bytes: 256,
            keys: 64,
            mix: Mix::Uniform,
        }
    }
}

/// What one run of the generator measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub server: String,
    pub requests: usize,
    /// `ERR` replies, unparsable replies, or I/O errors.
    pub errors: usize,
    /// `GET` replies that differ from the value just stored.
    pub mismatches: usize,
    pub elapsed_s: f64,
    pub throughput_rps: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

/// The value stored under key `k` in round `r`: compressible text of `n` bytes.
pub fn value_for(k: usize, r: usize, n: usize) -> Vec<u8> {
    let word = format!("v{k}.{r}-lorem-ipsum-");
    word.bytes().cycle().take(n).collect()
}

/// A large value for key `k` in round `r`: `n` printable pseudo-random bytes (no newline), which
/// zlib compresses only a little and slowly.
pub fn noisy_value_for(k: usize, r: usize, n: usize) -> Vec<u8> {
    let mut x = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (r as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'!' + (x % 94) as u8
        })
        .collect()
}

/// The value of request `i` of a connection under `cfg`'s mix (a `GET` is in its `PUT`'s phase).
fn value_of(cfg: &LoadConfig, i: usize, k: usize, round: usize) -> Vec<u8> {
    let put_index = i - i % 2;
    match cfg.mix {
        Mix::Phased { large_bytes, phase } if (put_index / phase.max(1)) % 2 == 1 => {
            noisy_value_for(k, round, large_bytes)
        }
        _ => value_for(k, round, cfg.value_bytes),
    }
}

#[derive(Default)]
struct Tally {
    lat_ns: Vec<f64>,
    errors: usize,
    mismatches: usize,
}

fn client(addr: SocketAddr, id: usize, cfg: &LoadConfig, issued: &AtomicUsize, deadline: Instant) -> Tally {
    let mut t = Tally::default();
    let Ok(stream) = TcpStream::connect(addr) else {
        t.errors += 1;
        return t;
    };
    let _ = stream.set_nodelay(true);
    let (Ok(mut w), mut r) = (stream.try_clone(), BufReader::new(stream)) else {
        t.errors += 1;
        return t;
    };
    let mut line = Vec::new();
    let mut i = 0usize;
    while Instant::now() < deadline && issued.fetch_add(1, Ordering::Relaxed) < cfg.requests {
        let (k, round) = ((i / 2) % cfg.keys.max(1), i / 2);
        let key = format!("c{id}-k{k}");
        let value = value_of(cfg, i, k, round);
        let mut req = Vec::with_capacity(value.len() + 32);
        let put = i.is_multiple_of(2);
        if put {
            req.extend_from_slice(format!("PUT {key} ").as_bytes());
            req.extend_from_slice(&value);
        } else {
            req.extend_from_slice(format!("GET {key}").as_bytes());
        }
        req.push(b'\n');
        let t0 = Instant::now();
        line.clear();
        if w.write_all(&req).is_err() || r.read_until(b'\n', &mut line).map_or(true, |n| n == 0) {
            t.errors += 1;
            break;
        }
        t.lat_ns.push(t0.elapsed().as_nanos() as f64);
        match Reply::parse(line.strip_suffix(b"\n").unwrap_or(&line)) {
            Some(Reply::Ok) if put => {}
            Some(Reply::Value(v)) if !put => t.mismatches += usize::from(v != value),
            Some(Reply::NotFound) if !put => t.mismatches += 1,
            _ => t.errors += 1,
        }
        i += 1;
    }
    t
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// Runs the generator against `addr` (which must be a loopback address).
pub fn run(server: &str, addr: SocketAddr, cfg: &LoadConfig) -> Result<LoadReport, KvError> {
    if !addr.ip().is_loopback() {
        return Err(KvError::NotLoopback(addr));
    }
    if cfg.connections == 0 {
        return Err(KvError::BadConfig("connections must be at least 1"));
    }
    let issued = AtomicUsize::new(0);
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..cfg.connections)
            .map(|id| {
                let issued = &issued;
                s.spawn(move || client(addr, id, cfg, issued, deadline))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Tally {
                    errors: 1,
                    ..Tally::default()
                })
            })
            .collect()
    });
    let elapsed_s = start.elapsed().as_secs_f64();
    let mut lat: Vec<f64> = tallies.iter().flat_map(|t| t.lat_ns.iter().copied()).collect();
    lat.sort_by(f64::total_cmp);
    let n = lat.len();
    let us = |ns: f64| ns / 1e3;
    Ok(LoadReport {
        server: server.to_string(),
        requests: n,
        errors: tallies.iter().map(|t| t.errors).sum(),
        mismatches: tallies.iter().map(|t| t.mismatches).sum(),
        elapsed_s,
        throughput_rps: if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        },
        mean_us: if n > 0 {
            us(lat.iter().sum::<f64>() / n as f64)
        } else {
            0.0
        },
        p50_us: us(quantile(&lat, 0.5)),
        p99_us: us(quantile(&lat, 0.99)),
        p999_us: us(quantile(&lat, 0.999)),
    })
}
