//! The storage and compression work every server shares: a SQLite table of compressed values
//! (bundled SQLite via `rusqlite`) in a database file on disk, and zlib (`flate2`).
//!
//! The database is a file `kv.sqlite3` in a fresh directory under the system's temp dir (removed
//! when the store is dropped), in WAL mode with `synchronous = NORMAL`: a commit appends to the
//! write-ahead log with `write` (no `fsync` per commit); the log is synced at checkpoints. That
//! is SQLite's recommended setting for WAL; a power loss can lose the last commits but not
//! corrupt the file.

use super::KvError;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use rusqlite::{params, Connection, OptionalExtension};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One SQLite database file holding `key → compressed value`.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    _dir: TempDir,
}

/// A directory removed (with its files) when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sql(what: &'static str) -> impl Fn(rusqlite::Error) -> KvError {
    move |e| KvError::Sqlite {
        what,
        why: e.to_string(),
    }
}

impl Store {
    /// A new, empty database file in a fresh temp directory (WAL, `synchronous = NORMAL`).
    pub fn open() -> Result<Store, KvError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "multios-kv-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| KvError::Io("create the database directory", format!("{}: {e}", dir.display())))?;
        let dir = TempDir(dir);
        let path = dir.0.join("kv.sqlite3");
        let conn = Connection::open(&path).map_err(sql("open the database file"))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql("PRAGMA journal_mode = WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(KvError::Sqlite {
                what: "PRAGMA journal_mode = WAL",
                why: format!("SQLite kept journal mode '{mode}' for {}", path.display()),
            });
        }
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL;
             CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL);",
        )
        .map_err(sql("create table kv"))?;
        Ok(Store {
            conn: Mutex::new(conn),
            path,
            _dir: dir,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SQLite's journal mode of the open database (`wal`).
    pub fn journal_mode(&self) -> Result<String, KvError> {
        self.conn()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(sql("PRAGMA journal_mode"))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn put(&self, key: &[u8], compressed: &[u8]) -> Result<(), KvError> {
        self.conn()
            .prepare_cached("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![key, compressed]))
            .map(drop)
            .map_err(sql("insert into kv"))
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.conn()
            .prepare_cached("SELECT value FROM kv WHERE key = ?1")
            .and_then(|mut s| s.query_row(params![key], |r| r.get::<_, Vec<u8>>(0)).optional())
            .map_err(sql("select from kv"))
    }
}

/// zlib at the default level.
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut e = ZlibEncoder::new(Vec::with_capacity(data.len() / 2 + 16), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

pub fn decompress(data: &[u8]) -> Result<Vec<u8>, KvError> {
    let mut out = Vec::new();
    ZlibDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|e| KvError::Corrupt(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_through_compression_and_sqlite() -> Result<(), KvError> {
        let s = Store::open()?;
        let v = b"abcabcabcabcabcabc".repeat(20);
        s.put(b"k", &compress(&v))?;
        let got = s.get(b"k")?.map(|c| decompress(&c)).transpose()?;
        assert_eq!(got, Some(v));
        assert_eq!(s.get(b"missing")?, None);
        assert_eq!(s.journal_mode()?, "wal");
        let (path, dir) = (s.path().to_path_buf(), s.path().parent().map(Path::to_path_buf));
        assert!(path.is_file(), "{}", path.display());
        drop(s);
        assert!(dir.is_some_and(|d| !d.exists()), "the temp dir is removed");
        Ok(())
    }
}
