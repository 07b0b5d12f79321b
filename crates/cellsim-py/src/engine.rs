//! `Engine`: one simulated machine, driven from Python.
//!
//! Python programs are external threads of the engine. Each SPU call is one
//! method here that submits the call as a `Request` and runs the machine
//! until some external program must run again; it returns `(thread, reply)`
//! for that program (`thread == -1`: the run finished; `-2`: the run failed,
//! `take_error()` raises why). The greenlet driver in `cellsim.machine`
//! switches to that thread. Errors in the call itself (a bad DMA) are raised
//! at once, in the calling program.

use crate::buffer::StorageView;
use crate::errors::{config_to_py, internal_error, invariant_error, to_py};
use cellsim_engine::config::NumaPolicy;
use cellsim_engine::machine::ThreadState;
use cellsim_engine::mailbox::Outbound;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::program::{Channel, LoopOp, LsAccessLoop, PpeLoop};
use cellsim_engine::{
    kernels, Machine, MachineConfig, MfcCommand, MfcErrorKind, Opcode, Request, SimError, Step,
    TagUpdate,
};
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
    m: Machine,
    error: Option<SimError>,
    /// Ctrl-C and the host-time limit, checked by the event loop.
    watch: Rc<HostWatch>,
}

// SAFETY: the machine holds native programs whose futures and ports use `Rc`
// and `Cell`, so it is not `Send` by itself. Every `Rc` clone lives inside the
// machine and none is handed out, so moving the whole machine (or dropping it)
// on another thread moves all of them together. Every method runs with the
// GIL held and none releases it (the module declares `gil_used`), so no two
// threads ever touch the machine at once. Being `Send` lets a Dask worker or
// the cyclic garbage collector drop an engine on a thread other than the one
// that made it, which an `unsendable` class would refuse (and leak).
unsafe impl Send for PyEngine {}
unsafe impl Sync for PyEngine {}

/// `(id, spe, physical, state, exit_code, end_cycle)` of one thread.
type ThreadRow = (
    usize,
    Option<u32>,
    Option<u8>,
    &'static str,
    Option<u32>,
    Option<u64>,
);

/// `(kind, id, lane, name, start_cycle, end_cycle, args)` of one trace record.
type TraceRow = (
    &'static str,
    u64,
    u32,
    String,
    u64,
    u64,
    Vec<(&'static str, u64)>,
);

/// One trace record as the Python layer reads it.
fn trace_row(r: &cellsim_engine::trace::TraceRecord) -> TraceRow {
    use cellsim_engine::trace::Track;
    let (kind, id, lane) = match r.track {
        Track::Spu(s) => ("spu", s as u64, 0),
        Track::MfcSlot(s, slot) => ("mfc", s as u64, slot as u32),
        Track::Ppe(t) => ("ppe", t as u64, 0),
        Track::Ring(ring, lane) => ("ring", ring as u64, lane as u32),
    };
    (kind, id, lane, r.name.clone(), r.start, r.end, r.args.clone())
}

const FINISHED: i64 = -1;
const FAILED: i64 = -2;

impl PyEngine {
    /// Submits `req` for `tid` and runs to the next external resume.
    fn step(&mut self, py: Python<'_>, tid: usize, req: Request) -> PyResult<(i64, u64)> {
        match guarded(|| self.m.submit(tid, req)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.error_to_py(py, e)),
            Err(bug) => return Err(internal_error(py, &bug)),
        }
        self.advance(py)
    }

    fn advance(&mut self, py: Python<'_>) -> PyResult<(i64, u64)> {
        match guarded(|| self.m.advance()) {
            Ok(Ok(Step::Resume { thread, reply })) => Ok((thread as i64, reply)),
            Ok(Ok(Step::Finished)) => Ok((FINISHED, 0)),
            Ok(Err(e)) => {
                self.error = Some(e);
                Ok((FAILED, 0))
            }
            Err(bug) => Err(internal_error(py, &bug)),
        }
    }

    /// An engine error as a Python exception; a run stopped by Ctrl-C
    /// raises the `KeyboardInterrupt` itself.
    /// A `RunawayError` raised by a signal handler (a command's
    /// `--wall-limit` alarm) gets the livelock report.
    fn error_to_py(&self, py: Python<'_>, e: SimError) -> PyErr {
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
struct HostWatch {
    /// When the run must stop, and the limit it stands for (seconds).
    deadline: Cell<Option<(Instant, f64)>>,
    /// The `KeyboardInterrupt` (or other signal handler's error) that stopped the run.
    interrupt: Cell<Option<PyErr>>,
}

impl HostWatch {
    fn check(&self) -> Result<(), String> {
        if let Some((at, limit)) = self.deadline.get() {
            if Instant::now() >= at {
                return Err(format!(
                    "host-time limit reached: the run took more than {limit} s of host time \
                     (wall_limit_s, --wall-limit); raise it if the run is expected to be this long"
                ));
            }
        }
        Python::attach(|py| py.check_signals()).map_err(|e| {
            self.interrupt.set(Some(e));
            "interrupted".to_string()
        })
    }
}

/// Runs `f`, turning a Rust panic (a bug in cellsim) into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into())
    })
}

/// `load`, `store`, `copy` to a loop operation.
fn loop_op(op: &str) -> PyResult<LoopOp> {
    match op {
        "load" => Ok(LoopOp::Load),
        "store" => Ok(LoopOp::Store),
        "copy" => Ok(LoopOp::Copy),
        _ => Err(PyValueError::new_err(format!(
            "op {op:?} is not load, store or copy"
        ))),
    }
}

/// SPU channel numbers (CBEA) to channels.
fn channel(number: u32) -> PyResult<Channel> {
    Ok(match number {
        3 => Channel::Signal1,
        4 => Channel::Signal2,
        25 => Channel::ListStallStatus,
        26 => Channel::ListStallAck,
        27 => Channel::AtomicStatus,
        28 => Channel::OutMbox,
        29 => Channel::InMbox,
        30 => Channel::OutIntrMbox,
        _ => {
            return Err(PyValueError::new_err(format!(
                "channel {number} is not one this model implements"
            )))
        }
    })
}

fn opcode(py: Python<'_>, now: u64, code: u32) -> PyResult<Opcode> {
    Opcode::from_code(code).ok_or_else(|| {
        let e = cellsim_engine::MfcError {
            kind: MfcErrorKind::Opcode,
            spe: None,
            cycle: now,
            command: format!("opcode 0x{code:x}"),
            message: format!("opcode 0x{code:x} is not an MFC command this model implements"),
        };
        to_py(py, SimError::Mfc(e))
    })
}

fn tag_update(mode: u32) -> PyResult<TagUpdate> {
    match mode {
        0 => Ok(TagUpdate::Immediate),
        1 => Ok(TagUpdate::Any),
        2 => Ok(TagUpdate::All),
        _ => Err(PyValueError::new_err(format!(
            "tag update mode {mode} is not 0 (immediate), 1 (any) or 2 (all)"
        ))),
    }
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

    /// Runs until an external program must run: `(thread, reply)`.
    fn start(&mut self, py: Python<'_>) -> PyResult<(i64, u64)> {
        self.advance(py)
    }

    /// Raises the error that ended the run (after a call returned thread -2).
    fn take_error(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.error.take() {
            Some(e) => Err(self.error_to_py(py, e)),
            None => Ok(()),
        }
    }

    /// Issues MFC command `opcode` (e.g. 0x40 for a get; `list` is the LS
    /// address of a DMA list).
    #[allow(clippy::too_many_arguments)] // mirrors the SDK call's arguments
    #[pyo3(signature = (tid, opcode, lsa, ea, size, tag, list=0))]
    fn mfc(
        &mut self,
        py: Python<'_>,
        tid: usize,
        opcode: u32,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
        list: u32,
    ) -> PyResult<(i64, u64)> {
        let op = self::opcode(py, self.m.now(), opcode)?;
        self.step(
            py,
            tid,
            Request::Mfc(MfcCommand {
                op,
                lsa,
                ea,
                size,
                tag,
                list,
            }),
        )
    }

    /// A blocking (or not) read of SPU channel `number`.
    fn read_channel(&mut self, py: Python<'_>, tid: usize, number: u32) -> PyResult<(i64, u64)> {
        let c = channel(number)?;
        self.step(py, tid, Request::ReadChannel(c))
    }

    /// A blocking (or not) write of `value` to SPU channel `number`.
    fn write_channel(
        &mut self,
        py: Python<'_>,
        tid: usize,
        number: u32,
        value: u32,
    ) -> PyResult<(i64, u64)> {
        let c = channel(number)?;
        self.step(py, tid, Request::WriteChannel(c, value))
    }

    /// The count of SPU channel `number`.
    fn channel_count(&mut self, py: Python<'_>, tid: usize, number: u32) -> PyResult<(i64, u64)> {
        let c = channel(number)?;
        self.step(py, tid, Request::ChannelCount(c))
    }

    /// Starts a PPE thread driven from Python; returns its id.
    fn spawn_ppe(&mut self) -> usize {
        self.m.spawn_ppe_external()
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
        let r = if cellsim_engine::bandwidth::NAMES.contains(&name) {
            cellsim_engine::bandwidth::spawn_after(&mut self.m, spe, name, &params, delay)
        } else if cellsim_engine::messaging::NAMES.contains(&name) {
            cellsim_engine::messaging::spawn_after(&mut self.m, spe, name, &params, delay)
        } else {
            kernels::spawn_after(&mut self.m, spe, name, &params, delay)
        };
        r.map_err(|e| to_py(py, e))
    }

    /// Waits for thread `other` to finish; the reply is its exit value.
    fn join(&mut self, py: Python<'_>, tid: usize, other: usize) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::Join(other))
    }

    /// PPE load of `size` bytes at `ea`.
    fn ppe_load(&mut self, py: Python<'_>, tid: usize, ea: u64, size: u8) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeLoad { ea, size })
    }

    /// PPE store of the low `size` bytes of `value` at `ea`.
    fn ppe_store(
        &mut self,
        py: Python<'_>,
        tid: usize,
        ea: u64,
        size: u8,
        value: u64,
    ) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeStore { ea, size, value })
    }

    /// A PPE loop of accesses through the caches (`op`: load, store or
    /// copy); the reply is the cycles it took.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (tid, op, ea, dst, bytes, elem, stride, threads, dependent, fill))]
    fn ppe_access_loop(
        &mut self,
        py: Python<'_>,
        tid: usize,
        op: &str,
        ea: u64,
        dst: u64,
        bytes: u64,
        elem: u8,
        stride: u64,
        threads: u8,
        dependent: bool,
        fill: u8,
    ) -> PyResult<(i64, u64)> {
        let op = loop_op(op)?;
        self.step(
            py,
            tid,
            Request::PpeLoop(PpeLoop {
                op,
                ea,
                dst,
                bytes,
                elem,
                stride,
                threads,
                dependent,
                fill,
            }),
        )
    }

    /// An SPU loop over its own local store (`op`: load, store or copy);
    /// the reply is the cycles it took.
    #[allow(clippy::too_many_arguments)]
    fn ls_access_loop(
        &mut self,
        py: Python<'_>,
        tid: usize,
        op: &str,
        lsa: u32,
        dst: u32,
        bytes: u32,
        elem: u8,
        fill: u8,
    ) -> PyResult<(i64, u64)> {
        let op = loop_op(op)?;
        self.step(
            py,
            tid,
            Request::LsLoop(LsAccessLoop {
                op,
                lsa,
                dst,
                bytes,
                elem,
                fill,
            }),
        )
    }

    /// Counters of the PPE's caches.
    fn ppe_cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.m.ppe_cache_stats();
        let d = PyDict::new(py);
        d.set_item("loads", s.loads)?;
        d.set_item("stores", s.stores)?;
        d.set_item("l1_hits", s.l1_hits)?;
        d.set_item("l1_misses", s.l1_misses)?;
        d.set_item("reloads", s.reloads)?;
        d.set_item("l2_misses", s.l2_misses)?;
        d.set_item("prefetches", s.prefetches)?;
        d.set_item("castouts", s.castouts)?;
        d.set_item("snoop_invalidations", s.snoop_invalidations)?;
        Ok(d)
    }

    /// Whether the PPE's L1 and L2 hold the line of main-memory address `addr`.
    fn ppe_cache_holds(&self, addr: u64) -> (bool, bool) {
        self.m.ppe_cache_holds(addr)
    }

    /// PPE lwarx/ldarx.
    fn ppe_lwarx(&mut self, py: Python<'_>, tid: usize, ea: u64, size: u8) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeLwarx { ea, size })
    }

    /// PPE stwcx./stdcx. (reply 1 when stored).
    fn ppe_stwcx(
        &mut self,
        py: Python<'_>,
        tid: usize,
        ea: u64,
        size: u8,
        value: u64,
    ) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeStwcx { ea, size, value })
    }

    /// PPE read of an SPE's outbound (or interrupt) mailbox; `wait` blocks.
    fn ppe_read_mbox(
        &mut self,
        py: Python<'_>,
        tid: usize,
        spe: u32,
        intr: bool,
        wait: bool,
    ) -> PyResult<(i64, u64)> {
        let which = if intr {
            Outbound::Interrupt
        } else {
            Outbound::Plain
        };
        self.step(py, tid, Request::PpeReadMbox { spe, which, wait })
    }

    /// PPE write of an SPE's inbound mailbox; `wait` blocks while it is full.
    fn ppe_write_mbox(
        &mut self,
        py: Python<'_>,
        tid: usize,
        spe: u32,
        value: u32,
        wait: bool,
    ) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeWriteMbox { spe, value, wait })
    }

    /// PPE read of an SPE's SPU_Mbox_Stat.
    fn ppe_mbox_status(&mut self, py: Python<'_>, tid: usize, spe: u32) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeMboxStatus { spe })
    }

    /// PPE write of an SPE's signal register `which` (1 or 2).
    fn ppe_signal(
        &mut self,
        py: Python<'_>,
        tid: usize,
        spe: u32,
        which: u8,
        value: u32,
    ) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::PpeSignal { spe, which, value })
    }

    /// A proxy DMA (`spe_mfcio_*`) into SPE `spe`'s proxy queue.
    #[allow(clippy::too_many_arguments)] // mirrors the SDK call's arguments
    fn proxy_mfc(
        &mut self,
        py: Python<'_>,
        tid: usize,
        spe: u32,
        opcode: u32,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
    ) -> PyResult<(i64, u64)> {
        let op = self::opcode(py, self.m.now(), opcode)?;
        self.step(
            py,
            tid,
            Request::ProxyMfc {
                spe,
                cmd: MfcCommand {
                    op,
                    lsa,
                    ea,
                    size,
                    tag,
                    list: 0,
                },
            },
        )
    }

    /// Proxy tag-group status of SPE `spe` (mode 0 immediate, 1 any, 2 all).
    fn proxy_tag_status(
        &mut self,
        py: Python<'_>,
        tid: usize,
        spe: u32,
        mask: u32,
        mode: u32,
    ) -> PyResult<(i64, u64)> {
        let mode = tag_update(mode)?;
        self.step(py, tid, Request::ProxyTagStatus { spe, mask, mode })
    }

    /// Sets signal register `which` of SPE `spe` to OR mode or overwrite mode.
    fn set_signal_mode(
        &mut self,
        py: Python<'_>,
        spe: u32,
        which: u8,
        or_mode: bool,
    ) -> PyResult<()> {
        self.m
            .set_signal_mode(spe, which, or_mode)
            .map_err(|e| to_py(py, e))
    }

    /// Physical SPEs in memory-affinity order (nearest the memory controller first).
    fn affinity_chain(&self) -> Vec<u32> {
        self.m.affinity_chain()
    }

    /// Spends `cycles` cycles computing.
    fn compute(&mut self, py: Python<'_>, tid: usize, cycles: u64) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::Compute(cycles))
    }

    /// `mfc_write_tag_mask`.
    fn write_tag_mask(&mut self, py: Python<'_>, tid: usize, mask: u32) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::WriteTagMask(mask))
    }

    /// `mfc_read_tag_mask`.
    fn read_tag_mask(&mut self, py: Python<'_>, tid: usize) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::ReadTagMask)
    }

    /// `mfc_read_tag_status_*` with mode 0 (immediate), 1 (any), 2 (all).
    fn read_tag_status(&mut self, py: Python<'_>, tid: usize, mode: u32) -> PyResult<(i64, u64)> {
        let mode = tag_update(mode)?;
        self.step(py, tid, Request::ReadTagStatus(mode))
    }

    /// `spu_read_decrementer`.
    fn read_decrementer(&mut self, py: Python<'_>, tid: usize) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::ReadDecrementer)
    }

    /// `spu_write_decrementer`.
    fn write_decrementer(
        &mut self,
        py: Python<'_>,
        tid: usize,
        value: u32,
    ) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::WriteDecrementer(value))
    }

    /// The program ends with `code`.
    fn exit(&mut self, py: Python<'_>, tid: usize, code: u32) -> PyResult<(i64, u64)> {
        self.step(py, tid, Request::Exit(code))
    }

    /// Every thread: `(id, spe, physical, state, exit_code, end_cycle)`.
    fn threads(&self) -> Vec<ThreadRow> {
        self.m
            .threads()
            .into_iter()
            .map(|t| {
                let (state, code, at) = match t.state {
                    ThreadState::Active => ("active", None, None),
                    ThreadState::Blocked { .. } => ("blocked", None, None),
                    ThreadState::Finished { code, at } => ("finished", Some(code), Some(at)),
                };
                (t.id, t.spe, t.physical, state, code, at)
            })
            .collect()
    }

    /// Counters of the run so far.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let c = self.m.counters();
        let eibs: Vec<_> = self.m.eibs().map(|e| &e.stats).collect();
        let banks: Vec<_> = self.m.mics().iter().map(|m| m.stats.clone()).collect();
        let (rounds, attempts) = self.m.arbiter_stats();
        d.set_item("cycles", self.m.now())?;
        d.set_item("ns", self.m.now_ns())?;
        d.set_item("events", c.events)?;
        d.set_item("dma_commands", c.dma_commands)?;
        d.set_item("get_bytes", c.get_bytes)?;
        d.set_item("put_bytes", c.put_bytes)?;
        d.set_item("bus_requests", c.bus_requests)?;
        d.set_item("bus_completed", c.bus_completed)?;
        // Every chip's EIB: ramps and rings of chip 1 follow chip 0's.
        d.set_item("transfers", eibs.iter().map(|e| e.transfers).sum::<u64>())?;
        d.set_item("transfer_bytes", eibs.iter().map(|e| e.bytes).sum::<u64>())?;
        d.set_item(
            "ramp_sent",
            eibs.iter().flat_map(|e| e.sent).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "ramp_received",
            eibs.iter().flat_map(|e| e.received).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "segment_busy",
            eibs.iter()
                .flat_map(|e| e.segment_busy.iter().map(|r| r.to_vec()))
                .collect::<Vec<_>>(),
        )?;
        if let Some(b) = self.m.bif() {
            d.set_item(
                "bif_bytes",
                b.links.iter().map(|l| l.bytes).collect::<Vec<_>>(),
            )?;
            d.set_item(
                "bif_busy_cycles",
                b.links.iter().map(|l| l.busy).collect::<Vec<_>>(),
            )?;
        }
        d.set_item("mic_reads", banks.iter().map(|b| b.reads).sum::<u64>())?;
        d.set_item("mic_writes", banks.iter().map(|b| b.writes).sum::<u64>())?;
        d.set_item(
            "bank_read_bytes",
            banks.iter().map(|b| b.read_bytes).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "bank_write_bytes",
            banks.iter().map(|b| b.write_bytes).collect::<Vec<_>>(),
        )?;
        d.set_item("arbiter_rounds", rounds)?;
        d.set_item("arbiter_attempts", attempts)?;
        Ok(d)
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

    /// Starts recording every DMA command's latencies.
    fn record_dma_latencies(&mut self) {
        self.m.record_dma_latencies();
    }

    /// The recorded DMA latencies of logical SPE `spe`, in cycles:
    /// `(queued, service)` per command (issue to tag update; DMAC start to
    /// tag update), in retirement order.
    fn dma_latencies(&self, py: Python<'_>, spe: u32) -> PyResult<Vec<(u64, u64)>> {
        self.m
            .dma_latencies(spe)
            .map(|v| v.iter().map(|l| (l.queued, l.service)).collect())
            .map_err(|e| to_py(py, e))
    }

    /// Starts recording a trace (at most `limit` records).
    fn enable_trace(&mut self, limit: usize) {
        self.m.enable_trace(limit);
    }

    /// The trace records not taken yet: `(records, dropped)`, each record
    /// `(kind, id, lane, name, start_cycle, end_cycle, args)` with kind one of
    /// `"spu"`, `"mfc"`, `"ppe"`, `"ring"` and args `[(name, value), ...]`.
    fn trace_records(&self) -> (Vec<TraceRow>, u64) {
        let Some((records, dropped)) = self.m.trace() else {
            return (Vec::new(), 0);
        };
        (records.iter().map(trace_row).collect(), dropped)
    }

    /// Removes and returns up to `n` of the oldest trace records (a writer
    /// streams them to a file in chunks), and the records dropped so far.
    fn take_trace(&mut self, n: usize) -> (Vec<TraceRow>, u64) {
        let rows = self.m.take_trace(n).iter().map(trace_row).collect();
        (rows, self.m.trace().map_or(0, |(_, d)| d))
    }

    /// Records every EIB reservation for `verify()`.
    fn enable_checks(&mut self) {
        self.m.enable_checks();
    }

    /// Checks the EIB invariants over the run; raises `InvariantError` on a violation.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        self.m.verify().map_err(|msg| invariant_error(py, msg))
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
