//! What the LWK can override: each function with its implementation (see `mod.rs`).

/// What can be overridden: (function, implementation, what the implementation does).
pub const CATALOGUE: &[(&str, &str, &str)] = &[
    (
        "clock_gettime",
        "tsc",
        "CLOCK_REALTIME/MONOTONIC (and _COARSE) read from the TSC in the guest, re-anchored on the real clock every 50 ms",
    ),
    ("gettimeofday", "tsc", "the realtime clock from the TSC"),
    ("time", "tsc", "the realtime clock from the TSC"),
];

/// The implementation of `function` in the catalogue, if any.
pub fn implementation_of(function: &str) -> Option<&'static str> {
    CATALOGUE.iter().find(|c| c.0 == function).map(|c| c.1)
}
