//! The unit of work of FWQ and FTQ: a dependent integer chain the compiler cannot shorten.

use crate::sys;
use std::hint::black_box;

/// Runs `iters` steps of a dependent multiply-add chain and returns its result.
#[inline(never)]
pub fn spin(iters: u64) -> u64 {
    let mut x = black_box(0x2545_F491_4F6C_DD1Du64);
    for _ in 0..black_box(iters) {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    black_box(x)
}

/// Iterations of [`spin`] per tick, from the fastest of several timed runs (the least disturbed).
pub fn iters_per_tick() -> f64 {
    let n = 200_000u64;
    let mut best = u64::MAX;
    for _ in 0..15 {
        let t0 = sys::ticks();
        spin(n);
        let dt = sys::ticks().wrapping_sub(t0);
        best = best.min(dt.max(1));
    }
    n as f64 / best as f64
}
