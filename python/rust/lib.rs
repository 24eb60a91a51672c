//! `multios._native`: the Rust side of the Python package. It exposes the profile loader and the
//! speedup models of `multios-profile` and `multios-model` — the same functions and the same
//! validation the CLI uses — and raises their errors as `multios.MultiosError` (a `ValueError`).
//! Results cross the boundary as JSON text (the crates' own serde output), which the Python side
//! turns into dicts and pandas DataFrames.

mod args;
mod model;
mod profile;

use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    MultiosError,
    pyo3::exceptions::PyValueError,
    "An input multios refuses: the message names the file, field or argument at fault and the fix."
);

/// Turns any displayable error into a `MultiosError` with the error's message.
pub(crate) fn py_err(e: impl std::fmt::Display) -> PyErr {
    MultiosError::new_err(e.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MultiosError", m.py().get_type::<MultiosError>())?;
    m.add("SCHEMA_VERSION", multios_profile::SCHEMA_VERSION)?;
    profile::register(m)?;
    model::register(m)?;
    Ok(())
}
