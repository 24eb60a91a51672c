use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _out: &Out) -> super::Exit {
    anyhow::bail!("not yet")
}
pub fn print_profile_summary(_p: &multios_profile::Profile, _o: &Out) -> anyhow::Result<()> { Ok(()) }
