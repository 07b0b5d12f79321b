//! Lock-line reservations: what makes getllar/putllc (and the PPE's
//! lwarx/stwcx) atomic.
//!
//! Each SPE's atomic unit and each PPE thread holds at most one reservation
//! on a 128-byte line. Any write to the line by someone else — a DMA put, a
//! putllc or putlluc, a PPE store — takes every reservation on it away; a
//! conditional store succeeds only while its owner's reservation holds.
//! Writes to main memory take effect at the command bus, the coherence
//! point, so the order of competing atomics is the order the command bus
//! accepts them.

/// Who holds a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    /// The atomic unit of a physical SPE.
    Spe(u8),
    /// A PPE thread.
    Ppe(usize),
}

/// Line size for reservations (and the PPE's cache line).
pub const LINE: u64 = 128;

/// Every reservation on the chip.
#[derive(Debug, Clone, Default)]
pub struct Reservations {
    held: Vec<(Holder, u64)>,
    /// Physical SPEs whose reservation a write took away (bit per SPE),
    /// for the lock-line-reservation-lost event.
    lost: u32,
}

impl Reservations {
    /// No reservation is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// `who` reserves the line containing `addr` (dropping its previous one).
    pub fn reserve(&mut self, who: Holder, addr: u64) {
        let line = addr / LINE;
        match self.held.iter_mut().find(|(h, _)| *h == who) {
            Some(e) => e.1 = line,
            None => self.held.push((who, line)),
        }
    }

    /// Whether `who` still holds a reservation on the line containing `addr`.
    pub fn holds(&self, who: Holder, addr: u64) -> bool {
        self.held.iter().any(|&(h, l)| h == who && l == addr / LINE)
    }

    /// `[addr, addr + len)` was written: reservations on those lines are lost.
    #[inline]
    pub fn written(&mut self, addr: u64, len: u64) {
        if self.held.is_empty() {
            return;
        }
        let (first, last) = (addr / LINE, (addr + len.max(1) - 1) / LINE);
        let lost = &mut self.lost;
        self.held.retain(|&(h, l)| {
            let keep = l < first || l > last;
            if let (false, Holder::Spe(p)) = (keep, h) {
                *lost |= 1 << (p as u32 % 32);
            }
            keep
        });
    }

    /// Whether physical SPE `p` lost its reservation to a write since the
    /// last call (and forgets it).
    pub fn take_lost(&mut self, p: u8) -> bool {
        let bit = 1 << (p as u32 % 32);
        let was = self.lost & bit != 0;
        self.lost &= !bit;
        was
    }

    /// `who` gives up its reservation (a successful conditional store).
    pub fn clear(&mut self, who: Holder) {
        self.held.retain(|&(h, _)| h != who);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_to_the_line_takes_every_reservation_on_it() {
        let mut r = Reservations::default();
        r.reserve(Holder::Spe(0), 0x1000);
        r.reserve(Holder::Spe(1), 0x1040);
        r.reserve(Holder::Ppe(0), 0x2000);
        r.written(0x1070, 4);
        assert!(!r.holds(Holder::Spe(0), 0x1000));
        assert!(!r.holds(Holder::Spe(1), 0x1000));
        assert!(r.holds(Holder::Ppe(0), 0x2000));
        r.written(0x2080, 128);
        assert!(
            r.holds(Holder::Ppe(0), 0x2000),
            "the next line is another line"
        );
    }
}
