//! Reading input files with a size cap: a mistaken `/dev/zero`, an endless pipe or a huge file
//! stops at the cap with an error instead of filling the memory.

use std::io::Read;
use std::path::Path;

/// Reads the text file at `path`, at most `max` bytes. A regular file larger than `max` is refused
/// before it is read; a device or pipe is read up to `max` bytes and refused if it gives more.
/// The error says the cap; the caller names the file (as it does for the other read errors).
pub fn read_to_string_capped(path: &Path, max: u64) -> std::io::Result<String> {
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {}, the most read from such a file", size(max)),
        )
    };
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    if meta.is_file() && meta.len() > max {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            not_utf8(e.as_bytes(), e.utf8_error().valid_up_to()),
        )
    })
}

/// "not UTF-8 text at line L, column C (byte B)": where the first bad byte `at` of `bytes` is, the
/// line and column (in characters, from 1) an editor shows, and the byte offset (from 0).
pub fn not_utf8(bytes: &[u8], at: usize) -> String {
    // The bytes before `at` are valid UTF-8 (that is what `at` says).
    let before = std::str::from_utf8(&bytes[..at.min(bytes.len())]).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("not UTF-8 text at line {line}, column {column} (byte {at})")
}

/// `max` bytes for a person: whole MiB or KiB when it is one, bytes otherwise.
fn size(max: u64) -> String {
    if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
        format!("{} MiB", max >> 20)
    } else if max >= 1 << 10 && max.is_multiple_of(1 << 10) {
        format!("{} KiB", max >> 10)
    } else {
        format!("{max} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_a_bad_byte_is_placed_by_line_and_column() {
        assert_eq!(
            not_utf8(b"ab\nc\xc3\xa9d\xff", 7),
            "not UTF-8 text at line 2, column 4 (byte 7)"
        );
        assert_eq!(
            not_utf8(b"\xff", 0),
            "not UTF-8 text at line 1, column 1 (byte 0)"
        );
    }

    #[test]
    fn issue_16_an_endless_device_stops_at_the_cap() {
        let e = read_to_string_capped(Path::new("/dev/zero"), 4 << 10).expect_err("refused");
        assert!(e.to_string().contains("larger than 4 KiB"), "{e}");
    }

    #[test]
    fn issue_16_a_file_within_the_cap_is_read_and_a_larger_one_refused() {
        let dir = std::env::temp_dir().join(format!("multios-capped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let f = dir.join("t.txt");
        std::fs::write(&f, "0123456789").expect("write");
        assert_eq!(read_to_string_capped(&f, 10).expect("read"), "0123456789");
        let e = read_to_string_capped(&f, 9).expect_err("refused");
        assert!(e.to_string().contains("larger than 9 bytes"), "{e}");
        let e = read_to_string_capped(&dir, 9).expect_err("refused");
        assert!(e.to_string().contains("directory"), "{e}");
        std::fs::remove_dir_all(&dir).expect("rm");
    }
}
