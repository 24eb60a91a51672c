//! `multios bench` (issue #3). Not built yet: the subcommand reports that instead of pretending.

use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

pub fn run(_args: Args, _out: &Out) -> super::Exit {
    anyhow::bail!("'multios bench' is not implemented in this build yet (issue #3)")
}
