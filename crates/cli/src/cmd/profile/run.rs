//! `multios profile -- CMD` (issue #3). Not built yet.

use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The command to profile, after `--`
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

pub fn run(_args: RunArgs, _out: &Out) -> crate::cmd::Exit {
    anyhow::bail!("'multios profile -- CMD' is not implemented in this build yet (issue #3); use 'multios profile import'")
}
