//! The one closed description of every program this crate runs: what the
//! binding (and any other front end) deserialises, once, from a map such as
//! `{"kind": "dma_bench", "put": false, "ea": 65536, "size": 128, ...}`.
//!
//! Each variant's fields are the program's parameters with their own types
//! (addresses u64, sizes u32, modes enums); serde rejects an unknown kind, a
//! missing or unknown field and a wrong type, and [`Program::check`] the
//! values a program cannot run with. [`spawn_after`] starts the program.

use crate::bandwidth::{self, Region, Traffic};
use crate::kernels::{self, DmaBench, KBufferedLoop, Stream};
use crate::messaging::{self, HvTraffic, OsNoise};
use cellsim_engine::error::SimError;
use cellsim_engine::machine::{Machine, ThreadId};
use cellsim_engine::time::Cycle;
use serde::Deserialize;

/// A program and its parameters, tagged by `kind` (read from the flat map
/// by [`Program::from_value`], which nests the parameters under `params`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", content = "params", rename_all = "snake_case")]
pub enum Program {
    /// Kistler et al.'s basic DMA benchmark ([`kernels::dma_bench`]).
    DmaBench(DmaBench),
    /// Back-to-back gets and puts ([`kernels::stream`]).
    Stream(Stream),
    /// Chen et al.'s blocked loop with `k` buffers ([`kernels::k_buffered_loop`]).
    KBufferedLoop(KBufferedLoop),
    /// Jiménez-González et al.'s bandwidth loop ([`bandwidth::region`]).
    Region(Region),
    /// Kistler et al.'s collective pattern ([`bandwidth::traffic`]).
    Traffic(Traffic),
    /// A ring task of Keller and Varbanescu's library ([`messaging::forward_task`]).
    ForwardTask(Task),
    /// A task of a general pattern ([`messaging::exchange_task`]).
    ExchangeTask(Task),
    /// The PS3 hypervisor's SPE ([`messaging::hv_traffic`]).
    HvTraffic(HvTraffic),
    /// The operating system's reads from the PPE ([`messaging::os_noise`]);
    /// a PPE thread, so the SPE it is started on is ignored.
    OsNoise(OsNoise),
}

/// Parameters of a messaging task: libspe's `argp` and `envp`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// The control blocks.
    pub argp: u64,
    /// The task id, or [`messaging::PINNED`].
    pub envp: u64,
}

impl Program {
    /// Deserialises a program from any serde value (a JSON object, a Python
    /// dict through the binding) and checks it; the error names the value
    /// and the rule it breaks.
    pub fn from_value(value: serde_json::Value) -> Result<Program, SimError> {
        // Adjacently tagged, serde reads the kind first and then the fields
        // straight from the map, so the path names the field whose value is
        // wrong (`params.put: invalid type ...`); internally tagged, it would
        // buffer them and lose it.
        let nested = match &value {
            serde_json::Value::Object(map) => {
                let mut params = map.clone();
                let Some(kind) = params.remove("kind") else {
                    return Err(SimError::Usage(format!(
                        "bad program {value}: missing field `kind`"
                    )));
                };
                serde_json::json!({"kind": kind, "params": params})
            }
            other => other.clone(),
        };
        let p: Program = serde_path_to_error::deserialize(&nested).map_err(|e| {
            let path = e.path().to_string();
            let field = path
                .strip_prefix("params")
                .unwrap_or(&path)
                .trim_start_matches('.');
            let at = if field.is_empty() {
                String::new()
            } else {
                format!("{field}: ")
            };
            SimError::Usage(format!("bad program {value}: {at}{}", e.inner()))
        })?;
        p.check()
            .map_err(|e| SimError::Usage(format!("bad program {value}: {e}")))?;
        Ok(p)
    }

    /// The values a program cannot run with (what types alone do not say).
    pub fn check(&self) -> Result<(), String> {
        match self {
            Program::KBufferedLoop(p) => p.check(),
            Program::Region(p) => p.check(),
            Program::Traffic(p) => p.check(),
            Program::HvTraffic(p) => p.check(),
            Program::OsNoise(p) => p.check(),
            Program::DmaBench(_)
            | Program::Stream(_)
            | Program::ForwardTask(_)
            | Program::ExchangeTask(_) => Ok(()),
        }
    }
}

/// Starts `program` on logical SPE `spe`, `delay` cycles from now (checking
/// it first); returns its thread id.
pub fn spawn_after(
    m: &mut Machine,
    spe: u32,
    program: Program,
    delay: Cycle,
) -> Result<ThreadId, SimError> {
    program.check().map_err(SimError::Usage)?;
    match program {
        Program::DmaBench(p) => {
            m.spawn_native_after(spe, 0, 0, delay, move |spu| kernels::dma_bench(spu, p))
        }
        Program::Stream(p) => {
            m.spawn_native_after(spe, 0, 0, delay, move |spu| kernels::stream(spu, p))
        }
        Program::KBufferedLoop(p) => m.spawn_native_after(spe, 0, 0, delay, move |spu| {
            kernels::k_buffered_loop(spu, p)
        }),
        Program::Region(p) => {
            m.spawn_native_after(spe, 0, 0, delay, move |spu| bandwidth::region(spu, p))
        }
        Program::Traffic(p) => {
            m.spawn_native_after(spe, 0, 0, delay, move |spu| bandwidth::traffic(spu, p))
        }
        Program::ForwardTask(Task { argp, envp }) => {
            m.spawn_native_after(spe, argp, envp, delay, move |spu| {
                messaging::forward_task(spu, argp, envp)
            })
        }
        Program::ExchangeTask(Task { argp, envp }) => {
            m.spawn_native_after(spe, argp, envp, delay, move |spu| {
                messaging::exchange_task(spu, argp, envp)
            })
        }
        Program::HvTraffic(p) => {
            m.spawn_native_after(spe, 0, 0, delay, move |spu| messaging::hv_traffic(spu, p))
        }
        Program::OsNoise(p) => Ok(m.spawn_ppe_native(move |ppe| messaging::os_noise(ppe, p))),
    }
}

/// The kinds of [`Program`], as `kind` names them.
pub const KINDS: &[&str] = &[
    "dma_bench",
    "stream",
    "k_buffered_loop",
    "region",
    "traffic",
    "forward_task",
    "exchange_task",
    "hv_traffic",
    "os_noise",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: serde_json::Value) -> String {
        Program::from_value(v).unwrap_err().to_string()
    }

    #[test]
    fn every_kind_deserialises() {
        for v in [
            json!({"kind": "dma_bench", "put": true, "ea": 1u64 << 40, "size": 128, "batch": 1, "count": 4}),
            json!({"kind": "stream", "get_ea": 0, "put_ea": 128, "size": 128, "pairs": 2}),
            json!({"kind": "k_buffered_loop", "n": 10, "bf": 2, "k": 2, "c_inner": 1, "c_outer": 2.5,
                   "ins": [[0, 8]], "outs": [[4096, 4]]}),
            json!({"kind": "region", "op": "copy", "span": 16384, "total": 16384, "size": 128}),
            json!({"kind": "traffic", "eas": [0, 128], "random": true, "size": 128, "count": 4}),
            json!({"kind": "forward_task", "argp": 0, "envp": 1}),
            json!({"kind": "exchange_task", "argp": 0, "envp": 1}),
            json!({"kind": "hv_traffic", "done_ea": 0, "tasks": 2, "scratch_ea": 0, "size": 32, "interval": 5}),
            json!({"kind": "os_noise", "done_ea": 0, "tasks": 2, "spes": [0, 1], "interval": 5}),
        ] {
            let kind = v["kind"].as_str().unwrap().to_string();
            Program::from_value(v).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert!(KINDS.contains(&kind.as_str()), "{kind} missing from KINDS");
        }
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let e = err(
            json!({"kind": "dma_bench", "put": "yes", "ea": 0, "size": 128, "batch": 1, "count": 4}),
        );
        assert!(
            e.contains("put: invalid type: string \"yes\", expected a boolean"),
            "{e}"
        );
    }

    #[test]
    fn bad_programs_name_the_value_and_the_rule() {
        for (v, want) in [
            (json!({"kind": "nope"}), "unknown variant `nope`"),
            (json!({"put": true}), "missing field `kind`"),
            (
                json!({"kind": "stream", "get_ea": 0, "put_ea": 0, "size": 128}),
                "missing field `pairs`",
            ),
            (
                json!({"kind": "stream", "get_ea": 0, "put_ea": 0, "size": 128, "pairs": 1, "x": 1}),
                "unknown field `x`",
            ),
            (
                json!({"kind": "stream", "get_ea": -1, "put_ea": 0, "size": 128, "pairs": 1}),
                "get_ea: invalid value: integer `-1`, expected u64",
            ),
            (
                json!({"kind": "region", "op": "both", "span": 1, "total": 1, "size": 128}),
                "unknown variant `both`, expected one of `get`, `put`, `copy`",
            ),
            (
                json!({"kind": "region", "op": "get", "span": 1, "total": 1, "size": 100}),
                "size 100 must divide 16384 and be >= 128",
            ),
            (
                json!({"kind": "traffic", "eas": [], "size": 128, "count": 1}),
                "1 to 8 targets, not 0",
            ),
        ] {
            let e = err(v.clone());
            assert!(e.contains(want), "{v}: {e}");
            assert!(e.contains(&v.to_string()), "{v}: {e}");
        }
    }
}
