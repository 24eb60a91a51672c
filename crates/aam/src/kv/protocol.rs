//! The key-value service's line protocol, shared by both servers and the load generator.
//!
//! Requests, one per line: `PUT <key> <value>` and `GET <key>`; the key is 1–250 bytes without
//! spaces, the value is the rest of the line (any bytes but `\n`). Replies, one per line: `OK`,
//! `VALUE <value>`, `NOTFOUND`, or `ERR <reason>` for a request that does not parse.

/// The longest request line a server accepts (longer ones get `ERR` and the connection closes).
pub const MAX_LINE: usize = 64 * 1024;
/// The longest key.
pub const MAX_KEY: usize = 250;

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Put { key: Vec<u8>, value: Vec<u8> },
    Get { key: Vec<u8> },
}

/// Why a request line was refused (sent back as `ERR <message>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("unknown command '{0}': send 'PUT <key> <value>' or 'GET <key>'")]
    UnknownCommand(String),
    #[error("'{0}' needs a key: send '{0} <key>{1}'")]
    MissingKey(&'static str, &'static str),
    #[error("PUT needs a value after the key: send 'PUT <key> <value>'")]
    MissingValue,
    #[error("GET takes only a key (no spaces in keys)")]
    ExtraAfterKey,
    #[error("key of {0} bytes: keys are 1 to 250 bytes")]
    KeyTooLong(usize),
    #[error("request line longer than {MAX_LINE} bytes")]
    LineTooLong,
}

fn split_word(s: &[u8]) -> (&[u8], Option<&[u8]>) {
    match s.iter().position(|&b| b == b' ') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

fn key_of<'a>(
    rest: &'a [u8],
    cmd: &'static str,
    hint: &'static str,
) -> Result<(Vec<u8>, Option<&'a [u8]>), ProtocolError> {
    let (key, tail) = split_word(rest);
    if key.is_empty() {
        return Err(ProtocolError::MissingKey(cmd, hint));
    }
    if key.len() > MAX_KEY {
        return Err(ProtocolError::KeyTooLong(key.len()));
    }
    Ok((key.to_vec(), tail))
}

/// Parses one request line (without its `\n`; a trailing `\r` is ignored).
pub fn parse(line: &[u8]) -> Result<Request, ProtocolError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_LINE {
        return Err(ProtocolError::LineTooLong);
    }
    let (cmd, rest) = split_word(line);
    match cmd {
        b"PUT" => {
            let (key, value) = key_of(rest.unwrap_or_default(), "PUT", " <value>")?;
            let value = value.ok_or(ProtocolError::MissingValue)?;
            Ok(Request::Put {
                key,
                value: value.to_vec(),
            })
        }
        b"GET" => {
            let (key, tail) = key_of(rest.unwrap_or_default(), "GET", "")?;
            if tail.is_some() {
                return Err(ProtocolError::ExtraAfterKey);
            }
            Ok(Request::Get { key })
        }
        other => Err(ProtocolError::UnknownCommand(
            String::from_utf8_lossy(&other[..other.len().min(32)]).into_owned(),
        )),
    }
}

/// A reply line, `\n` included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Ok,
    Value(Vec<u8>),
    NotFound,
    Err(String),
}

impl Reply {
    pub fn append_to(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Ok => out.extend_from_slice(b"OK\n"),
            Reply::NotFound => out.extend_from_slice(b"NOTFOUND\n"),
            Reply::Value(v) => {
                out.extend_from_slice(b"VALUE ");
                out.extend_from_slice(v);
                out.push(b'\n');
            }
            Reply::Err(e) => {
                out.extend_from_slice(b"ERR ");
                out.extend(e.bytes().map(|b| if b == b'\n' { b' ' } else { b }));
                out.push(b'\n');
            }
        }
    }

    /// Parses a reply line (without its `\n`); `None` if it is none of the four.
    pub fn parse(line: &[u8]) -> Option<Reply> {
        match line {
            b"OK" => Some(Reply::Ok),
            b"NOTFOUND" => Some(Reply::NotFound),
            _ => {
                if let Some(v) = line.strip_prefix(b"VALUE ") {
                    Some(Reply::Value(v.to_vec()))
                } else {
                    line.strip_prefix(b"ERR ")
                        .map(|e| Reply::Err(String::from_utf8_lossy(e).into_owned()))
                }
            }
        }
    }
}

/// Splits complete lines off the front of `buf` (a connection's receive buffer); the partial
/// last line stays. A partial line longer than [`MAX_LINE`] is an error.
pub fn take_lines(buf: &mut Vec<u8>) -> Result<Vec<Vec<u8>>, ProtocolError> {
    let mut lines = Vec::new();
    let mut start = 0;
    while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
        lines.push(buf[start..start + i].to_vec());
        start += i + 1;
    }
    buf.drain(..start);
    if buf.len() > MAX_LINE {
        return Err(ProtocolError::LineTooLong);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_bad_ones_are_named() {
        assert_eq!(
            parse(b"PUT k a b c"),
            Ok(Request::Put {
                key: b"k".to_vec(),
                value: b"a b c".to_vec()
            })
        );
        assert_eq!(
            parse(b"PUT k "),
            Ok(Request::Put {
                key: b"k".to_vec(),
                value: vec![]
            })
        );
        assert_eq!(parse(b"GET k\r"), Ok(Request::Get { key: b"k".to_vec() }));
        assert_eq!(parse(b"PUT k"), Err(ProtocolError::MissingValue));
        assert_eq!(parse(b"GET"), Err(ProtocolError::MissingKey("GET", "")));
        assert_eq!(parse(b"GET a b"), Err(ProtocolError::ExtraAfterKey));
        assert!(matches!(parse(b"DEL k"), Err(ProtocolError::UnknownCommand(c)) if c == "DEL"));
        assert_eq!(
            parse(&[b"GET ".as_slice(), &[b'x'; 251]].concat()),
            Err(ProtocolError::KeyTooLong(251))
        );
    }

    #[test]
    fn lines_are_split_and_replies_round_trip() {
        let mut buf = b"GET a\nPUT b c\nGE".to_vec();
        let lines = take_lines(&mut buf).unwrap_or_default();
        assert_eq!(lines, vec![b"GET a".to_vec(), b"PUT b c".to_vec()]);
        assert_eq!(buf, b"GE");
        for r in [
            Reply::Ok,
            Reply::NotFound,
            Reply::Value(b"x y".to_vec()),
            Reply::Err("bad".into()),
        ] {
            let mut out = Vec::new();
            r.append_to(&mut out);
            assert_eq!(out.last(), Some(&b'\n'));
            assert_eq!(Reply::parse(&out[..out.len() - 1]), Some(r));
        }
    }
}
