//! `multios bench noise` (issue #6). Not built yet.

use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _out: &Out) -> crate::cmd::Exit {
    anyhow::bail!("'multios bench noise' is not implemented in this build yet (issue #6)")
}
