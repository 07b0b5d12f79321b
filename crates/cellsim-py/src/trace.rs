//! Traces (records taken out in chunks) and the invariant checks.

use crate::errors::to_py;
use crate::machine::PyEngine;
use pyo3::prelude::*;

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
    (
        kind,
        id,
        lane,
        r.name.clone(),
        r.start,
        r.end,
        r.args.clone(),
    )
}

#[pymethods]
impl PyEngine {
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
        self.m.verify().map_err(|e| to_py(py, e))
    }
}
