//! Profiles: loaded and validated by `multios-profile` (the CLI's loader), handed over as JSON.

use crate::py_err;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Loads and validates a profile file; returns its JSON (the format's own serialisation).
#[pyfunction]
fn load_profile(path: PathBuf) -> PyResult<String> {
    let p = multios_profile::load(&path).map_err(py_err)?;
    serde_json::to_string(&p).map_err(py_err)
}

/// Validates profile JSON text (`source` names it in errors); returns the normalised JSON.
#[pyfunction]
fn parse_profile(text: &str, source: &str) -> PyResult<String> {
    let p = multios_profile::from_json_str(source, text).map_err(py_err)?;
    serde_json::to_string(&p).map_err(py_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load_profile, m)?)?;
    m.add_function(wrap_pyfunction!(parse_profile, m)?)?;
    Ok(())
}
