//! MFC commands: opcodes, their SDK names, and the architecture's rules for
//! sizes and alignment.
//!
//! | SDK call | opcode | [`Opcode`] |
//! |---|---|---|
//! | `mfc_put` / `mfc_putb` / `mfc_putf` | 0x20 / 0x21 / 0x22 | `Put` / `PutB` / `PutF` |
//! | `mfc_putl` / `mfc_putlb` / `mfc_putlf` | 0x24 / 0x25 / 0x26 | `PutL` / `PutLB` / `PutLF` |
//! | `mfc_get` / `mfc_getb` / `mfc_getf` | 0x40 / 0x41 / 0x42 | `Get` / `GetB` / `GetF` |
//! | `mfc_getl` / `mfc_getlb` / `mfc_getlf` | 0x44 / 0x45 / 0x46 | `GetL` / `GetLB` / `GetLF` |
//! | `mfc_sndsig` / `mfc_sndsigb` / `mfc_sndsigf` | 0xA0 / 0xA1 / 0xA2 | `SndSig` / `SndSigB` / `SndSigF` |
//! | `mfc_putlluc` / `mfc_putqlluc` | 0xB0 / 0xB8 | `PutLLUC` / `PutQLLUC` |
//! | `mfc_putllc` | 0xB4 | `PutLLC` |
//! | `mfc_getllar` | 0xD0 | `GetLLAR` |
//! | `mfc_barrier` / `mfc_eieio` / `mfc_sync` | 0xC0 / 0xC8 / 0xCC | `Barrier` / `Eieio` / `Sync` |

use crate::error::MfcErrorKind;
use std::fmt;

/// Largest single transfer (and DMA-list element), bytes.
pub const MAX_TRANSFER: u32 = 16 * 1024;
/// Most elements in one DMA list.
pub const MAX_LIST_ELEMENTS: u32 = 2048;
/// A lock line (atomic commands move exactly one).
pub const LOCK_LINE: u32 = 128;

/// The commands the MFC model implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the table in the module docs names each one
#[derive(Default)]
pub enum Opcode {
    Put,
    PutB,
    PutF,
    #[default]
    Get,
    GetB,
    GetF,
    PutL,
    PutLB,
    PutLF,
    GetL,
    GetLB,
    GetLF,
    SndSig,
    SndSigB,
    SndSigF,
    GetLLAR,
    PutLLC,
    PutLLUC,
    PutQLLUC,
    Barrier,
    Eieio,
    Sync,
}

/// Ordering attribute of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// May run out of order.
    None,
    /// Waits for earlier commands of its tag group.
    Fence,
    /// Fence, and later commands of its tag group wait for the earlier ones too.
    Barrier,
}

/// The atomic unit's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Atomic {
    /// Get lock line and reserve.
    GetLLAR,
    /// Put lock line if the reservation still holds.
    PutLLC,
    /// Put lock line unconditionally.
    PutLLUC,
}

const TABLE: &[(Opcode, u32, &str)] = &[
    (Opcode::Put, 0x20, "mfc_put"),
    (Opcode::PutB, 0x21, "mfc_putb"),
    (Opcode::PutF, 0x22, "mfc_putf"),
    (Opcode::PutL, 0x24, "mfc_putl"),
    (Opcode::PutLB, 0x25, "mfc_putlb"),
    (Opcode::PutLF, 0x26, "mfc_putlf"),
    (Opcode::Get, 0x40, "mfc_get"),
    (Opcode::GetB, 0x41, "mfc_getb"),
    (Opcode::GetF, 0x42, "mfc_getf"),
    (Opcode::GetL, 0x44, "mfc_getl"),
    (Opcode::GetLB, 0x45, "mfc_getlb"),
    (Opcode::GetLF, 0x46, "mfc_getlf"),
    (Opcode::SndSig, 0xA0, "mfc_sndsig"),
    (Opcode::SndSigB, 0xA1, "mfc_sndsigb"),
    (Opcode::SndSigF, 0xA2, "mfc_sndsigf"),
    (Opcode::PutLLUC, 0xB0, "mfc_putlluc"),
    (Opcode::PutLLC, 0xB4, "mfc_putllc"),
    (Opcode::PutQLLUC, 0xB8, "mfc_putqlluc"),
    (Opcode::Barrier, 0xC0, "mfc_barrier"),
    (Opcode::Eieio, 0xC8, "mfc_eieio"),
    (Opcode::Sync, 0xCC, "mfc_sync"),
    (Opcode::GetLLAR, 0xD0, "mfc_getllar"),
];

impl Opcode {
    /// Decodes an MFC opcode byte.
    pub fn from_code(code: u32) -> Option<Opcode> {
        TABLE
            .iter()
            .find(|(_, c, _)| *c == code)
            .map(|(o, _, _)| *o)
    }

    fn entry(self) -> &'static (Opcode, u32, &'static str) {
        TABLE
            .iter()
            .find(|(o, _, _)| *o == self)
            .expect("every opcode is in the table")
    }

    /// The opcode byte.
    pub fn code(self) -> u32 {
        self.entry().1
    }

    /// The `spu_mfcio.h` function that issues this command.
    pub fn sdk_name(self) -> &'static str {
        self.entry().2
    }

    /// Moves data into the local store (gets, list gets, getllar).
    #[inline]
    pub fn is_get(self) -> bool {
        use Opcode::*;
        matches!(self, Get | GetB | GetF | GetL | GetLB | GetLF | GetLLAR)
    }

    /// Moves data out of the local store (puts, list puts, signals, lock-line puts).
    #[inline]
    pub fn is_put(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            Put | PutB
                | PutF
                | PutL
                | PutLB
                | PutLF
                | SndSig
                | SndSigB
                | SndSigF
                | PutLLC
                | PutLLUC
                | PutQLLUC
        )
    }

    /// A DMA-list command.
    #[inline]
    pub fn is_list(self) -> bool {
        use Opcode::*;
        matches!(self, PutL | PutLB | PutLF | GetL | GetLB | GetLF)
    }

    /// A signal-notification command.
    #[inline]
    pub fn is_sndsig(self) -> bool {
        matches!(self, Opcode::SndSig | Opcode::SndSigB | Opcode::SndSigF)
    }

    /// The atomic unit's command, if this is one.
    #[inline]
    pub fn atomic(self) -> Option<Atomic> {
        match self {
            Opcode::GetLLAR => Some(Atomic::GetLLAR),
            Opcode::PutLLC => Some(Atomic::PutLLC),
            Opcode::PutLLUC | Opcode::PutQLLUC => Some(Atomic::PutLLUC),
            _ => None,
        }
    }

    /// `mfc_barrier`, `mfc_sync` and `mfc_eieio`: no data; every earlier
    /// command completes before any later one starts.
    #[inline]
    pub fn is_sync(self) -> bool {
        matches!(self, Opcode::Barrier | Opcode::Eieio | Opcode::Sync)
    }

    /// Barrier/fence attribute.
    #[inline]
    pub fn ordering(self) -> Ordering {
        use Opcode::*;
        match self {
            PutB | GetB | PutLB | GetLB | SndSigB => Ordering::Barrier,
            PutF | GetF | PutLF | GetLF | SndSigF => Ordering::Fence,
            _ => Ordering::None,
        }
    }
}

/// A command as a program issues it (the channel writes plus the opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MfcCommand {
    /// What to do.
    pub op: Opcode,
    /// Local-store address.
    pub lsa: u32,
    /// Effective address (for lists: only the high word counts).
    pub ea: u64,
    /// Bytes (for lists: the list's size, 8 bytes per element).
    pub size: u32,
    /// Tag group.
    pub tag: u32,
    /// For list commands: local-store address of the list.
    pub list: u32,
}

impl fmt::Display for MfcCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.op.sdk_name();
        if self.op.is_sync() {
            return write!(f, "{name}(tag={})", self.tag);
        }
        if self.op.atomic().is_some() {
            return write!(f, "{name}(ls=0x{:x}, ea=0x{:x})", self.lsa, self.ea);
        }
        if self.op.is_list() {
            return write!(
                f,
                "{name}(ls=0x{:x}, ea=0x{:x}, list=0x{:x}, size={}, tag={})",
                self.lsa, self.ea, self.list, self.size, self.tag
            );
        }
        write!(
            f,
            "{name}(ls=0x{:x}, ea=0x{:x}, size={}, tag={})",
            self.lsa, self.ea, self.size, self.tag
        )
    }
}

impl MfcCommand {
    /// A command that is not a list command.
    pub fn single(op: Opcode, lsa: u32, ea: u64, size: u32, tag: u32) -> MfcCommand {
        MfcCommand {
            op,
            lsa,
            ea,
            size,
            tag,
            list: 0,
        }
    }

    /// Checks the architecture's rules that do not depend on the address map
    /// (a list's elements are checked by [`super::list`]).
    pub fn check(&self, ls_bytes: u32) -> Result<(), (MfcErrorKind, String)> {
        if self.tag > 31 {
            return Err((
                MfcErrorKind::Tag,
                format!("tag {} is above 31 (tag groups are 0-31)", self.tag),
            ));
        }
        if self.op.is_sync() {
            return Ok(());
        }
        if self.op.atomic().is_some() {
            if !self.lsa.is_multiple_of(LOCK_LINE) || !self.ea.is_multiple_of(LOCK_LINE as u64) {
                return Err((
                    MfcErrorKind::Atomic,
                    format!(
                        "atomic commands move one 128-byte lock line: ls 0x{:x} and ea 0x{:x} must be 128-byte aligned",
                        self.lsa, self.ea
                    ),
                ));
            }
            return check_transfer(self.lsa, self.ea, LOCK_LINE, ls_bytes);
        }
        if self.op.is_sndsig() && self.size != 4 {
            return Err((
                MfcErrorKind::Size,
                format!("a signal is 4 bytes, not {}", self.size),
            ));
        }
        if self.op.is_list() {
            let n = self.size / 8;
            if !self.size.is_multiple_of(8) || n == 0 || n > MAX_LIST_ELEMENTS {
                return Err((
                    MfcErrorKind::List,
                    format!(
                                                "list size {} must be 8 bytes per element, 1 to {MAX_LIST_ELEMENTS} elements ({} bytes at most)",
                        self.size,
                        8 * MAX_LIST_ELEMENTS
                    ),
                ));
            }
            if !self.list.is_multiple_of(8) || self.list as u64 + self.size as u64 > ls_bytes as u64
            {
                return Err((
                    MfcErrorKind::List,
                    format!(
                        "the list at ls 0x{:x} ({} bytes) must be 8-byte aligned and inside the local store",
                        self.list, self.size
                    ),
                ));
            }
            return Ok(());
        }
        check_transfer(self.lsa, self.ea, self.size, ls_bytes)
    }

    /// The number of bytes the atomic unit moves for an atomic command.
    pub fn transfer_size(&self) -> u32 {
        if self.op.atomic().is_some() {
            LOCK_LINE
        } else {
            self.size
        }
    }
}

/// Size, alignment and local-store range rules of one transfer (also used for
/// each DMA-list element).
pub fn check_transfer(
    lsa: u32,
    ea: u64,
    size: u32,
    ls_bytes: u32,
) -> Result<(), (MfcErrorKind, String)> {
    let small = matches!(size, 1 | 2 | 4 | 8);
    if !small && (!size.is_multiple_of(16) || size > MAX_TRANSFER) {
        return Err((
            MfcErrorKind::Size,
            format!("size {size} is not 1, 2, 4, 8 or a multiple of 16 up to {MAX_TRANSFER}"),
        ));
    }
    if small {
        let s = size as u64;
        if !(lsa as u64).is_multiple_of(s) || !ea.is_multiple_of(s) {
            return Err((
                MfcErrorKind::Alignment,
                format!(
                    "a {size}-byte transfer must be naturally aligned: ls 0x{lsa:x} and ea 0x{ea:x} must be multiples of {size}"
                ),
            ));
        }
        if lsa & 0xF != (ea & 0xF) as u32 {
            return Err((
                MfcErrorKind::Alignment,
                format!(
                    "ls 0x{lsa:x} and ea 0x{ea:x} must have the same low 4 bits for a transfer under 16 bytes"
                ),
            ));
        }
    } else if !lsa.is_multiple_of(16) || !ea.is_multiple_of(16) {
        return Err((
            MfcErrorKind::Alignment,
            format!(
                "ls 0x{lsa:x} and ea 0x{ea:x} must be 16-byte aligned for a {size}-byte transfer"
            ),
        ));
    }
    if lsa as u64 + size as u64 > ls_bytes as u64 {
        return Err((
            MfcErrorKind::LsRange,
            format!(
                "local-store range 0x{lsa:x}..0x{:x} runs past the end of the {} KB local store",
                lsa as u64 + size as u64,
                ls_bytes / 1024
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(lsa: u32, ea: u64, size: u32, tag: u32) -> MfcCommand {
        MfcCommand {
            list: 0,
            op: Opcode::Get,
            lsa,
            ea,
            size,
            tag,
        }
    }

    #[test]
    fn sizes() {
        for s in [0u32, 1, 2, 4, 8, 16, 32, 128, 16384] {
            assert!(cmd(0, 0, s, 0).check(262144).is_ok(), "size {s}");
        }
        for s in [3u32, 12, 24, 17, 16400] {
            assert_eq!(
                cmd(0, 0, s, 0).check(262144).unwrap_err().0,
                MfcErrorKind::Size,
                "size {s}"
            );
        }
    }

    #[test]
    fn alignment() {
        assert_eq!(
            cmd(4, 4, 8, 0).check(262144).unwrap_err().0,
            MfcErrorKind::Alignment
        );
        assert_eq!(
            cmd(8, 0x10, 8, 0).check(262144).unwrap_err().0,
            MfcErrorKind::Alignment,
            "low bits differ"
        );
        assert!(cmd(8, 0x1008, 8, 0).check(262144).is_ok());
        assert_eq!(
            cmd(16, 8, 32, 0).check(262144).unwrap_err().0,
            MfcErrorKind::Alignment
        );
    }

    #[test]
    fn tags_and_ls_range() {
        assert_eq!(
            cmd(0, 0, 16, 32).check(262144).unwrap_err().0,
            MfcErrorKind::Tag
        );
        assert_eq!(
            cmd(262144 - 16, 0, 32, 0).check(262144).unwrap_err().0,
            MfcErrorKind::LsRange
        );
    }

    #[test]
    fn opcodes_round_trip() {
        for code in [
            0x20, 0x21, 0x22, 0x24, 0x40, 0x41, 0x42, 0x46, 0xA0, 0xB0, 0xB4, 0xB8, 0xC0, 0xC8,
            0xCC, 0xD0,
        ] {
            assert_eq!(Opcode::from_code(code).unwrap().code(), code);
        }
        assert!(Opcode::from_code(0x99).is_none());
    }
}
