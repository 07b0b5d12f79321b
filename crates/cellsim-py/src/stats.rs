//! What a run did: counters (`Stats`), threads and DMA latencies.

use crate::errors::to_py;
use crate::machine::PyEngine;
use cellsim_engine::machine::ThreadState;
use cellsim_engine::Stats;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `(id, spe, physical, state, exit_code, end_cycle)` of one thread.
type ThreadRow = (
    usize,
    Option<u32>,
    Option<u8>,
    &'static str,
    Option<u32>,
    Option<u64>,
);

#[pymethods]
impl PyEngine {
    /// Counters of the run so far.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = Stats::of(&self.m);
        let d = PyDict::new(py);
        d.set_item("cycles", s.cycles)?;
        d.set_item("ns", s.ns)?;
        d.set_item("events", s.counters.events)?;
        d.set_item("dma_commands", s.counters.dma_commands)?;
        d.set_item("get_bytes", s.counters.get_bytes)?;
        d.set_item("put_bytes", s.counters.put_bytes)?;
        d.set_item("bus_requests", s.counters.bus_requests)?;
        d.set_item("bus_completed", s.counters.bus_completed)?;
        d.set_item("transfers", s.transfers)?;
        d.set_item("transfer_bytes", s.transfer_bytes)?;
        d.set_item("ramp_sent", s.ramp_sent)?;
        d.set_item("ramp_received", s.ramp_received)?;
        d.set_item("segment_busy", s.segment_busy)?;
        if let (Some(bytes), Some(busy)) = (s.bif_bytes, s.bif_busy_cycles) {
            d.set_item("bif_bytes", bytes)?;
            d.set_item("bif_busy_cycles", busy)?;
        }
        d.set_item("mic_reads", s.mic_reads)?;
        d.set_item("mic_writes", s.mic_writes)?;
        d.set_item("bank_read_bytes", s.bank_read_bytes)?;
        d.set_item("bank_write_bytes", s.bank_write_bytes)?;
        d.set_item("arbiter_rounds", s.arbiter_rounds)?;
        d.set_item("arbiter_attempts", s.arbiter_attempts)?;
        Ok(d)
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

    /// What the fast-forward did: (jumps, cycles, bus transfers) jumped over.
    fn fast_forward_stats(&self) -> (u64, u64, u64) {
        let s = self.m.fast_forward_stats();
        (s.jumps, s.cycles, s.transfers)
    }
}
