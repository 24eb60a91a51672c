//! `-o prof.%r.json`: one profile per MPI rank.

/// The rank from the launcher's environment: Open MPI, PMI (MPICH/Hydra), PMIx, Intel MPI.
pub fn rank_from_env() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Replaces `%r` by the rank (0 outside a launcher), `%p` by `pid` and `%%` by `%`.
pub fn expand_output(pattern: &str, rank: Option<u32>, pid: u32) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push_str(&rank.unwrap_or(0).to_string()),
            Some('p') => out.push_str(&pid.to_string()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_rank_and_pid() {
        assert_eq!(expand_output("prof.%r.json", Some(3), 7), "prof.3.json");
        assert_eq!(expand_output("p%p-%r-%%-%x", None, 42), "p42-0-%-%x");
        assert_eq!(expand_output("plain.json", Some(1), 1), "plain.json");
    }
}
