//! The command bus: the address concentrator and each element's BIU queue.
//!
//! Every element reaches the address concentrator (AC) over its own link; the
//! AC orders the commands, reflects them to all elements for snooping and
//! answers with the combined response, after which the data may move. It
//! snoops one address per bus cycle for the whole chip: that, times 128 bytes,
//! is the EIB's 204.8 GB/s peak (architecture notes). Elements with a command
//! waiting are served round-robin. A [`Biu`] holds an element's unrolled
//! requests and limits how many it has in flight.

use crate::bus::{Fifo, OpId};
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Ramp, RAMPS};

/// An element's bus interface unit: requests waiting for the command bus and
/// a count of those in flight.
#[derive(Debug, Clone)]
pub struct Biu {
    /// Requests waiting for the command bus, oldest first.
    pub queue: Fifo<OpId>,
    /// Requests accepted by the command bus and not yet complete.
    pub outstanding: u32,
    depth: u32,
    max_outstanding: u32,
}

impl Biu {
    /// An empty BIU.
    pub fn new(depth: u32, max_outstanding: u32) -> Biu {
        Biu {
            queue: Fifo::with_capacity(depth as usize),
            outstanding: 0,
            depth,
            max_outstanding,
        }
    }

    /// Room for another unrolled request.
    #[inline]
    pub fn has_room(&self) -> bool {
        (self.queue.len() as u32) < self.depth
    }

    /// Writes the BIU's state (see [`crate::steady`]).
    pub(crate) fn shape(&self, s: &mut Shape) {
        s.raw(self.queue.len() as u64);
        (0..self.queue.len()).for_each(|i| s.op(self.queue.get(i)));
        s.raw(self.outstanding as u64);
    }

    /// A request is waiting and the in-flight limit allows sending it.
    #[inline]
    pub fn can_send(&self) -> bool {
        !self.queue.is_empty() && self.outstanding < self.max_outstanding
    }
}

/// The address concentrator's scheduling state.
#[derive(Debug, Clone, Default)]
pub struct CommandBus {
    rr: usize,
    next_free: Cycle,
    /// Commands accepted so far.
    pub accepted: u64,
}

impl CommandBus {
    /// Picks the element whose command is accepted at bus edge `now`, if the
    /// command bus is free and someone can send. Round-robin from the element
    /// after the last one served.
    #[inline]
    pub fn select(&mut self, now: Cycle, bius: &[Biu; RAMPS], bus_cycle: Cycle) -> Option<Ramp> {
        if now < self.next_free {
            return None;
        }
        // Round-robin from the BIU after the last one served (two plain
        // ranges, not a modulo per step).
        let start = self.rr + 1;
        let r = (start..RAMPS)
            .find(|&r| bius[r].can_send())
            .or_else(|| (0..start.min(RAMPS)).find(|&r| bius[r].can_send()))?;
        self.rr = r;
        self.next_free = now + bus_cycle;
        self.accepted += 1;
        Some(Ramp(r as u8))
    }

    /// Writes the address concentrator's state (see [`crate::steady`]).
    pub(crate) fn shape(&self, s: &mut Shape) {
        s.raw(self.rr as u64);
        s.time(self.next_free);
    }

    /// Moves its time `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        shift(&mut self.next_free, dt);
    }

    /// When the command bus can accept its next command.
    pub fn next_free(&self) -> Cycle {
        self.next_free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_command_per_bus_cycle_round_robin() {
        let mut bius: [Biu; RAMPS] = std::array::from_fn(|_| Biu::new(4, 16));
        bius[2].queue.push_back(0);
        bius[2].queue.push_back(1);
        bius[7].queue.push_back(2);
        let mut cb = CommandBus::default();
        assert_eq!(cb.select(0, &bius, 2), Some(Ramp(2)));
        bius[2].queue.pop_front();
        assert_eq!(cb.select(0, &bius, 2), None, "one per bus cycle");
        assert_eq!(
            cb.select(2, &bius, 2),
            Some(Ramp(7)),
            "round robin moves on"
        );
    }

    #[test]
    fn the_in_flight_limit_holds_requests_back() {
        let mut b = Biu::new(4, 1);
        b.queue.push_back(0);
        assert!(b.can_send());
        b.outstanding = 1;
        assert!(!b.can_send());
    }
}
