//! An SPE's mailboxes: 32-bit messages between the SPU and the PPE or other SPEs.
//!
//! The SPU reads its 4-entry inbound mailbox (blocking when empty) and writes
//! its 1-entry outbound and outbound-interrupt mailboxes (blocking when
//! full). The PPE and other SPEs reach them through the problem-state area
//! (architecture notes). A memory-mapped write to a full inbound mailbox
//! overwrites the newest entry (libspe2's blocking write checks the count
//! first, so well-behaved writers never do that).

use std::collections::VecDeque;

/// Entries of the SPU inbound mailbox.
pub const INBOUND_DEPTH: usize = 4;

/// The mailboxes of one SPE.
#[derive(Debug, Clone, Default)]
pub struct Mailboxes {
    inbound: VecDeque<u32>,
    /// Inbound writes on their way over the bus, counted against the space.
    pub inbound_in_flight: u32,
    outbound: Option<u32>,
    outbound_intr: Option<u32>,
    /// A PPE read is on its way for the outbound (0) or interrupt (1) message:
    /// other readers wait for the next one.
    claimed: [bool; 2],
}

/// Which outbound mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    /// SPU_Out_Mbox.
    Plain,
    /// SPU_Out_Intr_Mbox (raises an interrupt on the PPE).
    Interrupt,
}

impl Mailboxes {
    /// Entries waiting in the inbound mailbox.
    pub fn inbound_count(&self) -> u32 {
        self.inbound.len() as u32
    }

    /// Free inbound entries, counting writes still on their way.
    pub fn inbound_space(&self) -> u32 {
        (INBOUND_DEPTH as u32).saturating_sub(self.inbound.len() as u32 + self.inbound_in_flight)
    }

    /// A memory-mapped write arrives: appended, or overwriting the newest entry when full.
    pub fn deliver_inbound(&mut self, v: u32) {
        if self.inbound.len() >= INBOUND_DEPTH {
            *self.inbound.back_mut().expect("full mailbox") = v;
        } else {
            self.inbound.push_back(v);
        }
    }

    /// The SPU reads the oldest inbound entry.
    pub fn read_inbound(&mut self) -> Option<u32> {
        self.inbound.pop_front()
    }

    /// The SPU writes an outbound mailbox; false when it is full.
    pub fn write_outbound(&mut self, which: Outbound, v: u32) -> bool {
        let slot = self.slot(which);
        if slot.is_some() {
            return false;
        }
        *slot = Some(v);
        true
    }

    /// Someone reads (and empties) an outbound mailbox.
    pub fn take_outbound(&mut self, which: Outbound) -> Option<u32> {
        self.claimed[which as usize] = false;
        self.slot(which).take()
    }

    /// An outbound message no reader has claimed yet.
    pub fn outbound_available(&self, which: Outbound) -> bool {
        self.outbound_full(which) && !self.claimed[which as usize]
    }

    /// A reader claims the outbound message (its read is on the bus).
    pub fn claim_outbound(&mut self, which: Outbound) {
        self.claimed[which as usize] = true;
    }

    /// Whether an outbound mailbox holds a message.
    pub fn outbound_full(&self, which: Outbound) -> bool {
        match which {
            Outbound::Plain => self.outbound.is_some(),
            Outbound::Interrupt => self.outbound_intr.is_some(),
        }
    }

    fn slot(&mut self, which: Outbound) -> &mut Option<u32> {
        match which {
            Outbound::Plain => &mut self.outbound,
            Outbound::Interrupt => &mut self.outbound_intr,
        }
    }

    /// SPU_Mbox_Stat as the architecture packs it: outbound count (bits 0-7),
    /// inbound free entries (8-15), outbound-interrupt count (16-23).
    pub fn status(&self) -> u32 {
        self.outbound.is_some() as u32
            | ((INBOUND_DEPTH as u32 - self.inbound.len() as u32) << 8)
            | ((self.outbound_intr.is_some() as u32) << 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbound_holds_four_and_a_fifth_overwrites_the_newest() {
        let mut m = Mailboxes::default();
        for v in 1..=5 {
            m.deliver_inbound(v);
        }
        assert_eq!(m.inbound_count(), 4);
        assert_eq!(
            (0..4)
                .map(|_| m.read_inbound().unwrap())
                .collect::<Vec<_>>(),
            vec![1, 2, 3, 5]
        );
        assert_eq!(m.read_inbound(), None);
    }

    #[test]
    fn outbound_holds_one() {
        let mut m = Mailboxes::default();
        assert!(m.write_outbound(Outbound::Plain, 7));
        assert!(!m.write_outbound(Outbound::Plain, 8));
        assert_eq!(m.status() & 0xFF, 1);
        assert_eq!(m.take_outbound(Outbound::Plain), Some(7));
        assert!(m.write_outbound(Outbound::Interrupt, 9));
        assert_eq!(m.status() >> 16, 1);
    }
}
