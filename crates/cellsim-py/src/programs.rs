//! Native programs on `Engine`: Python programs as external threads, the
//! Rust programs of `cellsim-programs` from their typed description, and
//! synthetic traffic.

use crate::errors::{internal_error, to_py};
use crate::machine::{guarded, PyEngine};
use cellsim_engine::SimError;
use cellsim_programs::program::{spawn_after, Program};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

#[pymethods]
impl PyEngine {
    /// Starts an external (Python) program on logical SPE `spe`; returns its thread id.
    fn spawn_external(&mut self, py: Python<'_>, spe: u32) -> PyResult<usize> {
        self.m.spawn_external(spe).map_err(|e| to_py(py, e))
    }

    /// Starts an external SPE program `delay` cycles from now (spe_context_run).
    fn spawn_external_after(&mut self, py: Python<'_>, spe: u32, delay: u64) -> PyResult<usize> {
        self.m
            .spawn_external_after(spe, delay)
            .map_err(|e| to_py(py, e))
    }

    /// Starts native program `program` (a dict: `{"kind": ..., parameters}`,
    /// see `cellsim_programs::program::Program`) on logical SPE `spe`,
    /// `delay` cycles from now; returns its thread id.
    #[pyo3(signature = (spe, program, delay = 0))]
    fn spawn_program(
        &mut self,
        py: Python<'_>,
        spe: u32,
        program: &Bound<'_, PyDict>,
        delay: u64,
    ) -> PyResult<usize> {
        let program = Program::from_value(to_value(program.as_any())?).map_err(|e| to_py(py, e))?;
        spawn_after(&mut self.m, spe, program, delay).map_err(|e| to_py(py, e))
    }

    /// Starts synthetic uniform traffic (`rate` transfers per ramp per bus cycle).
    fn start_synthetic(&mut self, py: Python<'_>, rate: f64) -> PyResult<()> {
        cellsim_programs::traffic::start_uniform(&mut self.m, rate).map_err(|e| to_py(py, e))
    }

    /// Runs `cycles` more cycles (synthetic traffic only).
    fn run_for(&mut self, py: Python<'_>, cycles: u64) -> PyResult<()> {
        match guarded(|| self.m.run_for(cycles)) {
            Ok(r) => r.map_err(|e| self.error_to_py(py, e)),
            Err(bug) => Err(internal_error(py, &bug)),
        }
    }
}

/// A Python value (dict, list, tuple, str, bool, int, float; numpy integers
/// too) as the serde value `Program` is deserialised from.
fn to_value(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let bad = |why: &str| {
        to_py(
            v.py(),
            SimError::Usage(format!(
                "bad program: {why} ({v:?} of type {})",
                type_name(v)
            )),
        )
    };
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        let x: f64 = v.extract()?;
        return serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| bad("a number must be finite"));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Value::String(v.extract()?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, x) in d.iter() {
            let key = k
                .extract::<String>()
                .map_err(|_| bad("keys must be strings"))?;
            map.insert(key, to_value(&x)?);
        }
        return Ok(Value::Object(map));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items = v
            .try_iter()?
            .map(|x| to_value(&x?))
            .collect::<PyResult<_>>()?;
        return Ok(Value::Array(items));
    }
    // Python ints and anything with `__index__` (numpy integers).
    if v.is_instance_of::<PyInt>() || v.hasattr("__index__")? {
        if let Ok(x) = v.extract::<u64>() {
            return Ok(Value::from(x));
        }
        if let Ok(x) = v.extract::<i64>() {
            return Ok(Value::from(x));
        }
        return Err(bad("an integer must fit in 64 bits"));
    }
    Err(bad("not a dict, list, string, bool or number"))
}

/// The Python type name of `v`, for errors.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}
