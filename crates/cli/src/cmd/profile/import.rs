//! `multios profile import`: strace/perf summaries, or `perf trace` records → profile (and, for
//! records, `--trace FILE`: the calls as Chrome trace JSON, CSV or Parquet).

use crate::output::Out;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The summary file (`strace -c -o FILE …` or `perf trace -s -o FILE …`), or `perf trace -o FILE …`
    /// records (one line per call)
    input: PathBuf,
    /// Wall time of the traced run (summaries do not record it; records do), e.g. 12.3s
    #[arg(long)]
    wall: Option<multios_units::Duration>,
    /// With `perf trace` records: also write the calls as Chrome trace JSON (Perfetto, chrome://tracing),
    /// or one row per call as CSV (FILE ending in .csv) or Parquet (.parquet); repeat for several
    #[arg(long, value_name = "FILE")]
    trace: Vec<PathBuf>,
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
        wall_time_s: args.wall.map(multios_units::Duration::secs),
        strace_wall_clock: Some(args.strace_wall_clock),
    };
    let origin = args.input.display().to_string();
    let p = multios_profile::import::import(&origin, &text, &opts)?;
    if !args.trace.is_empty() {
        let Some(records) = multios_profile::import::perf_trace_records(&origin, &text) else {
            anyhow::bail!("--trace: {origin} has no per-call records (a summary has only totals): record with `perf trace -o FILE -- CMD`");
        };
        let records = records?;
        for path in &args.trace {
            multios_report::write_trace(path, &records).map_err(|e| anyhow::anyhow!("--trace: {e}"))?;
        }
    }
    multios_profile::save(&p, &args.output)?;
    super::print_profile(&p, out, None)?;
    Ok(std::process::ExitCode::SUCCESS)
}
