use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _out: &Out) -> super::Exit {
    anyhow::bail!("not yet")
}
