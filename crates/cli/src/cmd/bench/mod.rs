//! `multios bench …`: benchmarks that measure the things compared side by side in one run and
//! print ratios (this machine is a noisy shared VM: medians and ratios, not single times).

mod emulate;
mod hpcc;
mod hrt;
mod lwk;
mod map;
mod map_levels;
mod multiverse;
mod noise;
mod profiler;
mod reserve;

use crate::output::Out;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand, Debug)]
enum Which {
    /// Tracing overhead of `multios profile` vs strace -c -f vs perf trace -s (issue #3)
    Profiler(profiler::Args),
    /// Emulator floor, delivered f_c accuracy, pass-through overhead (issue #4)
    Emulate(emulate::Args),
    /// LWK delegation round trip, start-up, γ on compute- and TLB-bound programs (issue #5)
    Lwk(lwk::Args),
    /// HPC Challenge natively and in the LWK: γ per kernel (HPL, DGEMM, STREAM, RandomAccess, FFT, PTRANS) (issue #5)
    Hpcc(hpcc::Args),
    /// Noise scale simulation throughput (issue #6)
    Noise(noise::Args),
    /// Multiverse's Fig. 9-12 on Racket: native vs LWK vs LWK with overrides, forwarded events, the model's projection (issue #13)
    Multiverse(multiverse::Args),
    /// NetworkedOS IPC microbenchmark: Linux vs round-robin vs `map run`, calibration, projection (issue #12)
    Map(map::Args),
    /// FWQ and compute-bound γ in the LWK without and with `lwk run --reserve` (issue #14)
    Reserve(reserve::Args),
    /// Split execution (Multiverse Fig. 2): synchronous and asynchronous calls, merger, next to the cache-line round trip (issue #13)
    Hrt(hrt::Args),
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.which {
        Which::Profiler(a) => profiler::run(a, out),
        Which::Emulate(a) => emulate::run(a, out),
        Which::Lwk(a) => lwk::run(a, out),
        Which::Hpcc(a) => hpcc::run(a, out),
        Which::Noise(a) => noise::run(a, out),
        Which::Multiverse(a) => multiverse::run(a, out),
        Which::Map(a) => map::run(a, out),
        Which::Reserve(a) => reserve::run(a, out),
        Which::Hrt(a) => hrt::run(a, out),
    }
}
