//! The data arbiter.
//!
//! Elements whose data is ready ask the arbiter for a ring. Requests from the
//! memory controller are considered first ("to minimize stalling on reads",
//! seed 000); everyone else is served round-robin from the element after the
//! last one granted. For each element the arbiter looks at the first
//! `window` ready transfers (1 = strict FIFO). A request that cannot go now
//! tells the arbiter when it might, so that the arbiter sleeps until then
//! instead of retrying every cycle.

use crate::bus::OpId;
use crate::time::Cycle;
use crate::topology::{Ramp, RAMPS};
use std::collections::VecDeque;

/// Ready transfers per sending element and the round-robin pointer.
#[derive(Debug, Clone)]
pub struct DataArbiter {
    queues: [VecDeque<OpId>; RAMPS],
    /// Bit `r` set when element `r` has a ready transfer.
    waiting: u16,
    /// Per element: no transfer of its window can start before this cycle
    /// (valid until it gets a new request; other grants only delay it more).
    not_before: [Cycle; RAMPS],
    rr: usize,
    window: usize,
    pending: usize,
    priority: Ramp,
    /// Arbitration rounds run.
    pub rounds: u64,
    /// Transfers tried (granted or not).
    pub attempts: u64,
}

impl DataArbiter {
    /// An arbiter that favours `priority` (the MIC's ramp).
    pub fn new(priority: Ramp, window: usize) -> DataArbiter {
        DataArbiter {
            queues: std::array::from_fn(|_| VecDeque::with_capacity(32)),
            waiting: 0,
            not_before: [0; RAMPS],
            rr: RAMPS - 1,
            window,
            pending: 0,
            priority,
            rounds: 0,
            attempts: 0,
        }
    }

    /// Queues a transfer whose data is ready at `src`.
    #[inline]
    pub fn request(&mut self, src: Ramp, op: OpId) {
        self.queues[src.idx()].push_back(op);
        self.waiting |= 1 << src.idx();
        self.not_before[src.idx()] = 0;
        self.pending += 1;
    }

    /// Transfers waiting for a ring.
    #[inline]
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Runs one arbitration at `now`. `try_start(op)` attempts to start a
    /// transfer: `Ok(t)` when granted, with the cycle the sender's port frees
    /// again; `Err(t)` with the earliest cycle it could start. Returns the
    /// earliest cycle worth arbitrating again, if anything is left waiting.
    pub fn arbitrate(
        &mut self,
        now: Cycle,
        mut try_start: impl FnMut(OpId) -> Result<Cycle, Cycle>,
    ) -> Option<Cycle> {
        let mut retry = Cycle::MAX;
        self.rounds += 1;
        // Elements whose window might start now; the others only bound the retry.
        let mut ready = 0u16;
        for r in 0..RAMPS {
            if self.waiting & (1 << r) != 0 {
                let nb = self.not_before[r];
                if nb <= now {
                    ready |= 1 << r;
                } else {
                    retry = retry.min(nb);
                }
            }
        }
        let p = self.priority.idx();
        if ready & (1 << p) != 0 {
            self.serve(p, &mut try_start, &mut retry);
        }
        // Round-robin over the others: elements after the last one granted
        // first, then those before it.
        let others = ready & !(1 << p);
        let start = (self.rr + 1) % RAMPS;
        let first = others & (!0u16 << start);
        let second = others & !(!0u16 << start);
        let mut granted_rr = None;
        for mut bits in [first, second] {
            while bits != 0 {
                let r = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.serve(r, &mut try_start, &mut retry) && granted_rr.is_none() {
                    granted_rr = Some(r);
                }
            }
        }
        if let Some(r) = granted_rr {
            self.rr = r;
        }
        (self.pending > 0).then_some(retry)
    }

    /// Tries the first `window` transfers of element `r`; grants at most one
    /// (the element's send port then is busy). Returns whether one was granted.
    #[inline]
    fn serve(
        &mut self,
        r: usize,
        try_start: &mut impl FnMut(OpId) -> Result<Cycle, Cycle>,
        retry: &mut Cycle,
    ) -> bool {
        let n = self.queues[r].len().min(self.window);
        let mut earliest = Cycle::MAX;
        for i in 0..n {
            let op = self.queues[r][i];
            self.attempts += 1;
            match try_start(op) {
                Ok(port_free) => {
                    if i == 0 {
                        self.queues[r].pop_front();
                    } else {
                        self.queues[r].remove(i);
                    }
                    self.pending -= 1;
                    if self.queues[r].is_empty() {
                        self.waiting &= !(1 << r);
                    } else {
                        self.not_before[r] = port_free;
                        *retry = (*retry).min(port_free);
                    }
                    return true;
                }
                Err(t) => earliest = earliest.min(t),
            }
        }
        self.not_before[r] = earliest;
        *retry = (*retry).min(earliest);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_controller_goes_first_then_round_robin() {
        let mut a = DataArbiter::new(Ramp(11), 1);
        a.request(Ramp(3), 30);
        a.request(Ramp(11), 110);
        a.request(Ramp(5), 50);
        let mut order = Vec::new();
        // Only one grant per arbitration in this test.
        let mut budget = 1;
        let left = a.arbitrate(0, |op| {
            if budget > 0 {
                budget -= 1;
                order.push(op);
                Ok(200)
            } else {
                Err(100)
            }
        });
        assert_eq!(order, vec![110]);
        assert_eq!(left, Some(100), "ramps 3 and 5 said when they could go");
        budget = 2;
        a.arbitrate(100, |op| {
            if budget > 0 {
                budget -= 1;
                order.push(op);
                Ok(200)
            } else {
                Err(100)
            }
        });
        assert_eq!(order, vec![110, 30, 50]);
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn the_window_lets_a_blocked_head_be_overtaken() {
        let mut a = DataArbiter::new(Ramp(11), 2);
        a.request(Ramp(1), 1);
        a.request(Ramp(1), 2);
        let mut got = Vec::new();
        a.arbitrate(0, |op| {
            if op == 1 {
                Err(9)
            } else {
                got.push(op);
                Ok(16)
            }
        });
        assert_eq!(got, vec![2]);
    }
}
