//! # cellsim-engine: the Cell Broadband Engine's communication system, cycle by cycle
//!
//! The chip: one PPE and eight SPEs, each SPE with a 256 KB local store and a
//! Memory Flow Controller (MFC) whose DMA engine moves data over the Element
//! Interconnect Bus (EIB) — four 16-byte rings, a data arbiter and a command
//! bus — to other local stores and, through the memory interface controller
//! (MIC), to main memory.
//!
//! ```text
//!  SPU program ──request──▶ MFC queue ──unroll──▶ BIU ──▶ command bus ──▶ data arbiter ──▶ ring ──▶ LS / MIC
//!      ▲                      │ tag groups                 (1 per bus     (MIC first,       (16 B per
//!      └──────reply───────────┘                             cycle)         round-robin)      bus cycle)
//! ```
//!
//! Module map:
//! - [`machine`]: the [`Machine`] that owns every part and runs the event loop;
//! - [`program`]: [`Request`]s programs make and the [`Spu`] handle for native programs;
//! - [`mfc`]: commands, the command queue with barrier/fence rules, tag groups;
//! - [`eib`]: rings, data arbiter, command bus;
//! - [`mic`]: the memory controller and DRAM;
//! - [`mailbox`], [`signal`], [`atomic`]: mailboxes, signal notification, lock-line reservations;
//! - [`topology`], [`memory_map`], [`storage`]: where things are and the real bytes;
//! - [`config`]: machine files; [`calendar`], [`time`], [`rng`]: the engine's clockwork;
//!
//! Programs (the papers' benchmark kernels, the ring messaging library) live
//! in the `cellsim-programs` crate and use only this crate's public API.
//! - [`trace`]: records for Chrome/Perfetto traces;
//! - [`error`]: what a run can end with.
//!
//! Time is counted in SPU clock cycles; the bus works on every second cycle.
//! Idle time costs nothing: the calendar jumps to the next due event.
//!
//! ```
//! use cellsim_engine::{Machine, MachineConfig};
//! let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 42);
//! let ea = m.alloc(128, 128).unwrap();
//! m.memory().write(ea as usize, &[7; 128]);
//! m.spawn_native(0, ea, 0, |spu| async move {
//!     let ls = spu.ls_alloc(128, 128).unwrap();
//!     spu.mfc_get(ls, spu.argp(), 128, 0).await;
//!     spu.mfc_write_tag_mask(1).await;
//!     spu.mfc_read_tag_status_all().await;
//!     let mut b = [0u8; 1];
//!     spu.ls_read(ls, &mut b);
//!     b[0] as u32
//! }).unwrap();
//! let s = m.run().unwrap();
//! assert_eq!(s.threads[0].state, cellsim_engine::ThreadState::Finished { code: 7, at: s.threads_end() });
//! ```

#![warn(missing_docs)]

pub mod atomic;
pub mod bif;
pub mod bus;
pub mod calendar;
pub mod config;
pub mod dma_check;
pub mod eib;
pub mod error;
pub mod ls_loop;
pub mod machine;
pub mod mailbox;
pub mod memory_map;
pub mod mfc;
pub mod mic;
pub mod numa;
pub(crate) mod part;
pub mod poll;
pub mod ppu;
pub mod program;
pub mod rng;
pub mod script;
pub mod signal;
pub mod stats;
pub(crate) mod steady;
pub mod storage;
pub mod time;
pub mod topology;
pub mod trace;

pub use config::MachineConfig;
pub use error::{Activity, ConfigError, MfcError, MfcErrorKind, SimError};
pub use machine::{DmaLatency, Machine, RunSummary, Step, ThreadId, ThreadInfo, ThreadState};
pub use mfc::command::{MfcCommand, Opcode};
pub use mfc::tags::TagUpdate;
pub use poll::PollRow;
pub use program::{Request, Spu};
pub use stats::Stats;
pub use time::Cycle;

impl RunSummary {
    /// The cycle the last thread finished.
    pub fn threads_end(&self) -> Cycle {
        self.threads
            .iter()
            .filter_map(|t| match t.state {
                ThreadState::Finished { at, .. } => Some(at),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
}
