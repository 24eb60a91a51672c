//! `multios profile import`: strace/perf summaries → profile.

use crate::output::Out;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The summary file (`strace -c -o FILE …` or `perf trace -s -o FILE …`)
    input: PathBuf,
    /// Wall time of the traced run (the summaries do not record it), e.g. 12.3s
    #[arg(long)]
    wall: multios_units::Duration,
    /// The traced command, for the record, as one string (e.g. --command "bzip2 -9 input.txt")
    #[arg(long, allow_hyphen_values = true)]
    command: Option<String>,
    /// strace ran with -w: per-call times are wall-clock, not kernel CPU time
    #[arg(long)]
    strace_wall_clock: bool,
    /// Where to write the profile
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(args: ImportArgs, out: &Out) -> crate::cmd::Exit {
    let text = multios_profile::read_bounded(&args.input)?;
    let opts = multios_profile::import::ImportOptions {
        command: args
            .command
            .map(|c| c.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
        wall_time_s: Some(args.wall.secs()),
        strace_wall_clock: Some(args.strace_wall_clock),
    };
    let p = multios_profile::import::import(&args.input.display().to_string(), &text, &opts)?;
    multios_profile::save(&p, &args.output)?;
    super::print_profile(&p, out, None)?;
    Ok(std::process::ExitCode::SUCCESS)
}
