//! MFC commands: opcodes, their SDK names, and the architecture's rules for
//! sizes and alignment.
//!
//! | SDK call | opcode | [`Opcode`] |
//! |---|---|---|
//! | `mfc_put` / `mfc_putb` / `mfc_putf` | 0x20 / 0x21 / 0x22 | `Put` / `PutB` / `PutF` |
//! | `mfc_get` / `mfc_getb` / `mfc_getf` | 0x40 / 0x41 / 0x42 | `Get` / `GetB` / `GetF` |
//! | `mfc_barrier` | 0xC0 | `Barrier` |

use crate::error::MfcErrorKind;
use std::fmt;

/// Largest single transfer (and DMA-list element), bytes.
pub const MAX_TRANSFER: u32 = 16 * 1024;

/// The commands the MFC model implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// `mfc_put`: local store to effective address.
    Put,
    /// `mfc_putb`: put with barrier.
    PutB,
    /// `mfc_putf`: put with fence.
    PutF,
    /// `mfc_get`: effective address to local store.
    Get,
    /// `mfc_getb`: get with barrier.
    GetB,
    /// `mfc_getf`: get with fence.
    GetF,
    /// `mfc_barrier`: orders all earlier commands before all later ones.
    Barrier,
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

impl Opcode {
    /// Decodes an MFC opcode byte.
    pub fn from_code(code: u32) -> Option<Opcode> {
        Some(match code {
            0x20 => Opcode::Put,
            0x21 => Opcode::PutB,
            0x22 => Opcode::PutF,
            0x40 => Opcode::Get,
            0x41 => Opcode::GetB,
            0x42 => Opcode::GetF,
            0xC0 => Opcode::Barrier,
            _ => return None,
        })
    }

    /// The opcode byte.
    pub fn code(self) -> u32 {
        match self {
            Opcode::Put => 0x20,
            Opcode::PutB => 0x21,
            Opcode::PutF => 0x22,
            Opcode::Get => 0x40,
            Opcode::GetB => 0x41,
            Opcode::GetF => 0x42,
            Opcode::Barrier => 0xC0,
        }
    }

    /// The `spu_mfcio.h` function that issues this command.
    pub fn sdk_name(self) -> &'static str {
        match self {
            Opcode::Put => "mfc_put",
            Opcode::PutB => "mfc_putb",
            Opcode::PutF => "mfc_putf",
            Opcode::Get => "mfc_get",
            Opcode::GetB => "mfc_getb",
            Opcode::GetF => "mfc_getf",
            Opcode::Barrier => "mfc_barrier",
        }
    }

    /// Moves data into the local store.
    #[inline]
    pub fn is_get(self) -> bool {
        matches!(self, Opcode::Get | Opcode::GetB | Opcode::GetF)
    }

    /// Moves data out of the local store.
    #[inline]
    pub fn is_put(self) -> bool {
        matches!(self, Opcode::Put | Opcode::PutB | Opcode::PutF)
    }

    /// Barrier/fence attribute.
    #[inline]
    pub fn ordering(self) -> Ordering {
        match self {
            Opcode::PutB | Opcode::GetB => Ordering::Barrier,
            Opcode::PutF | Opcode::GetF => Ordering::Fence,
            _ => Ordering::None,
        }
    }
}

/// A command as a program issues it (the five channel writes plus the opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MfcCommand {
    /// What to do.
    pub op: Opcode,
    /// Local-store address.
    pub lsa: u32,
    /// Effective address.
    pub ea: u64,
    /// Bytes.
    pub size: u32,
    /// Tag group.
    pub tag: u32,
}

impl fmt::Display for MfcCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Opcode::Barrier {
            return write!(f, "mfc_barrier(tag={})", self.tag);
        }
        write!(
            f,
            "{}(ls=0x{:x}, ea=0x{:x}, size={}, tag={})",
            self.op.sdk_name(),
            self.lsa,
            self.ea,
            self.size,
            self.tag
        )
    }
}

impl MfcCommand {
    /// Checks the architecture's rules that do not depend on the address map.
    pub fn check(&self, ls_bytes: u32) -> Result<(), (MfcErrorKind, String)> {
        if self.tag > 31 {
            return Err((
                MfcErrorKind::Tag,
                format!("tag {} is above 31 (tag groups are 0-31)", self.tag),
            ));
        }
        if self.op == Opcode::Barrier {
            return Ok(());
        }
        check_transfer(self.lsa, self.ea, self.size, ls_bytes)
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
        for code in [0x20, 0x21, 0x22, 0x40, 0x41, 0x42, 0xC0] {
            assert_eq!(Opcode::from_code(code).unwrap().code(), code);
        }
        assert!(Opcode::from_code(0x99).is_none());
    }
}
