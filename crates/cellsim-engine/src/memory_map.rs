//! The effective-address space as programs see it.
//!
//! Main memory starts at EA 0. Every SPE's local store is mapped into the
//! effective-address space, as on the real chip (architecture notes,
//! "Everything of an SPE is memory-mapped"), at [`LS_MAP_BASE`] + logical SPE
//! number x [`LS_MAP_STRIDE`]; its problem-state area (mailboxes, signal
//! notification registers) follows at [`PROBLEM_STATE_OFFSET`]. libspe2's
//! `spe_ls_area_get` returns the first address, `spe_ps_area_get` the second.

/// Where the first SPE's local store is mapped.
pub const LS_MAP_BASE: u64 = 0x10_0000_0000;
/// Distance between two SPEs' mappings.
pub const LS_MAP_STRIDE: u64 = 0x10_0000;
/// Offset of the problem-state area inside an SPE's mapping.
pub const PROBLEM_STATE_OFFSET: u64 = 0x4_0000;
/// Size of the problem-state area.
pub const PROBLEM_STATE_BYTES: u64 = 0x2_0000;

/// Problem-state register offsets (CBEA; as in libspe2's `cbea_map.h`).
pub mod ps {
    /// SPU_Out_Mbox (read by the PPE or another SPE).
    pub const SPU_OUT_MBOX: u32 = 0x4004;
    /// SPU_In_Mbox (written by the PPE or another SPE).
    pub const SPU_IN_MBOX: u32 = 0x400C;
    /// SPU_Mbox_Stat.
    pub const SPU_MBOX_STAT: u32 = 0x4014;
    /// SPU_Sig_Notify_1.
    pub const SIG_NOTIFY_1: u32 = 0x1400C;
    /// SPU_Sig_Notify_2.
    pub const SIG_NOTIFY_2: u32 = 0x1C00C;
    /// The outbound-interrupt mailbox (read by the PPE's interrupt handler;
    /// this model reads it like SPU_Out_Mbox, at its own offset).
    pub const SPU_OUT_INTR_MBOX: u32 = 0x4008;
}

/// What an effective address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Main memory, at this byte offset.
    Memory(u64),
    /// A local store, by logical SPE number and offset.
    Ls {
        /// Logical SPE number.
        spe: u32,
        /// Byte offset in the local store.
        offset: u32,
    },
    /// A problem-state register of a logical SPE.
    ProblemState {
        /// Logical SPE number.
        spe: u32,
        /// Register offset.
        offset: u32,
    },
}

/// The machine's effective-address map.
#[derive(Debug, Clone, Copy)]
pub struct MemoryMap {
    /// Main memory size in bytes.
    pub memory_bytes: u64,
    /// Logical SPEs present.
    pub spes: u32,
    /// Local-store size in bytes.
    pub ls_bytes: u32,
}

impl MemoryMap {
    /// Resolves `[ea, ea + size)`; `None` when it is unmapped or straddles two areas.
    pub fn resolve(&self, ea: u64, size: u64) -> Option<Target> {
        let end = ea.checked_add(size.max(1))?;
        if end <= self.memory_bytes {
            return Some(Target::Memory(ea));
        }
        if ea < LS_MAP_BASE {
            return None;
        }
        let rel = ea - LS_MAP_BASE;
        let spe = rel / LS_MAP_STRIDE;
        if spe >= self.spes as u64 {
            return None;
        }
        let off = rel % LS_MAP_STRIDE;
        let end_off = off + size.max(1);
        if end_off <= self.ls_bytes as u64 {
            return Some(Target::Ls {
                spe: spe as u32,
                offset: off as u32,
            });
        }
        if off >= PROBLEM_STATE_OFFSET && end_off <= PROBLEM_STATE_OFFSET + PROBLEM_STATE_BYTES {
            return Some(Target::ProblemState {
                spe: spe as u32,
                offset: (off - PROBLEM_STATE_OFFSET) as u32,
            });
        }
        None
    }

    /// The effective address of logical SPE `spe`'s local store.
    pub fn ls_ea(spe: u32) -> u64 {
        LS_MAP_BASE + spe as u64 * LS_MAP_STRIDE
    }

    /// The effective address of logical SPE `spe`'s problem-state area.
    pub fn ps_ea(spe: u32) -> u64 {
        Self::ls_ea(spe) + PROBLEM_STATE_OFFSET
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_memory_ls_and_problem_state() {
        let m = MemoryMap {
            memory_bytes: 1 << 20,
            spes: 8,
            ls_bytes: 256 * 1024,
        };
        assert_eq!(m.resolve(0x100, 16), Some(Target::Memory(0x100)));
        assert_eq!(
            m.resolve((1 << 20) - 8, 16),
            None,
            "straddles the end of memory"
        );
        assert_eq!(
            m.resolve(MemoryMap::ls_ea(3) + 0x80, 128),
            Some(Target::Ls {
                spe: 3,
                offset: 0x80
            })
        );
        assert_eq!(m.resolve(MemoryMap::ls_ea(8), 16), None, "no ninth SPE");
        assert_eq!(
            m.resolve(MemoryMap::ps_ea(1) + ps::SPU_IN_MBOX as u64, 4),
            Some(Target::ProblemState {
                spe: 1,
                offset: ps::SPU_IN_MBOX
            })
        );
        assert_eq!(
            m.resolve(MemoryMap::ls_ea(2) + 256 * 1024 - 16, 32),
            None,
            "runs off the LS"
        );
    }
}
