//! `multios profile merge`: combine per-rank profiles.

use crate::output::{Format, Out};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Per-rank profiles; the rank is taken from the file name (the number that `%r` became) or the order given
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where to write the merged profile
    #[arg(short, long)]
    output: PathBuf,
}

/// The rank number in a file name such as `prof.3.json` (the last run of digits), if any.
fn rank_of(path: &std::path::Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let digits: String = name
        .rsplit(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())?
        .to_string();
    digits.parse().ok()
}

pub fn run(args: MergeArgs, out: &Out) -> crate::cmd::Exit {
    let mut parts = Vec::new();
    for (i, path) in args.inputs.iter().enumerate() {
        let p = multios_profile::load(path)?;
        let rank = rank_of(path).unwrap_or(i as u32);
        parts.push((rank, path.display().to_string(), p));
    }
    let mut seen = std::collections::HashSet::new();
    if !parts.iter().all(|(r, _, _)| seen.insert(*r)) {
        // File names do not carry distinct ranks: fall back to the order given.
        for (i, part) in parts.iter_mut().enumerate() {
            part.0 = i as u32;
        }
    }
    let merged = multios_profile::merge(parts)?;
    multios_profile::save(&merged, &args.output)?;
    match out.format {
        Format::Json => out.json(&merged)?,
        _ => eprintln!(
            "merged {} ranks into {} ({} system calls, p = {:.4}%)",
            merged.ranks.len(),
            args.output.display(),
            merged.syscall_count(),
            merged.p() * 100.0
        ),
    }
    Ok(std::process::ExitCode::SUCCESS)
}
