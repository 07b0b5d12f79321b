//! Engine errors as `cellsim.exceptions` classes.
//!
//! The classes are defined in Python (some have two bases, e.g. `ConfigError`
//! is also a `ValueError`) and carry structured fields; this is the one place
//! that maps each `SimError` variant to its class.

use cellsim_engine::{ConfigError, SimError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// Builds the Python exception for an engine error.
pub fn to_py(py: Python<'_>, e: SimError) -> PyErr {
    match build(py, &e) {
        Ok(err) => err,
        Err(fallback) => fallback,
    }
}

fn build(py: Python<'_>, e: &SimError) -> PyResult<PyErr> {
    let exc = py.import("cellsim.exceptions")?;
    let kw = PyDict::new(py);
    let class = match e {
        SimError::Mfc(m) => {
            kw.set_item("kind", m.kind.name())?;
            kw.set_item("spe", m.spe)?;
            kw.set_item("cycle", m.cycle)?;
            kw.set_item("command", &m.command)?;
            "MfcError"
        }
        SimError::Deadlock { cycle, blocked } => {
            let list = PyList::empty(py);
            for b in blocked {
                list.append(PyTuple::new(
                    py,
                    [
                        b.who.clone().into_pyobject(py)?.into_any(),
                        b.waits_on.clone().into_pyobject(py)?.into_any(),
                        b.since.into_pyobject(py)?.into_any(),
                    ],
                )?)?;
            }
            kw.set_item("blocked", list)?;
            kw.set_item("cycle", *cycle)?;
            "DeadlockError"
        }
        SimError::Runaway { limit, .. } => {
            kw.set_item("limit_cycles", *limit)?;
            "RunawayError"
        }
        SimError::Config(c) => {
            if let ConfigError::Invalid { key, .. } = c {
                kw.set_item("key", key)?;
            }
            "ConfigError"
        }
        SimError::Usage(_) => "UsageError",
        _ => "CellsimError",
    };
    let obj = exc.getattr(class)?.call((e.to_string(),), Some(&kw))?;
    Ok(PyErr::from_value(obj))
}

/// Converts a configuration error.
pub fn config_to_py(py: Python<'_>, e: ConfigError) -> PyErr {
    to_py(py, SimError::Config(e))
}
