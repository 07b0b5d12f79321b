//! Native programs on `Engine`: Python programs as external threads, the
//! Rust programs of `cellsim-programs` by name, and synthetic traffic.

use crate::errors::{internal_error, to_py};
use crate::machine::{guarded, PyEngine};
use cellsim_programs::kernels;
use pyo3::prelude::*;

#[pymethods]
impl PyEngine {
    /// Starts an external (Python) program on logical SPE `spe`; returns its thread id.
    fn spawn_external(&mut self, py: Python<'_>, spe: u32) -> PyResult<usize> {
        self.m.spawn_external(spe).map_err(|e| to_py(py, e))
    }

    /// Starts native kernel `name` on logical SPE `spe` with numeric parameters.
    fn spawn_kernel(
        &mut self,
        py: Python<'_>,
        spe: u32,
        name: &str,
        params: Vec<(String, f64)>,
    ) -> PyResult<usize> {
        self.spawn_kernel_after(py, spe, name, params, 0)
    }

    /// Starts an external SPE program `delay` cycles from now (spe_context_run).
    fn spawn_external_after(&mut self, py: Python<'_>, spe: u32, delay: u64) -> PyResult<usize> {
        self.m
            .spawn_external_after(spe, delay)
            .map_err(|e| to_py(py, e))
    }

    /// Starts native kernel `name` `delay` cycles from now.
    fn spawn_kernel_after(
        &mut self,
        py: Python<'_>,
        spe: u32,
        name: &str,
        params: Vec<(String, f64)>,
        delay: u64,
    ) -> PyResult<usize> {
        let r = if cellsim_programs::bandwidth::NAMES.contains(&name) {
            cellsim_programs::bandwidth::spawn_after(&mut self.m, spe, name, &params, delay)
        } else if cellsim_programs::messaging::NAMES.contains(&name) {
            cellsim_programs::messaging::spawn_after(&mut self.m, spe, name, &params, delay)
        } else {
            kernels::spawn_after(&mut self.m, spe, name, &params, delay)
        };
        r.map_err(|e| to_py(py, e))
    }

    /// Starts synthetic uniform traffic (`rate` transfers per ramp per bus cycle).
    fn start_synthetic(&mut self, py: Python<'_>, rate: f64) -> PyResult<()> {
        self.m.start_synthetic(rate).map_err(|e| to_py(py, e))
    }

    /// Runs `cycles` more cycles (synthetic traffic only).
    fn run_for(&mut self, py: Python<'_>, cycles: u64) -> PyResult<()> {
        match guarded(|| self.m.run_for(cycles)) {
            Ok(r) => r.map_err(|e| self.error_to_py(py, e)),
            Err(bug) => Err(internal_error(py, &bug)),
        }
    }
}
