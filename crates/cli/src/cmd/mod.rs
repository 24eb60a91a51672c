//! One module per subcommand.

pub mod aam;
pub mod bench;
pub mod demo;
pub mod emulate;
pub mod fc;
pub mod lwk;
pub mod lwk_conformance;
pub mod lwk_hotspots;
pub mod lwk_images;
pub mod lwk_pack;
pub mod lwk_validate;
pub mod map;
pub mod model;
pub mod model_aam;
pub mod noise;
pub mod plot;
pub mod profile;
pub mod report;
pub mod validate;

/// The exit status of a subcommand that ran to completion.
pub type Exit = anyhow::Result<std::process::ExitCode>;
