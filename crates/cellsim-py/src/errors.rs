//! Engine errors as `cellsim.exceptions` classes.
//!
//! The classes are defined in Python (some have two bases, e.g. `ConfigError`
//! is also a `ValueError`) and carry structured fields; this is the one place
//! that maps each `SimError` variant to its class.

use cellsim_engine::{Activity, ConfigError, SimError};
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
        SimError::Runaway {
            limit, activity, ..
        } => {
            kw.set_item("limit_cycles", *limit)?;
            kw.set_item("activity", activity_list(activity))?;
            "RunawayError"
        }
        SimError::Stopped {
            cycle, activity, ..
        } => {
            kw.set_item("cycle", *cycle)?;
            kw.set_item("activity", activity_list(activity))?;
            "RunawayError"
        }
        SimError::Config(c) => {
            if let ConfigError::Invalid { key, .. } = c {
                kw.set_item("key", key)?;
            }
            "ConfigError"
        }
        SimError::DmaHazard { spe, hazard } => return dma_hazard(py, e, *spe, hazard),
        SimError::Usage(_) => "UsageError",
        SimError::Invariant(_) => "InvariantError",
        _ => "CellsimError",
    };
    let obj = exc.getattr(class)?.call((e.to_string(),), Some(&kw))?;
    Ok(PyErr::from_value(obj))
}

/// A native program's DMA race as `cellsim.dmacheck.DmaHazardError`, the
/// class the Python and C programs' checker raises.
fn dma_hazard(
    py: Python<'_>,
    e: &SimError,
    spe: u32,
    h: &cellsim_engine::dma_check::Hazard,
) -> PyResult<PyErr> {
    let class = py.import("cellsim.dmacheck")?.getattr("DmaHazardError")?;
    let tags = PyTuple::new(py, &h.tags)?;
    let range = (h.range.0, h.range.1, h.range.2);
    let sites = (h.sites.0.clone(), h.sites.1.clone());
    let obj = class.call1((e.to_string(), spe, tags, range, sites))?;
    Ok(PyErr::from_value(obj))
}

/// `(who, doing)` pairs of the livelock report.
fn activity_list(a: &[Activity]) -> Vec<(String, String)> {
    a.iter().map(|x| (x.who.clone(), x.doing.clone())).collect()
}

/// A Rust panic (a bug in cellsim) as an `InvariantError`, never a
/// `PanicException` (which `except Exception` would not catch).
pub fn internal_error(py: Python<'_>, panic: &str) -> PyErr {
    invariant_error(
        py,
        format!("internal error in the cellsim engine (a bug, please report it): {panic}"),
    )
}

/// A `cellsim.exceptions.InvariantError` with `msg`.
fn invariant_error(py: Python<'_>, msg: String) -> PyErr {
    let r = py
        .import("cellsim.exceptions")
        .and_then(|m| m.getattr("InvariantError"))
        .and_then(|c| c.call1((msg,)));
    match r {
        Ok(obj) => PyErr::from_value(obj),
        Err(e) => e,
    }
}

/// Converts a configuration error.
pub fn config_to_py(py: Python<'_>, e: ConfigError) -> PyErr {
    to_py(py, SimError::Config(e))
}
