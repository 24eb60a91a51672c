//! The multios profile: the contract between the profiler, the models, the emulator and the LWK.
//!
//! A profile is one JSON document (see `docs/PROFILE-FORMAT.md`). It is versioned by
//! `schema_version`; readers refuse newer versions instead of misreading them.

mod anon;
mod error;
mod format;
mod hist;
mod image;
pub mod import;
mod load;
mod machine;
mod merge;

pub use anon::{anon_bucket, AnonMaps, ANON_BUCKETS};
pub use error::ProfileError;
pub use format::{
    Collection, Coverage, Exit, Machine, MemoryBytes, Placement, ProcessCall, ProcessStats, Profile,
    RankSummary, SyscallStats, ThreadStats, SCHEMA_VERSION, SCHEMA_VERSION_NO_ANON_MAPS,
    SCHEMA_VERSION_NO_GAPS, SCHEMA_VERSION_NO_IMAGES, SCHEMA_VERSION_NO_MEMORY_BYTES,
    SCHEMA_VERSION_NO_PROCESSES,
};
pub use hist::Log2Histogram;
pub use image::{CodeMappings, ExecImage, ImageFile, ImageSizes};
pub use load::{check_writable, from_json_str, load, read_bounded, save, MAX_PROFILE_BYTES};
pub use merge::merge;
