//! The calibrated time-stamp counter and its busy-waits, which deliver a forwarding cost. The
//! clock belongs to `multios-host` (one calibration for every part of multios).

pub use multios_host::tsc::{calibrate, calibration, now, spin, spin_until, Calibration};
