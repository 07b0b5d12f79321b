//! Inbound write buffers at the receiving ports: the credits of the variant
//! `eib.put_flow = "credits"`.
//!
//! A put's data moves from the requester to a unit that did not ask for it:
//! the receiver must have room for it. With credit flow control each
//! receiving element has `eib.put_credits` buffers of a line; the data
//! arbiter grants a put's transfer only while the receiver has one free, and
//! the buffer stays taken until the data is written into the local store and
//! the credit is back (the acknowledgement's trip). A get needs no credit:
//! its requester reserved room for its own data when it issued the command.
//! No document we have describes the EIB's flow control; this mechanism is
//! inferred (Kistler et al. 2006: "gets have better contention resolution
//! properties under heavy load", pairwise puts below gets).

use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::RAMPS;
use std::collections::VecDeque;

/// Per receiving port: buffers free now, and when the taken ones free.
#[derive(Debug, Clone)]
pub struct InboundBuffers {
    free: [u32; RAMPS],
    /// Per port, the cycles its taken buffers free, ascending.
    frees: [VecDeque<Cycle>; RAMPS],
}

impl InboundBuffers {
    /// `credits` buffers at every receiving port.
    pub fn new(credits: u32) -> InboundBuffers {
        InboundBuffers {
            free: [credits; RAMPS],
            frees: std::array::from_fn(|_| VecDeque::with_capacity(credits as usize)),
        }
    }

    /// Whether port `dst` has a buffer free at `now`; if not, the earliest
    /// cycle one frees.
    #[inline]
    pub fn room(&mut self, now: Cycle, dst: usize) -> Result<(), Cycle> {
        let q = &mut self.frees[dst];
        while q.front().is_some_and(|&t| t <= now) {
            q.pop_front();
            self.free[dst] += 1;
        }
        if self.free[dst] > 0 {
            Ok(())
        } else {
            Err(*q
                .front()
                .expect("a port without free buffers has taken ones"))
        }
    }

    /// Takes a buffer of port `dst` (after [`InboundBuffers::room`]) until `until`.
    #[inline]
    pub fn take(&mut self, dst: usize, until: Cycle) {
        debug_assert!(self.free[dst] > 0);
        self.free[dst] -= 1;
        let q = &mut self.frees[dst];
        // A port receives one transfer at a time: its buffers free in order.
        debug_assert!(q.back().is_none_or(|&t| t <= until));
        q.push_back(until);
    }

    /// Writes the buffers' state (see [`crate::steady`]).
    pub(crate) fn shape(&self, s: &mut Shape) {
        for (free, q) in self.free.iter().zip(&self.frees) {
            s.raw(*free as u64);
            s.raw(q.len() as u64);
            q.iter().for_each(|&t| s.time(t));
        }
    }

    /// Moves every time `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        self.frees
            .iter_mut()
            .for_each(|q| q.iter_mut().for_each(|t| shift(t, dt)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_takes_as_many_puts_as_it_has_buffers_then_waits_for_the_first_to_free() {
        let mut b = InboundBuffers::new(2);
        assert_eq!(b.room(0, 5), Ok(()));
        b.take(5, 100);
        assert_eq!(b.room(10, 5), Ok(()));
        b.take(5, 120);
        assert_eq!(
            b.room(20, 5),
            Err(100),
            "both taken: the first frees at 100"
        );
        assert_eq!(b.room(20, 6), Ok(()), "another port has its own");
        assert_eq!(b.room(100, 5), Ok(()));
        b.take(5, 200);
        assert_eq!(b.room(110, 5), Err(120));
    }
}
