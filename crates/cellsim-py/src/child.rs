//! C programs in their own processes (`python/cellsim/c/process.py`): the control
//! block each shares with the driver, and the driver's side of the turn they pass.
//!
//! The block's first word is the turn: `CHILD` while the C program's process
//! runs, `PARENT` once it has written its next request (or its hello, or its
//! crash report). Each side waits for its turn by spinning a few microseconds,
//! then on a futex; the driver also wakes every 20 ms to see Ctrl-C, the
//! host-time limit and whether the process is still alive.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cellsim_engine::storage::Storage;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::buffer::StorageView;
use crate::machine::PyEngine;

const CHILD: u32 = 0;
const PARENT: u32 = 1;
/// Byte offsets in the block (`cellsim_ctl`): the CPU each side last handed the turn over from.
const PARENT_CPU: usize = 4;
const CHILD_CPU: usize = 32;
/// How long the driver spins before it sleeps on the futex (the process runs on the other core).
const SPIN: Duration = Duration::from_micros(40);
/// How often a sleeping driver looks at signals, the limit and the process.
const POLL: Duration = Duration::from_millis(20);

/// A page-aligned block of shared memory (a `memfd`) for one C program's process.
#[pyclass(module = "cellsim._engine", frozen)]
pub struct ControlBlock {
    store: Arc<Storage>,
    fd: i32,
}

impl ControlBlock {
    fn turn(&self) -> &AtomicU32 {
        self.word(0)
    }

    /// The 32-bit word at byte `offset` (a multiple of 4 in the block's header).
    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: the store is page-aligned, at least a page long and lives as long as
        // `self`; the header's words are only accessed atomically by both processes.
        unsafe { &*(self.store.as_ptr().add(offset) as *const AtomicU32) }
    }
}

#[pymethods]
impl ControlBlock {
    /// A new block of `size` bytes (a page to 1 MiB), zeroed; the turn is the driver's.
    #[new]
    fn new(size: usize) -> PyResult<Self> {
        if !(4096..=1 << 20).contains(&size) {
            return Err(PyValueError::new_err(format!(
                "a control block is 4096 to 1048576 bytes, not {size}"
            )));
        }
        let store = Storage::try_new(size)
            .ok_or_else(|| PyOSError::new_err("no host memory for a control block"))?;
        let fd = store
            .share()
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        let block = ControlBlock { store, fd };
        block.turn().store(PARENT, Ordering::Release);
        Ok(block)
    }

    /// The descriptor of its memory file (close-on-exec: pass it on explicitly).
    #[getter]
    fn fd(&self) -> i32 {
        self.fd
    }

    /// A writable view of the whole block.
    fn view(&self) -> StorageView {
        StorageView::new(self.store.clone(), 0, self.store.len())
    }
}

fn futex(word: &AtomicU32, op: i32, val: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned u32 in memory shared with the other process
    // (hence no FUTEX_PRIVATE_FLAG); the timeout, if any, outlives the call.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, tsp);
    }
}

/// Whether process `pid` has ended (it stays a zombie: Python reaps it).
fn ended(pid: i32) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: a plain system call on our own child.
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: si_pid is set by waitid when a child has changed state.
    rc != 0 || unsafe { info.si_pid() } != 0
}

#[pymethods]
impl PyEngine {
    /// Makes main memory shared memory in place (same address and bytes) and
    /// returns its memory file's descriptor (close-on-exec; the engine owns it).
    fn share_memory(&self) -> PyResult<i32> {
        self.m
            .memory()
            .share()
            .map_err(|e| PyOSError::new_err(format!("cannot share main memory: {e}")))
    }

    /// The same for logical SPE `spe`'s local store.
    fn share_local_store(&self, py: Python<'_>, spe: u32) -> PyResult<i32> {
        let ls = self
            .m
            .local_store(spe)
            .map_err(|e| crate::errors::to_py(py, e))?;
        ls.share().map_err(|e| {
            PyOSError::new_err(format!("cannot share the local store of SPE {spe}: {e}"))
        })
    }

    /// Gives the turn to the C program's process `pid` (which shares `block`) and
    /// waits until it gives it back: `(0, "")` then. `(1, "")` if the process ended
    /// meanwhile (not reaped), `(2, why)` if the host-time limit (`set_wall_limit`)
    /// passed; Ctrl-C raises `KeyboardInterrupt` (Python's signal handlers run).
    /// `give=False` only waits (the turn is the process's already).
    #[pyo3(signature = (block, pid, give=true))]
    fn resume_child(
        &self,
        py: Python<'_>,
        block: &ControlBlock,
        pid: i32,
        give: bool,
    ) -> PyResult<(u8, String)> {
        let turn = block.turn();
        // SAFETY: no preconditions.
        let cpu = unsafe { libc::sched_getcpu() } as u32;
        if give {
            block.word(PARENT_CPU).store(cpu, Ordering::Relaxed);
            turn.store(CHILD, Ordering::Release);
            futex(turn, libc::FUTEX_WAKE, 1, None);
        }
        let start = Instant::now();
        let mut spins = 0u32;
        // spinning on the CPU the process last ran on would only delay it
        let spin = block.word(CHILD_CPU).load(Ordering::Relaxed) != cpu;
        while spin && turn.load(Ordering::Acquire) != PARENT {
            std::hint::spin_loop();
            spins += 1;
            if spins.is_multiple_of(64) && start.elapsed() > SPIN {
                break;
            }
        }
        while turn.load(Ordering::Acquire) != PARENT {
            py.detach(|| futex(turn, libc::FUTEX_WAIT, CHILD, Some(POLL)));
            if turn.load(Ordering::Acquire) == PARENT {
                break;
            }
            py.check_signals()?;
            if ended(pid) {
                // its last words may have come with the end
                let code = if turn.load(Ordering::Acquire) == PARENT {
                    0
                } else {
                    1
                };
                return Ok((code, String::new()));
            }
            if let Err(why) = self.watch.check_deadline() {
                return Ok((2, why));
            }
        }
        Ok((0, String::new()))
    }
}
