//! The DMA hazard checker for native (Rust) SPU programs: the twin of
//! `cellsim.dmacheck` for Python and C programs, with the same rules.
//!
//! A DMA is *in flight* from its issue until a tag-status read reports its
//! tag group complete. The program is stopped with [`SimError::DmaHazard`]
//! when it reads or writes local-store bytes that a DMA in flight moves
//! ([`crate::Spu::ls_read`] and friends), or issues a DMA whose local-store
//! or main-memory range overlaps one in flight, one of the two writing it (a
//! get writes the local store, a put main memory), with no order between
//! them: the same tag group and a fence or barrier form, or an
//! `mfc_barrier` in between. Call sites are the program's own lines
//! (`#[track_caller]`). DMA lists are not checked. Off unless the machine
//! was asked ([`crate::Machine::set_check_dma`]): then each native program's
//! port carries one.
//!
//! [`SimError::DmaHazard`]: crate::SimError::DmaHazard

use std::ops::Range;
use std::panic::Location;

use crate::mfc::command::{Opcode, Ordering};

/// One DMA in flight, as the program issued it.
#[derive(Debug, Clone)]
struct InFlight {
    tag: u32,
    /// A get: writes the local store (else a put: writes main memory).
    get: bool,
    ls: Range<u64>,
    ea: Range<u64>,
    /// An `mfc_barrier` of its tag group came after it.
    ordered: bool,
    site: &'static Location<'static>,
    command: &'static str,
}

/// A hazard found: the message, the tags, the overlapping range and the sites.
#[derive(Debug, Clone, PartialEq)]
pub struct Hazard {
    /// The sentence that says what raced with what.
    pub message: String,
    /// The tag groups involved (one for an access, two for two DMAs).
    pub tags: Vec<u32>,
    /// `("ls" | "ea", first, end)`: the overlapping bytes.
    pub range: (&'static str, u64, u64),
    /// The two call sites, `file:line`.
    pub sites: (String, String),
}

/// The in-flight table of one native program.
#[derive(Debug, Default)]
pub(crate) struct DmaChecker {
    in_flight: Vec<InFlight>,
    /// The first hazard, reported by the machine after the program's poll.
    pub(crate) hazard: Option<Hazard>,
}

fn overlap(a: &Range<u64>, b: &Range<u64>) -> Option<(u64, u64)> {
    let (lo, hi) = (a.start.max(b.start), a.end.min(b.end));
    (lo < hi).then_some((lo, hi))
}

fn site(l: &Location<'_>) -> String {
    format!("{}:{}", l.file(), l.line())
}

impl DmaChecker {
    /// A single DMA (`mfc_get`, `mfc_putf`, ...) issued at `at`.
    pub(crate) fn issue(
        &mut self,
        op: Opcode,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
        at: &'static Location<'static>,
    ) {
        if op == Opcode::Barrier {
            self.in_flight
                .iter_mut()
                .filter(|d| d.tag == tag)
                .for_each(|d| d.ordered = true);
            return;
        }
        let Some((get, ordering)) = kind(op) else {
            return;
        };
        let new = InFlight {
            tag,
            get,
            ls: lsa as u64..lsa as u64 + size as u64,
            ea: ea..ea + size as u64,
            ordered: false,
            site: at,
            command: op.sdk_name(),
        };
        if self.hazard.is_none() {
            self.hazard = self.against_in_flight(&new, ordering);
        }
        self.in_flight.push(new);
    }

    /// The first DMA in flight `new` races with, if any.
    fn against_in_flight(&self, new: &InFlight, ordering: bool) -> Option<Hazard> {
        self.in_flight.iter().find_map(|d| {
            if d.tag == new.tag && (ordering || d.ordered) {
                return None;
            }
            // a get writes the local store, a put main memory: a race needs a writer
            let ls = (d.get || new.get)
                .then(|| overlap(&d.ls, &new.ls).map(|h| ("ls", h)))
                .flatten();
            let ea = (!d.get || !new.get)
                .then(|| overlap(&d.ea, &new.ea).map(|h| ("ea", h)))
                .flatten();
            let (space, (lo, hi)) = ls.or(ea)?;
            Some(Hazard {
                message: format!(
                    "{} (tag {}) at {} overlaps {} bytes 0x{lo:x}-0x{hi:x} of {} (tag {}) issued at {}, \
                     still in flight, with no fence or barrier between them",
                    new.command,
                    new.tag,
                    site(new.site),
                    if space == "ls" { "local-store" } else { "main-memory" },
                    d.command,
                    d.tag,
                    site(d.site)
                ),
                tags: vec![d.tag, new.tag],
                range: (space, lo, hi),
                sites: (site(d.site), site(new.site)),
            })
        })
    }

    /// The program touches local-store bytes `lsa..lsa + len` at `at`.
    pub(crate) fn access(
        &mut self,
        lsa: u32,
        len: usize,
        write: bool,
        at: &'static Location<'static>,
    ) {
        if self.hazard.is_some() {
            return;
        }
        let bytes = lsa as u64..lsa as u64 + len as u64;
        self.hazard = self.in_flight.iter().find_map(|d| {
            let (lo, hi) = overlap(&d.ls, &bytes)?;
            Some(Hazard {
                message: format!(
                    "the program {} local-store bytes 0x{lo:x}-0x{hi:x} at {} while {} (tag {}) issued at {} \
                     moves them, not yet waited for with a tag-status read",
                    if write { "writes" } else { "reads" },
                    site(at),
                    d.command,
                    d.tag,
                    site(d.site)
                ),
                tags: vec![d.tag],
                range: ("ls", lo, hi),
                sites: (site(d.site), site(at)),
            })
        });
    }

    /// A tag-status read reported the groups of `status` complete.
    pub(crate) fn completed(&mut self, status: u32) {
        self.in_flight.retain(|d| status & (1 << d.tag) == 0);
    }
}

/// A single DMA's direction (get: true) and whether it is a fence or
/// barrier form; `None` for the commands not checked (lists, signals, the
/// atomic unit's, the syncs).
fn kind(op: Opcode) -> Option<(bool, bool)> {
    let single = !op.is_list() && !op.is_sndsig() && op.atomic().is_none();
    (single && (op.is_get() || op.is_put())).then(|| (op.is_get(), op.ordering() != Ordering::None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_to_bytes_in_flight_is_a_hazard_until_the_tag_is_waited_for() {
        let mut c = DmaChecker::default();
        c.issue(Opcode::Get, 0x1000, 0x10000, 256, 3, Location::caller());
        c.access(0x2000, 16, false, Location::caller());
        assert!(c.hazard.is_none(), "other bytes");
        c.completed(1 << 3);
        c.access(0x1000, 16, false, Location::caller());
        assert!(c.hazard.is_none(), "waited for");
        c.issue(Opcode::Get, 0x1000, 0x10000, 256, 3, Location::caller());
        c.access(0x10f0, 32, true, Location::caller());
        let h = c.hazard.clone().expect("a read of bytes in flight");
        assert_eq!((h.tags, h.range), (vec![3], ("ls", 0x10f0, 0x1100)));
    }

    #[test]
    fn overlapping_dmas_need_a_fence_or_a_barrier_of_their_group() {
        let mut c = DmaChecker::default();
        c.issue(Opcode::Get, 0x1000, 0x10000, 256, 3, Location::caller());
        c.issue(Opcode::PutF, 0x1000, 0x20000, 256, 3, Location::caller());
        assert!(c.hazard.is_none(), "fenced in its group");
        c.issue(Opcode::Put, 0x1000, 0x20000, 256, 4, Location::caller());
        assert_eq!(c.hazard.as_ref().map(|h| h.range.0), Some("ls"));
        let mut c = DmaChecker::default();
        c.issue(Opcode::Put, 0x1000, 0x20000, 128, 5, Location::caller());
        c.issue(Opcode::Barrier, 0, 0, 0, 5, Location::caller());
        c.issue(Opcode::Put, 0x3000, 0x20000, 128, 5, Location::caller());
        assert!(c.hazard.is_none(), "a barrier orders its group");
        c.issue(Opcode::Put, 0x4000, 0x20040, 128, 6, Location::caller());
        assert_eq!(
            c.hazard.as_ref().map(|h| h.range),
            Some(("ea", 0x20040, 0x20080))
        );
        let mut c = DmaChecker::default();
        c.issue(Opcode::Put, 0x1000, 0x20000, 128, 1, Location::caller());
        c.issue(Opcode::Put, 0x1000, 0x30000, 128, 2, Location::caller());
        assert!(
            c.hazard.is_none(),
            "two puts only read the same local store"
        );
    }
}
