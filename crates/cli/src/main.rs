//! `multios`: a thin command-line front end over the multios library crates.
//!
//! Every subcommand lives in `cmd/<name>.rs`; this file only parses and dispatches.

#[macro_use]
mod stdout;
mod cmd;
mod output;
mod progress;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "multios",
    version,
    about = "Profile, project, emulate and run programs in multi-OS environments on stock Linux"
)]
struct Cli {
    #[command(flatten)]
    out: output::OutputArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Profile a program's system calls, or import/merge profiles
    Profile(cmd::profile::Args),
    /// Speedup models: naive, refined, queue, sweep, fit, advise
    Model(cmd::model::Args),
    /// Write the paper's figures (PNG + SVG + CSV) from a profile
    Plot(cmd::plot::Args),
    /// The bundled default job: profile → project → emulate, with a table and plots
    Demo(cmd::demo::Args),
    /// Emulate delegation of chosen system calls to another core, with a tunable cost
    Emulate(cmd::emulate::Args),
    /// Forwarding-cost microbenchmarks (paper Table 3) for each mechanism
    Fc(cmd::fc::Args),
    /// Validate the models on the synthetic benchmark under emulation
    Validate(cmd::validate::Args),
    /// Run a program in an LWK partition built on KVM
    Lwk(cmd::lwk::Args),
    /// OS noise: FWQ/FTQ/selfish measurements and scale projection
    Noise(cmd::noise::Args),
    /// Benchmarks that print ratios measured side by side in one run
    Bench(cmd::bench::Args),
    /// Asynchronous Abstract Machines: benchmarks, the key-value service, the timeline
    Aam(cmd::aam::Args),
    /// One self-contained HTML report: profile, syscall CDF, projections, measured vs projected
    Report(cmd::report::Args),
    /// NetworkedOS: a program's interaction graph, overlapping partitioning, affinity-aware placement
    Map(cmd::map::Args),
}

/// Help and version go to stdout as usual; a usage error is printed on one line: clap's message with what
/// it lists on the following lines (the missing arguments' names, "a similar subcommand exists: …"), without
/// the usage block, followed by a pointer to `--help`.
fn parse_error(e: clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return std::process::ExitCode::SUCCESS;
    }
    eprintln!("{} (see --help)", one_line(&e.render().to_string()));
    std::process::ExitCode::from(2)
}

/// clap's rendered error folded into one line: the lines before `Usage:` and `For more information`; a line
/// that ends in ':' is followed by its list (the missing arguments) separated by ", ", other paragraphs by "; ".
fn one_line(text: &str) -> String {
    let mut line = String::new();
    let (mut list, mut blank) = (false, false);
    for l in text.lines().map(str::trim) {
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        if l.is_empty() {
            (list, blank) = (false, true);
            continue;
        }
        if line.ends_with(':') {
            line.push(' ');
            list = true;
        } else if list && !blank {
            line.push_str(", ");
        } else if !line.is_empty() {
            line.push_str("; ");
        }
        blank = false;
        line.push_str(l);
    }
    if line.is_empty() {
        line.push_str("error: invalid arguments");
    }
    line
}

/// An error and its causes on one line, "outer: cause: …", leaving out a cause whose text the line already
/// holds (an error whose message includes its `source`, as ours do, would otherwise print it twice).
pub(crate) fn error_chain(e: &anyhow::Error) -> String {
    multios_experiment::error_chain(e.as_ref())
}

fn main() -> std::process::ExitCode {
    // A standard stream closed when multios started stays closed for the programs it runs.
    multios_host::stdio::hide_placeholders();
    // A packed executable (`multios lwk pack`) is multios with a program at its end: it runs that
    // program in the LWK with the options it was packed with.
    let parsed = match cmd::lwk_pack::packed_argv() {
        Ok(Some(argv)) => Cli::try_parse_from(argv),
        Ok(None) => Cli::try_parse(),
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            return std::process::ExitCode::from(2);
        }
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
    if let Some(path) = &cli.out.results_file {
        if let Err(e) = stdout::results_to(path) {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    }
    let out = cli.out.resolve();
    let result = match cli.command {
        Command::Profile(a) => cmd::profile::run(a, &out),
        Command::Model(a) => cmd::model::run(a, &out),
        Command::Plot(a) => cmd::plot::run(a, &out),
        Command::Demo(a) => cmd::demo::run(a, &out),
        Command::Emulate(a) => cmd::emulate::run(a, &out),
        Command::Fc(a) => cmd::fc::run(a, &out),
        Command::Validate(a) => cmd::validate::run(a, &out),
        Command::Lwk(a) => cmd::lwk::run(a, &out),
        Command::Map(a) => cmd::map::run(a, &out),
        Command::Noise(a) => cmd::noise::run(a, &out),
        Command::Bench(a) => cmd::bench::run(a, &out),
        Command::Aam(a) => cmd::aam::run(a, &out),
        Command::Report(a) => cmd::report::run(a, &out),
    };
    // The `--results` file replaces FILE only now (it may have been one of the inputs), and only
    // after a run that did not fail.
    let result = match stdout::finish(result.is_ok()) {
        Ok(()) => result,
        Err(e) => result.and(Err(anyhow::anyhow!(e))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {}", out.paint_error("error"), error_chain(&e));
            std::process::ExitCode::from(2)
        }
    }
}
