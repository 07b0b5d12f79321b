//! The SPU's side of `Engine`: MFC commands, channels (mailboxes, signals,
//! tag groups, the decrementer), compute time and local-store loops. Each call
//! submits a request for the calling program and runs to the next switch.

use crate::errors::to_py;
use crate::machine::{PyEngine, Resumed};
use cellsim_engine::program::{Channel, LoopOp, LsAccessLoop};
use cellsim_engine::{MfcCommand, MfcErrorKind, Opcode, Request, SimError, TagUpdate};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `load`, `store`, `copy` to a loop operation.
pub(crate) fn loop_op(op: &str) -> PyResult<LoopOp> {
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
pub(crate) fn channel(number: u32) -> PyResult<Channel> {
    Channel::from_number(number).ok_or_else(|| {
        PyValueError::new_err(format!("channel {number} is not one this model implements"))
    })
}

/// The MFC command `code`, or the error naming who issued it (`spe`: the
/// issuing SPU's logical SPE; `None` for the PPE's proxy commands).
pub(crate) fn opcode(py: Python<'_>, now: u64, code: u32, spe: Option<u32>) -> PyResult<Opcode> {
    Opcode::from_code(code).ok_or_else(|| bad_opcode(py, now, code, spe))
}

fn bad_opcode(py: Python<'_>, now: u64, code: u32, spe: Option<u32>) -> PyErr {
    let e = cellsim_engine::MfcError {
        kind: MfcErrorKind::Opcode,
        spe,
        cycle: now,
        command: format!("opcode 0x{code:x}"),
        message: format!("opcode 0x{code:x} is not an MFC command this model implements"),
    };
    to_py(py, SimError::Mfc(e))
}

pub(crate) fn tag_update(mode: u32) -> PyResult<TagUpdate> {
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
    ) -> PyResult<Resumed> {
        let op = match Opcode::from_code(opcode) {
            Some(op) => op,
            // the error path alone looks up the issuing thread's SPE
            None => {
                let spe = self.m.threads().get(tid).and_then(|t| t.spe);
                return Err(bad_opcode(py, self.m.now(), opcode, spe));
            }
        };
        // `list`: the local-store address of a list command's list (0 otherwise)
        let cmd = MfcCommand::single(op, lsa, ea, size, tag);
        self.step(py, tid, Request::Mfc(MfcCommand { list, ..cmd }))
    }

    /// A blocking (or not) read of SPU channel `number`.
    fn read_channel(&mut self, py: Python<'_>, tid: usize, number: u32) -> PyResult<Resumed> {
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
    ) -> PyResult<Resumed> {
        let c = channel(number)?;
        self.step(py, tid, Request::WriteChannel(c, value))
    }

    /// The count of SPU channel `number`.
    fn channel_count(&mut self, py: Python<'_>, tid: usize, number: u32) -> PyResult<Resumed> {
        let c = channel(number)?;
        self.step(py, tid, Request::ChannelCount(c))
    }

    /// Spends `cycles` cycles computing, `ls_accesses` of them using the
    /// local-store port (which DMA takes first).
    #[pyo3(signature = (tid, cycles, ls_accesses=0))]
    fn compute(
        &mut self,
        py: Python<'_>,
        tid: usize,
        cycles: u64,
        ls_accesses: u64,
    ) -> PyResult<Resumed> {
        let req = if ls_accesses == 0 {
            Request::Compute(cycles)
        } else {
            Request::ComputeLs {
                cycles,
                accesses: ls_accesses,
            }
        };
        self.step(py, tid, req)
    }

    /// `mfc_write_tag_mask`.
    fn write_tag_mask(&mut self, py: Python<'_>, tid: usize, mask: u32) -> PyResult<Resumed> {
        self.step(py, tid, Request::WriteTagMask(mask))
    }

    /// `mfc_read_tag_mask`.
    fn read_tag_mask(&mut self, py: Python<'_>, tid: usize) -> PyResult<Resumed> {
        self.step(py, tid, Request::ReadTagMask)
    }

    /// `mfc_read_tag_status_*` with mode 0 (immediate), 1 (any), 2 (all).
    fn read_tag_status(&mut self, py: Python<'_>, tid: usize, mode: u32) -> PyResult<Resumed> {
        let mode = tag_update(mode)?;
        self.step(py, tid, Request::ReadTagStatus(mode))
    }

    /// `spu_read_decrementer`.
    fn read_decrementer(&mut self, py: Python<'_>, tid: usize) -> PyResult<Resumed> {
        self.step(py, tid, Request::ReadDecrementer)
    }

    /// `spu_write_decrementer`.
    fn write_decrementer(&mut self, py: Python<'_>, tid: usize, value: u32) -> PyResult<Resumed> {
        self.step(py, tid, Request::WriteDecrementer(value))
    }

    /// The program ends with `code`.
    fn exit(&mut self, py: Python<'_>, tid: usize, code: u32) -> PyResult<Resumed> {
        self.step(py, tid, Request::Exit(code))
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
    ) -> PyResult<Resumed> {
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
}
