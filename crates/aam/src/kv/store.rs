//! The storage and compression work both servers share: a SQLite table of compressed values
//! (bundled SQLite via `rusqlite`, an in-memory database) and zlib (`flate2`).

use super::KvError;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use rusqlite::{params, Connection, OptionalExtension};
use std::io::{Read, Write};
use std::sync::Mutex;

/// One SQLite database (in memory) holding `key → compressed value`.
pub struct Store {
    conn: Mutex<Connection>,
}

fn sql(what: &'static str) -> impl Fn(rusqlite::Error) -> KvError {
    move |e| KvError::Sqlite {
        what,
        why: e.to_string(),
    }
}

impl Store {
    pub fn open() -> Result<Store, KvError> {
        let conn = Connection::open_in_memory().map_err(sql("open an in-memory database"))?;
        conn.execute_batch("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL);")
            .map_err(sql("create table kv"))?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
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
        Ok(())
    }
}
