//! `multios`: a thin command-line front end over the multios library crates.
//!
//! Every subcommand lives in `cmd/<name>.rs`; this file only parses and dispatches.

mod cmd;
mod output;

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
}

/// Help and version go to stdout as usual; a usage error is printed as its one-line message (which names
/// the argument and, for values, what is wrong with them), followed by a pointer to `--help`.
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
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("error: invalid arguments");
    eprintln!("{first} (see --help)");
    std::process::ExitCode::from(2)
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(e),
    };
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
        Command::Noise(a) => cmd::noise::run(a, &out),
        Command::Bench(a) => cmd::bench::run(a, &out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {e:#}", out.paint_error("error"));
            std::process::ExitCode::from(2)
        }
    }
}
