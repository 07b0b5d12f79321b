//! Programs that run on the simulated Cell, written against
//! `cellsim-engine`'s public API only (the chip does not know them):
//!
//! - [`kernels`], [`bandwidth`]: native benchmark programs of the experiments
//!   (Kistler et al.'s DMA benchmarks, Jiménez-González et al.'s region and
//!   link streams), twins of `python/cellsim/kernels.py`;
//! - [`messaging`]: Keller and Varbanescu's SPE message-passing library and
//!   the programs built on it (the ring, PS3 hypervisor and OS noise);
//! - [`traffic`]: synthetic uniform load through the engine's injection port.
//!
//! [`program::Program`] describes them all, typed and closed: the binding
//! (`cellsim-py`) deserialises one from a Python dict and starts it with
//! [`program::spawn_after`].

pub mod bandwidth;
pub mod kernels;
pub mod messaging;
pub mod program;
pub mod traffic;

/// The default seed of the programs that draw random numbers (serde's
/// `default = "crate::one"`).
pub(crate) fn one() -> u64 {
    1
}
