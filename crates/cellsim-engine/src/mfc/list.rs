//! DMA-list elements.
//!
//! A list lives in the issuing SPU's local store: 8-byte, big-endian
//! elements (CBEA): bit 0 stall-and-notify, bits 1-16 reserved, bits 17-31
//! the transfer size, bits 32-63 the low word of the effective address (the
//! high word is the command's). Each element moves to or from consecutive
//! local-store addresses, and obeys the size and alignment rules of a single
//! DMA.

use super::command::check_transfer;
use crate::error::MfcErrorKind;
use crate::storage::Storage;

/// One decoded list element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListElement {
    /// Stop after this element until the program acknowledges.
    pub stall_and_notify: bool,
    /// Bytes to move.
    pub size: u32,
    /// Low word of the effective address.
    pub eal: u32,
}

impl ListElement {
    /// Decodes the 8 bytes of an element.
    pub fn decode(raw: u64) -> ListElement {
        ListElement {
            stall_and_notify: raw >> 63 != 0,
            size: ((raw >> 32) & 0x7FFF) as u32,
            eal: raw as u32,
        }
    }

    /// Encodes an element (for programs that build lists).
    pub fn encode(self) -> u64 {
        ((self.stall_and_notify as u64) << 63)
            | ((self.size as u64 & 0x7FFF) << 32)
            | self.eal as u64
    }

    /// Reads element `index` of the list at `list` in `ls`.
    pub fn read(ls: &Storage, list: u32, index: u32) -> ListElement {
        Self::decode(ls.read_u64_be(list as usize + 8 * index as usize))
    }
}

/// Checks one element against the rules of a single DMA: its data goes to or
/// comes from local-store address `cursor`. A bad size is reported as a list
/// error (the element's size field is the list's, not a command's).
pub fn check_element(
    cursor: u32,
    ea: u64,
    size: u32,
    ls_bytes: u32,
) -> Result<(), (MfcErrorKind, String)> {
    check_transfer(cursor, ea, size, ls_bytes).map_err(|(kind, msg)| {
        let kind = if kind == MfcErrorKind::Size {
            MfcErrorKind::List
        } else {
            kind
        };
        (kind, msg)
    })
}

/// Checks every element of a list (at issue), returning the first violation
/// as `(element index, kind, message)`.
pub fn check_list(
    ls: &Storage,
    list: u32,
    count: u32,
    lsa: u32,
    eah: u32,
) -> Result<(), (u32, MfcErrorKind, String)> {
    let mut cursor = lsa;
    for i in 0..count {
        let e = ListElement::read(ls, list, i);
        let ea = ((eah as u64) << 32) | e.eal as u64;
        check_element(cursor, ea, e.size, ls.len() as u32).map_err(|(k, m)| (i, k, m))?;
        cursor += e.size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_and_decode_the_cbea_layout() {
        let e = ListElement {
            stall_and_notify: true,
            size: 0x4000,
            eal: 0x1234_5680,
        };
        assert_eq!(ListElement::decode(e.encode()), e);
        assert_eq!(e.encode(), 0x8000_4000_1234_5680);
    }

    #[test]
    fn a_bad_element_is_named() {
        let ls = Storage::new(1 << 18);
        ls.write_u64_be(
            0x100,
            ListElement {
                stall_and_notify: false,
                size: 128,
                eal: 0x1000,
            }
            .encode(),
        );
        ls.write_u64_be(
            0x108,
            ListElement {
                stall_and_notify: false,
                size: 24,
                eal: 0x2000,
            }
            .encode(),
        );
        let err = check_list(&ls, 0x100, 2, 0x4000, 0).unwrap_err();
        assert_eq!(err.0, 1);
        assert_eq!(err.1, MfcErrorKind::List);
    }
}
