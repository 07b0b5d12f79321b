//! The PPE's side of `Engine`: its threads, loads and stores through the
//! caches, atomics (lwarx/stwcx), mailbox and signal registers of the SPEs,
//! and proxy DMA commands.

use crate::machine::{PyEngine, Resumed};
use crate::spu::{loop_op, tag_update};
use cellsim_engine::mailbox::Outbound;
use cellsim_engine::program::PpeLoop;
use cellsim_engine::{MfcCommand, Request};
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pymethods]
impl PyEngine {
    /// Starts a PPE thread driven from Python; returns its id.
    fn spawn_ppe(&mut self) -> usize {
        self.m.spawn_ppe_external()
    }

    /// Waits for thread `other` to finish; the reply is its exit value.
    fn join(&mut self, py: Python<'_>, tid: usize, other: usize) -> PyResult<Resumed> {
        self.step(py, tid, Request::Join(other))
    }

    /// libspe2 `spe_event_wait`: `masks` has the SPE_EVENT_* mask of
    /// logical SPE `s` at bits `4 * s`; the reply has the events that hold,
    /// the same way (0 when not waiting and none holds).
    fn ppe_event_wait(
        &mut self,
        py: Python<'_>,
        tid: usize,
        masks: u64,
        wait: bool,
    ) -> PyResult<Resumed> {
        self.step(py, tid, Request::PpeEventWait { masks, wait })
    }

    /// PPE load of `size` bytes at `ea`.
    fn ppe_load(&mut self, py: Python<'_>, tid: usize, ea: u64, size: u8) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
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
    fn ppe_lwarx(&mut self, py: Python<'_>, tid: usize, ea: u64, size: u8) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
        self.step(py, tid, Request::PpeWriteMbox { spe, value, wait })
    }

    /// PPE read of an SPE's SPU_Mbox_Stat.
    fn ppe_mbox_status(&mut self, py: Python<'_>, tid: usize, spe: u32) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
        let op = crate::spu::opcode(py, self.m.now(), opcode, None)?;
        self.step(
            py,
            tid,
            Request::ProxyMfc {
                spe,
                cmd: MfcCommand::single(op, lsa, ea, size, tag),
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
    ) -> PyResult<Resumed> {
        let mode = tag_update(mode)?;
        self.step(py, tid, Request::ProxyTagStatus { spe, mask, mode })
    }
}
