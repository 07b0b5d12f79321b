//! Integration and property tests of the cellsim engine: one binary, one
//! module per behaviour. Run with `cargo test -p cellsim-engine --test it`.
//!
//! - `timing`: datasheet-style latency and bandwidth probes;
//! - `errors`: bad inputs and the errors they raise;
//! - `dma_check`: the DMA hazard checker for native programs;
//! - `events`: the SPU event facility, each event alone, and libspe2's event wait;
//! - `deadlock`, `runaway`: runs that cannot end;
//! - `hostile`: lists rewritten after issue, time overflow, polling forever, fuzzed commands;
//! - `determinism`: same seed, same run;
//! - `fast_forward`: the steady-state fast-forward against the reference path;
//! - `ordering`: barrier and fence semantics seen in the data;
//! - `invariants`: property tests over random DMA mixes;
//! - `ppe_cache`: the PPE's caches and SPU local-store loops (issue 7);
//! - `sync`: atomics, mailboxes, signals, DMA lists, proxy DMAs, PPE threads;
//! - `two_chips`: the blade's 16 SPEs, the BIF, NUMA memory and the MFC's TLB.
//!
//! `mix` and `util` are shared helpers.

mod deadlock;
mod determinism;
mod dma_check;
mod errors;
mod events;
mod fast_forward;
mod hostile;
mod invariants;
mod ls_port;
mod mix;
mod ordering;
mod poll;
mod ppe_cache;
mod runaway;
mod sync;
mod timing;
mod two_chips;
mod util;
