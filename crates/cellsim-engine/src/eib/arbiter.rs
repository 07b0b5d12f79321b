//! The data arbiter.
//!
//! Elements whose data is ready ask the arbiter for a ring. Requests from the
//! memory controller are considered first ("to minimize stalling on reads",
//! Kistler et al. 2006); everyone else is served round-robin from the element after the
//! last one granted. For each element the arbiter looks at the first
//! `window` ready transfers (1 = strict FIFO).
//!
//! Several senders waiting for the same receiver take turns, round-robin per
//! receiver. Without the turns a farther sender would always win: its data
//! can leave a few cycles before the receiver's port frees (it arrives
//! later), so it is ready first every time and nearer senders starve. The
//! turns make a hot spot fair (Kistler et al. 2006, Fig 7: no difference between SPEs),
//! except for the memory controller, which never waits for a turn,
//! at the price of a receiver idling while the sender whose turn it is
//! travels farther — the small loss Kistler et al. 2006 saw for puts into a hot spot.
//!
//! A request that cannot go now tells the arbiter when it might, so that the
//! arbiter sleeps until then instead of retrying every cycle.

use crate::bus::{Fifo, OpId};
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Ramp, RAMPS};

/// A priority element that is no element: every sender is served round-robin
/// (`eib.mic_priority = false`, to isolate the memory controller's priority).
pub const NO_PRIORITY: Ramp = Ramp(RAMPS as u8);

/// Ready transfers per sending element and the round-robin pointers.
#[derive(Debug, Clone)]
pub struct DataArbiter {
    /// Per sender: (request, receiver) in arrival order.
    queues: [Fifo<(OpId, u8)>; RAMPS],
    /// Bit `r` set when element `r` has a ready transfer.
    waiting: u16,
    /// Per element: no transfer of its window can start before this cycle
    /// (valid until it gets a new request; other grants only delay it more).
    pub(super) not_before: [Cycle; RAMPS],
    pub(super) rr: usize,
    /// Per receiver: the sender granted last.
    pub(super) turn: [u8; RAMPS],
    /// Per receiver: bit `s` set when sender `s` (other than the priority
    /// element) has a request for it in its window. Kept up to date as
    /// requests arrive; the windows of senders granted during a round are
    /// refreshed when the round ends, so a round sees them as it began.
    wants: [u16; RAMPS],
    /// Senders granted during the current round and the receiver of the
    /// grant (their `wants` bits are stale until the round ends).
    granted: [(u8, u8); RAMPS],
    n_granted: usize,
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
            queues: std::array::from_fn(|_| Fifo::with_capacity(32)),
            waiting: 0,
            not_before: [0; RAMPS],
            rr: RAMPS - 1,
            turn: [RAMPS as u8 - 1; RAMPS],
            wants: [0; RAMPS],
            granted: [(0, 0); RAMPS],
            n_granted: 0,
            window,
            pending: 0,
            priority,
            rounds: 0,
            attempts: 0,
        }
    }

    /// Queues a transfer from `src` to `dst` whose data is ready.
    #[inline]
    ///
    /// `port_free` is when `src`'s send port frees: none of its transfers can
    /// start earlier, so the arbiter need not try before.
    pub fn request(&mut self, src: Ramp, dst: Ramp, op: OpId, port_free: Cycle) {
        let q = &mut self.queues[src.idx()];
        q.push_back((op, dst.0));
        if q.len() <= self.window && src != self.priority {
            self.wants[dst.idx()] |= 1 << src.idx();
        }
        self.waiting |= 1 << src.idx();
        self.not_before[src.idx()] = port_free;
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
    /// earliest cycle worth arbitrating again, if anything is left waiting
    /// (0 meaning "as soon as possible").
    pub fn arbitrate(
        &mut self,
        now: Cycle,
        mut try_start: impl FnMut(OpId) -> Result<Cycle, Cycle>,
    ) -> Option<Cycle> {
        self.rounds += 1;
        // `wants` is kept up to date between rounds (see `refresh_wants`).
        // Which elements might start now; the others only bound the retry.
        let mut ready = 0u16;
        let mut retry = Cycle::MAX;
        let mut bits = self.waiting;
        while bits != 0 {
            let r = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let nb = self.not_before[r];
            ready |= ((nb <= now) as u16) << r;
            retry = retry.min(if nb > now { nb } else { Cycle::MAX });
        }
        let p = self.priority.idx();
        if ready & (1 << p) != 0 {
            self.serve(p, now, &mut try_start, &mut retry);
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
                if self.serve(r, now, &mut try_start, &mut retry) && granted_rr.is_none() {
                    granted_rr = Some(r);
                }
            }
        }
        if let Some(r) = granted_rr {
            self.rr = r;
        }
        // Senders that were granted this round changed their window: the
        // round saw the windows as they were when it began.
        for k in 0..std::mem::take(&mut self.n_granted) {
            let (r, d) = self.granted[k];
            self.refresh_wants(r as usize, d as usize);
        }
        (self.pending > 0).then_some(retry)
    }

    /// Sender `r` was granted a request for `d`: its window changed.
    #[inline]
    fn refresh_wants(&mut self, r: usize, d: usize) {
        self.wants[d] &= !(1 << r);
        let q = &self.queues[r];
        for i in 0..q.len().min(self.window) {
            self.wants[q.get(i).1 as usize] |= 1 << r;
        }
    }

    /// Whether it is sender `r`'s turn at receiver `d`: the first sender
    /// wanting `d` after the one granted there last.
    #[inline]
    fn my_turn(&self, r: usize, d: usize) -> bool {
        let w = self.wants[d];
        // The memory controller has priority: it never waits for a turn.
        if w == 1 << r || r == self.priority.idx() {
            return true;
        }
        let start = (self.turn[d] as usize + 1) % RAMPS;
        let after = w & (!0u16 << start);
        let next = if after != 0 {
            after.trailing_zeros()
        } else {
            w.trailing_zeros()
        };
        next as usize == r
    }

    /// Tries the first `window` transfers of element `r`; grants at most one
    /// (the element's send port then is busy). Returns whether one was granted.
    #[inline(always)]
    fn serve(
        &mut self,
        r: usize,
        now: Cycle,
        try_start: &mut impl FnMut(OpId) -> Result<Cycle, Cycle>,
        retry: &mut Cycle,
    ) -> bool {
        if self.window == 1 {
            return self.serve_head(r, now, try_start, retry);
        }
        let n = self.queues[r].len().min(self.window);
        let mut earliest = Cycle::MAX;
        let mut waits_turn = false;
        for i in 0..n {
            let (op, d) = self.queues[r].get(i);
            if !self.my_turn(r, d as usize) {
                waits_turn = true;
                continue;
            }
            self.attempts += 1;
            match try_start(op) {
                Ok(port_free) => {
                    if i == 0 {
                        self.queues[r].pop_front();
                    } else {
                        self.queues[r].remove(i);
                    }
                    self.granted_from(r, d, port_free, retry);
                    return true;
                }
                Err(t) => earliest = earliest.min(t),
            }
        }
        // A request waiting for its turn is woken by the grant of the one
        // before it, not by a time of its own.
        self.not_before[r] = if waits_turn { now } else { earliest };
        *retry = (*retry).min(earliest);
        false
    }

    /// [`DataArbiter::serve`] for a window of one (the machine files'): only
    /// the head of `r`'s queue is tried.
    #[inline(always)]
    fn serve_head(
        &mut self,
        r: usize,
        now: Cycle,
        try_start: &mut impl FnMut(OpId) -> Result<Cycle, Cycle>,
        retry: &mut Cycle,
    ) -> bool {
        let Some((op, d)) = self.queues[r].front() else {
            self.not_before[r] = Cycle::MAX;
            return false;
        };
        if !self.my_turn(r, d as usize) {
            self.not_before[r] = now;
            return false;
        }
        self.attempts += 1;
        match try_start(op) {
            Ok(port_free) => {
                self.queues[r].pop_front();
                self.granted_from(r, d, port_free, retry);
                true
            }
            Err(t) => {
                self.not_before[r] = t;
                *retry = (*retry).min(t);
                false
            }
        }
    }

    /// Sender `r`'s request for `d` was granted (and left its queue); its
    /// port frees at `port_free`.
    #[inline(always)]
    fn granted_from(&mut self, r: usize, d: u8, port_free: Cycle, retry: &mut Cycle) {
        self.pending -= 1;
        if r != self.priority.idx() {
            self.turn[d as usize] = r as u8;
            self.granted[self.n_granted] = (r as u8, d);
            self.n_granted += 1;
        }
        if self.wants[d as usize] & !(1 << r) != 0 {
            // The next sender in turn for `d` learns its exact time next round.
            *retry = 0;
        }
        if self.queues[r].is_empty() {
            self.waiting &= !(1 << r);
        } else {
            self.not_before[r] = port_free;
            *retry = (*retry).min(port_free);
        }
    }
}

/// Contract: the arbiter's future is decided by each sender's queue
/// (requests and their receivers, in order), the senders' `not_before`
/// times, the round-robin pointers (`rr`, each receiver's `turn`), the
/// windows' `wants`, `waiting`, `n_granted` and `pending`. Left out:
/// `granted` (a round's scratch, read only with `n_granted`), the counters
/// `rounds` and `attempts` (the jump scales them), the priority element and
/// window (settings).
impl Part for DataArbiter {
    fn next_wake(&self) -> Option<Cycle> {
        None // its chip's bus keeps the arbiter's wake-up (`ChipBus::arb_wake`)
    }

    fn shape(&self, s: &mut Shape) {
        for q in &self.queues {
            s.raw(q.len() as u64);
            for i in 0..q.len() {
                let (op, d) = q.get(i);
                s.op(op);
                s.raw(d as u64);
            }
        }
        self.not_before.iter().for_each(|&t| s.time(t));
        self.turn.iter().for_each(|&r| s.raw(r as u64));
        self.wants.iter().for_each(|&w| s.raw(w as u64));
        for v in [self.waiting as usize, self.rr, self.n_granted, self.pending] {
            s.raw(v as u64);
        }
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        self.not_before.iter_mut().for_each(|t| shift(t, dt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arbiter (the MIC's ramp `mic` first) with requests from ramps 3,
    /// 11 (the MIC's) and 5, to three receivers.
    fn three_senders(mic: Ramp) -> DataArbiter {
        let mut a = DataArbiter::new(mic, 1);
        a.request(Ramp(3), Ramp(0), 30, 0);
        a.request(Ramp(11), Ramp(1), 110, 0);
        a.request(Ramp(5), Ramp(2), 50, 0);
        a
    }

    /// One arbitration at `now` in which only `grants` transfers may go (in
    /// `order`); the others say they could go at cycle 100.
    fn arbitrate_granting(
        a: &mut DataArbiter,
        now: Cycle,
        grants: u32,
        order: &mut Vec<OpId>,
    ) -> Option<Cycle> {
        let mut budget = grants;
        a.arbitrate(now, |op| {
            if budget > 0 {
                budget -= 1;
                order.push(op);
                Ok(200)
            } else {
                Err(100)
            }
        })
    }

    #[test]
    fn the_memory_controller_goes_first_then_round_robin() {
        let mut a = three_senders(Ramp(11));
        let mut order = Vec::new();
        let left = arbitrate_granting(&mut a, 0, 1, &mut order);
        assert_eq!(order, vec![110]);
        assert_eq!(left, Some(100), "ramps 3 and 5 said when they could go");
        arbitrate_granting(&mut a, 100, 2, &mut order);
        assert_eq!(order, vec![110, 30, 50]);
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn without_priority_the_memory_controller_waits_its_round_robin_turn() {
        let mut a = three_senders(NO_PRIORITY);
        let mut order = Vec::new();
        arbitrate_granting(&mut a, 0, 1, &mut order);
        assert_eq!(
            order,
            vec![30],
            "round-robin from ramp 1: ramp 3 first, not the MIC"
        );
    }

    #[test]
    fn senders_to_one_receiver_take_turns() {
        let mut a = DataArbiter::new(Ramp(11), 1);
        for s in [1u8, 4, 7] {
            a.request(Ramp(s), Ramp(9), s as u32, 0);
            a.request(Ramp(s), Ramp(9), s as u32, 0);
        }
        let mut order = Vec::new();
        for now in 0..6 {
            // Everyone could go at once; only the sender in turn may.
            a.arbitrate(now, |op| {
                order.push(op);
                Ok(0)
            });
        }
        assert_eq!(order, vec![1, 4, 7, 1, 4, 7]);
    }

    #[test]
    fn the_window_lets_a_blocked_head_be_overtaken() {
        let mut a = DataArbiter::new(Ramp(11), 2);
        a.request(Ramp(1), Ramp(5), 1, 0);
        a.request(Ramp(1), Ramp(6), 2, 0);
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
