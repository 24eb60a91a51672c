//! `multios bench lwk` (issue #5). Not built yet.

use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _out: &Out) -> crate::cmd::Exit {
    anyhow::bail!("'multios bench lwk' is not implemented in this build yet (issue #5)")
}
