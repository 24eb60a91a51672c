//! `multios profile`: trace a command (`profile [OPTIONS] -- CMD…`), or `import` / `merge` profiles.

mod import;
mod merge;
mod run;

use crate::output::Out;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    #[command(flatten)]
    trace: run::RunArgs,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Convert a `strace -c [-w] [-f]` or `perf trace -s` summary into a multios profile
    Import(import::ImportArgs),
    /// Merge per-rank profiles (e.g. prof.%r.json written under mpirun) into one, keeping per-rank detail
    Merge(merge::MergeArgs),
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.sub {
        Some(Sub::Import(a)) => import::run(a, out),
        Some(Sub::Merge(a)) => merge::run(a, out),
        None => run::run(args.trace, out),
    }
}
