//! Number ↔ name lookup for x86_64 system calls, and "did you mean" suggestions.

use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../data/syscalls-x86_64.txt");

/// One past the largest system call number in the table.
pub const MAX_NR: usize = 512;

struct Table {
    by_nr: Vec<Option<&'static str>>,
    by_name: HashMap<&'static str, u32>,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut by_nr = vec![None; MAX_NR];
        let mut by_name = HashMap::new();
        for line in TABLE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut it = line.split_whitespace();
            if let (Some(nr), Some(name)) = (it.next(), it.next()) {
                if let Ok(nr) = nr.parse::<u32>() {
                    if let Some(slot) = by_nr.get_mut(nr as usize) {
                        *slot = Some(name);
                    }
                    by_name.insert(name, nr);
                }
            }
        }
        Table { by_nr, by_name }
    })
}

/// The name of system call `nr`, if it exists on x86_64.
pub fn by_number(nr: u32) -> Option<&'static str> {
    table().by_nr.get(nr as usize).copied().flatten()
}

/// The number of the system call `name`.
pub fn by_name(name: &str) -> Option<u32> {
    table().by_name.get(name).copied()
}

/// All system call names, in number order.
pub fn names() -> impl Iterator<Item = (u32, &'static str)> {
    table()
        .by_nr
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.map(|n| (i as u32, n)))
}

/// A system call name that is not in the x86_64 table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown system call '{name}'{}", suggestion.map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
pub struct UnknownSyscall {
    pub name: String,
    pub suggestion: Option<&'static str>,
}

impl UnknownSyscall {
    pub fn new(name: &str) -> Self {
        UnknownSyscall {
            name: name.to_string(),
            suggestion: closest(name),
        }
    }
}

/// The known name closest to `name` by edit distance, if any is reasonably close.
pub fn closest(name: &str) -> Option<&'static str> {
    let limit = (name.len() / 3).max(2);
    table()
        .by_name
        .keys()
        .map(|k| (levenshtein(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
        assert_eq!(by_name("read"), Some(0));
        assert_eq!(by_name("getppid"), Some(110));
        assert_eq!(by_name("exit_group"), Some(231));
        assert_eq!(by_number(39), Some("getpid"));
        assert_eq!(by_number(435), Some("clone3"));
        assert_eq!(by_number(462), Some("mseal"));
        assert!(names().count() > 360);
    }

    #[test]
    fn suggests_the_closest_name() {
        assert_eq!(closest("wirte"), Some("write"));
        assert_eq!(closest("getppid"), Some("getppid"));
        assert_eq!(closest("mmapp"), Some("mmap"));
        assert_eq!(closest("completely_unrelated_words"), None);
        let e = UnknownSyscall::new("opennat");
        assert!(e.to_string().contains("did you mean 'openat'"), "{e}");
    }
}
