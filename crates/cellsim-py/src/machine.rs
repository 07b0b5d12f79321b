//! `Engine`: one simulated machine, driven from Python. This file builds it
//! and runs it (placement, limits, memory, local stores, start); the calls of
//! each side live beside the engine module they bind: `spu.rs`, `ppe.rs`,
//! `programs.rs`, `stats.rs`, `trace.rs` (each its own `#[pymethods]` block).
//!
//! Python programs are external threads of the engine. Each SPU call is one
//! method here that submits the call as a `Request` and runs the machine
//! until some external program must run again; it returns `(thread, reply)`
//! for that program: `thread` is [`Next`], the thread's id or a [`RunEnd`]
//! (the run finished, or failed and `take_error()` raises why). The greenlet driver in `cellsim.machine`
//! switches to that thread. Errors in the call itself (a bad DMA) are raised
//! at once, in the calling program.

use crate::buffer::StorageView;
use crate::errors::{config_to_py, internal_error, to_py};
use cellsim_engine::config::NumaPolicy;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, MachineConfig, MfcErrorKind, Request, SimError, Step};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A simulated Cell machine (the engine behind `cellsim.Machine`).
#[pyclass(module = "cellsim._engine", name = "Engine")]
pub struct PyEngine {
    pub(crate) m: Machine,
    pub(crate) error: Option<SimError>,
    /// Ctrl-C and the host-time limit, checked by the event loop.
    pub(crate) watch: Rc<HostWatch>,
}

// SAFETY: the machine holds native programs whose futures and ports use `Rc`
// and `Cell`, so it is not `Send` by itself. Every `Rc` clone lives inside the
// machine and none is handed out, so moving the whole machine (or dropping it)
// on another thread moves all of them together. Every method runs with the
// GIL held and none releases it while it touches the machine (the module declares
// `gil_used`; `resume_child` lets go of the GIL only while it waits for a C program's
// process), so no two threads ever touch the machine at once. Being `Send` lets a Dask worker or
// the cyclic garbage collector drop an engine on a thread other than the one
// that made it, which an `unsendable` class would refuse (and leak).
unsafe impl Send for PyEngine {}
unsafe impl Sync for PyEngine {}

/// How a run ended, where a step would name the next thread to resume.
#[pyclass(module = "cellsim._engine", eq, frozen)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every program ended.
    Finished,
    /// The run stopped with an error; `take_error()` raises it.
    Failed,
}

/// Who runs after a call: an external (Python) thread by id, or nobody
/// because the run ended.
#[derive(Debug, Clone, Copy, IntoPyObject)]
pub enum Next {
    /// Resume this thread.
    Thread(usize),
    /// The run ended.
    End(RunEnd),
}

/// What a call of a program returns: who runs next and the reply it gets.
pub(crate) type Resumed = (Next, u64);

impl PyEngine {
    /// Submits `req` for `tid` and runs to the next external resume.
    pub(crate) fn step(&mut self, py: Python<'_>, tid: usize, req: Request) -> PyResult<Resumed> {
        match guarded(|| self.m.submit(tid, req)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.error_to_py(py, e)),
            Err(bug) => return Err(internal_error(py, &bug)),
        }
        self.advance(py)
    }

    pub(crate) fn advance(&mut self, py: Python<'_>) -> PyResult<Resumed> {
        match guarded(|| self.m.advance()) {
            Ok(Ok(Step::Resume { thread, reply })) => Ok((Next::Thread(thread), reply)),
            Ok(Ok(Step::Finished)) => Ok((Next::End(RunEnd::Finished), 0)),
            Ok(Err(e)) => {
                self.error = Some(e);
                Ok((Next::End(RunEnd::Failed), 0))
            }
            Err(bug) => Err(internal_error(py, &bug)),
        }
    }

    /// An engine error as a Python exception; a run stopped by Ctrl-C
    /// raises the `KeyboardInterrupt` itself.
    /// A `RunawayError` raised by a signal handler (a command's
    /// `--wall-limit` alarm) gets the livelock report.
    pub(crate) fn error_to_py(&self, py: Python<'_>, e: SimError) -> PyErr {
        match (e, self.watch.interrupt.take()) {
            (
                SimError::Stopped {
                    cycle, activity, ..
                },
                Some(interrupt),
            ) => {
                if !is_runaway(py, &interrupt) {
                    return interrupt;
                }
                let reason = interrupt.value(py).to_string();
                to_py(
                    py,
                    SimError::Stopped {
                        cycle,
                        reason,
                        activity,
                    },
                )
            }
            (e, _) => to_py(py, e),
        }
    }
}

/// Whether `e` is a `cellsim.exceptions.RunawayError`.
fn is_runaway(py: Python<'_>, e: &PyErr) -> bool {
    py.import("cellsim.exceptions")
        .and_then(|m| m.getattr("RunawayError"))
        .is_ok_and(|cls| e.value(py).is_instance(&cls).unwrap_or(false))
}

/// Ctrl-C and the host-time limit: the event loop's watchdog checks them.
#[derive(Default)]
pub(crate) struct HostWatch {
    /// When the run must stop, and the limit it stands for (seconds).
    deadline: Cell<Option<(Instant, f64)>>,
    /// The `KeyboardInterrupt` (or other signal handler's error) that stopped the run.
    interrupt: Cell<Option<PyErr>>,
}

impl HostWatch {
    /// The host-time limit alone (also checked while a C program's process runs).
    pub(crate) fn check_deadline(&self) -> Result<(), String> {
        if let Some((at, limit)) = self.deadline.get() {
            if Instant::now() >= at {
                return Err(format!(
                    "host-time limit reached: the run took more than {limit} s of host time \
                     (wall_limit_s, --wall-limit); raise it if the run is expected to be this long"
                ));
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        self.check_deadline()?;
        Python::attach(|py| py.check_signals()).map_err(|e| {
            self.interrupt.set(Some(e));
            "interrupted".to_string()
        })
    }
}

/// Runs `f`, turning a Rust panic (a bug in cellsim) into its message.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into())
    })
}

#[pymethods]
impl PyEngine {
    /// Builds machine `machine` (a preset name or a TOML path) with `seed` and
    /// `section.key=value` overrides.
    #[new]
    #[pyo3(signature = (machine, seed=0, overrides=Vec::new()))]
    fn new(py: Python<'_>, machine: &str, seed: u64, overrides: Vec<String>) -> PyResult<Self> {
        let cfg = MachineConfig::load(machine, &overrides).map_err(|e| config_to_py(py, e))?;
        let mut m = Machine::try_new(cfg, seed).map_err(|e| config_to_py(py, e))?;
        let watch = Rc::new(HostWatch::default());
        let w = watch.clone();
        m.set_watchdog(Box::new(move || w.check()));
        Ok(PyEngine {
            m,
            error: None,
            watch,
        })
    }

    /// Facts about the machine as a dict.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.m.config();
        let t = self.m.timing();
        let d = PyDict::new(py);
        d.set_item("name", &c.name)?;
        d.set_item("description", &c.description)?;
        d.set_item("core_hz", t.clock.hz)?;
        d.set_item("timebase_hz", c.timebase_mhz * 1e6)?;
        d.set_item("memory_bytes", c.memory_bytes())?;
        d.set_item("ls_bytes", t.ls_bytes)?;
        d.set_item("ls_reserved_bytes", c.spu.ls_reserved_bytes)?;
        d.set_item("spes", self.m.spe_count())?;
        d.set_item("ramps", c.ramps.clone())?;
        d.set_item("queue_depth", c.mfc.queue_depth)?;
        d.set_item("context_run_cycles", t.context_run)?;
        d.set_item("ppe_l1_bytes", c.ppe.l1_kb as u64 * 1024)?;
        d.set_item("ppe_l2_bytes", c.ppe.l2_kb as u64 * 1024)?;
        d.set_item("chips", self.m.chip_count())?;
        d.set_item("has_remote_bank", self.m.chip_count() > 1)?;
        d.set_item("bif_link_gbs", c.bif.as_ref().map(|b| b.link_gbs))?;
        d.set_item("page_bytes", c.numa.page_kb * 1024)?;
        d.set_item("numa_policy", &c.numa.policy)?;
        d.set_item("tlb_entries", c.tlb.entries)?;
        Ok(d)
    }

    /// Current simulated cycle.
    #[getter]
    fn now(&self) -> u64 {
        self.m.now()
    }

    /// Current simulated time in ns.
    #[getter]
    fn now_ns(&self) -> f64 {
        self.m.now_ns()
    }

    /// Physical SPE of each logical SPE.
    #[getter]
    fn placement(&self) -> Vec<u32> {
        self.m.placement()
    }

    /// Sets the logical-to-physical placement (before programs start).
    fn set_placement(&mut self, py: Python<'_>, physical: Vec<u32>) -> PyResult<()> {
        self.m.set_placement(&physical).map_err(|e| to_py(py, e))
    }

    /// Turns the steady-state fast-forward off (`True`: every transfer event
    /// by event, the reference) or on; results are identical either way.
    fn set_exact_reference(&mut self, on: bool) {
        self.m.set_exact_reference(on);
    }

    /// Native programs loaded from now on check their DMAs for races
    /// (`Machine(check_dma=True)`; the engine's twin of `cellsim.dmacheck`).
    fn set_check_dma(&mut self, on: bool) {
        self.m.set_check_dma(on);
    }

    /// Stops runs after `cycles` simulated cycles.
    fn set_time_limit(&mut self, cycles: u64) {
        self.m.set_time_limit(cycles);
    }

    /// Stops the run once `seconds` of host time have passed from now
    /// (`None`: no host-time limit).
    #[pyo3(signature = (seconds=None))]
    fn set_wall_limit(&mut self, seconds: Option<f64>) -> PyResult<()> {
        let deadline = match seconds {
            None => None,
            Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
                Some((Instant::now() + Duration::from_secs_f64(s), s))
            }
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "wall limit {s} s is not a positive number of seconds"
                )))
            }
        };
        self.watch.deadline.set(deadline);
        Ok(())
    }

    /// What every unfinished program is doing: `(who, doing)` pairs.
    fn activity(&self) -> Vec<(String, String)> {
        self.m
            .activity_report()
            .into_iter()
            .map(|a| (a.who, a.doing))
            .collect()
    }

    /// Allocates main memory; returns the effective address. `policy` places
    /// its pages (`first-touch`, `interleave`, `node0`, `node1`; None: the
    /// machine's), `huge` puts them on 16 MB pages.
    #[pyo3(signature = (size, align=128, policy=None, huge=false))]
    fn alloc(
        &mut self,
        py: Python<'_>,
        size: u64,
        align: u64,
        policy: Option<&str>,
        huge: bool,
    ) -> PyResult<u64> {
        let policy = match policy {
            None => None,
            Some(p) => Some(NumaPolicy::parse(p).ok_or_else(|| {
                to_py(
                    py,
                    SimError::Usage(format!(
                        "memory policy {p:?} is not first-touch, interleave, node0 or node1"
                    )),
                )
            })?),
        };
        self.m
            .alloc_placed(size, align, policy, huge)
            .map_err(|e| to_py(py, e))
    }

    /// The NUMA node (chip) holding main-memory address `ea`.
    fn memory_node(&self, ea: u64) -> usize {
        self.m.memory_node(ea)
    }

    /// A writable view of main memory from `ea`, `size` bytes.
    fn memory(&self, ea: u64, size: u64) -> PyResult<StorageView> {
        let mem = self.m.memory();
        if ea.checked_add(size).is_none_or(|e| e > mem.len() as u64) {
            return Err(PyValueError::new_err(format!(
                "memory range 0x{ea:x}..+{size} is outside main memory ({} bytes)",
                mem.len()
            )));
        }
        Ok(StorageView::new(mem.clone(), ea as usize, size as usize))
    }

    /// A writable view of logical SPE `spe`'s whole local store.
    fn local_store(&self, py: Python<'_>, spe: u32) -> PyResult<StorageView> {
        let ls = self.m.local_store(spe).map_err(|e| to_py(py, e))?;
        Ok(StorageView::new(ls.clone(), 0, ls.len()))
    }

    /// Runs until an external program must run: `(thread, reply)`.
    fn start(&mut self, py: Python<'_>) -> PyResult<Resumed> {
        self.advance(py)
    }

    /// Raises the error that ended the run (after a call returned `RunEnd.Failed`).
    fn take_error(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.error.take() {
            Some(e) => Err(self.error_to_py(py, e)),
            None => Ok(()),
        }
    }

    /// Physical SPEs in memory-affinity order (nearest the memory controller first).
    fn affinity_chain(&self) -> Vec<u32> {
        self.m.affinity_chain()
    }
}

/// Names of the machines shipped with the engine.
#[pyfunction]
pub fn machine_names() -> Vec<&'static str> {
    MachineConfig::preset_names()
}

/// The TOML text of a shipped machine.
#[pyfunction]
pub fn machine_toml(py: Python<'_>, name: &str) -> PyResult<&'static str> {
    MachineConfig::preset_text(name).ok_or_else(|| {
        let known = MachineConfig::preset_names().join(", ");
        config_to_py(
            py,
            cellsim_engine::ConfigError::UnknownMachine {
                name: name.to_string(),
                known,
            },
        )
    })
}

/// The resolved machine file of a name or path with overrides, as TOML text
/// (its `base` machines merged in, the overrides applied, validated).
#[pyfunction]
pub fn resolved_machine(py: Python<'_>, machine: &str, overrides: Vec<String>) -> PyResult<String> {
    MachineConfig::resolved_toml(machine, &overrides).map_err(|e| config_to_py(py, e))
}

/// The model variants of a machine (see the engine's `config::variants`): one
/// dict per variant, with the choice this machine runs (`value`), the machine
/// file's own (`default`) and every choice's status, source or statements.
#[pyfunction]
pub fn machine_variants<'py>(
    py: Python<'py>,
    machine: &str,
    overrides: Vec<String>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let cfg = MachineConfig::load(machine, &overrides).map_err(|e| config_to_py(py, e))?;
    let defaults = MachineConfig::load(machine, &[]).map_err(|e| config_to_py(py, e))?;
    let mut out = Vec::new();
    for (name, v) in &cfg.variants {
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("key", &v.key)?;
        d.set_item("about", &v.about)?;
        d.set_item("why", &v.why)?;
        d.set_item("value", &v.value)?;
        d.set_item(
            "default",
            defaults.variants.get(name).map(|d| d.value.as_str()),
        )?;
        let choices = PyDict::new(py);
        for (c, choice) in &v.choices {
            let cd = PyDict::new(py);
            cd.set_item("status", choice.status.name())?;
            cd.set_item("source", &choice.source)?;
            cd.set_item("explains", choice.explains.clone())?;
            cd.set_item("params", choice.params.clone())?;
            cd.set_item("what", &choice.what)?;
            choices.set_item(c, cd)?;
        }
        d.set_item("choices", choices)?;
        out.push(d);
    }
    Ok(out)
}

/// The MFC error catalogue: `(kind, rule)` for every kind.
#[pyfunction]
pub fn error_catalogue() -> Vec<(&'static str, &'static str)> {
    MfcErrorKind::ALL
        .iter()
        .map(|k| (k.name(), k.rule()))
        .collect()
}

/// Effective address of logical SPE `spe`'s local store.
#[pyfunction]
pub fn ls_ea(spe: u32) -> u64 {
    MemoryMap::ls_ea(spe)
}

/// Effective address of logical SPE `spe`'s problem-state area.
#[pyfunction]
pub fn ps_ea(spe: u32) -> u64 {
    MemoryMap::ps_ea(spe)
}
