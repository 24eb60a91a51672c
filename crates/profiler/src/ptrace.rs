//! The ptrace backend (to be written).

use crate::error::ProfilerError;
use multios_profile::Profile;

pub fn launch(_command: &[String]) -> Result<Profile, ProfilerError> {
    Err(ProfilerError::Ptrace {
        what: "backend".into(),
        source: std::io::Error::other("not yet"),
    })
}
