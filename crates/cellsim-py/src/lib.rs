//! `cellsim._engine`: the Python face of `cellsim-engine`.
//!
//! Only conversions live here: [`machine::PyEngine`] wraps a `Machine`,
//! [`buffer::StorageView`] exposes simulated memory as a writable buffer
//! (numpy views without copies), and [`errors`] turns engine errors into the
//! exception classes of `cellsim.exceptions`. No timing logic.

mod buffer;
mod child;
mod errors;
mod machine;
mod ppe;
mod programs;
mod spu;
mod stats;
mod trace;

use pyo3::prelude::*;

/// The native module.
/// How this engine was compiled, for benchmarks to print beside their numbers:
/// "debug", "release" (`pip install`), or "pgo" (`make pgo`, which sets
/// `CELLSIM_BUILD` while it builds with the profile).
const BUILD: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    match option_env!("CELLSIM_BUILD") {
        Some(b) => b,
        None => "release",
    }
};

// The engine relies on the GIL to serialise every call (see `PyEngine`).
#[pymodule(gil_used = true)]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<machine::PyEngine>()?;
    m.add_class::<buffer::StorageView>()?;
    m.add_class::<child::ControlBlock>()?;
    m.add_class::<machine::RunEnd>()?;
    m.add_function(wrap_pyfunction!(machine::machine_names, m)?)?;
    m.add_function(wrap_pyfunction!(machine::machine_toml, m)?)?;
    m.add_function(wrap_pyfunction!(machine::resolved_machine, m)?)?;
    m.add_function(wrap_pyfunction!(machine::machine_variants, m)?)?;
    m.add_function(wrap_pyfunction!(machine::error_catalogue, m)?)?;
    m.add_function(wrap_pyfunction!(machine::ls_ea, m)?)?;
    m.add_function(wrap_pyfunction!(machine::ps_ea, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("BUILD", BUILD)?;
    // the git commit the engine was built from (build.rs; empty outside a checkout)
    m.add("COMMIT", env!("CELLSIM_COMMIT"))?;
    m.add("KERNELS", cellsim_programs::program::KINDS.to_vec())?;
    Ok(())
}
