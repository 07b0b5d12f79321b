//! The command bus: the address concentrator and each element's BIU queue.
//!
//! Every element reaches the address concentrator (AC) over its own link; the
//! AC orders the commands, reflects them to all elements for snooping and
//! answers with the combined response, after which the data may move. It
//! snoops one address per bus cycle for the whole chip: that, times 128 bytes,
//! is the EIB's 204.8 GB/s peak (architecture notes). Elements with a command
//! waiting are served round-robin. A [`Biu`] holds an element's unrolled
//! requests and limits how many it has in flight.
//!
//! **Outbound put lines** (the variant `biu.put_flow = "lines"`): a put's
//! data is read from the local store when the command bus accepts it (the
//! coherence point) and waits in one of the element's `biu.put_lines`
//! outbound line buffers through the command phase until it has left the
//! element's port. A BIU whose lines are all taken sends no put to the
//! command bus (a get needs none: its data comes back into room its
//! requester has). No document we have gives these buffers; the mechanism is
//! inferred from Kistler et al. 2006's gets outperforming puts.

use crate::bus::{Fifo, OpId};
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Ramp, RAMPS};
use std::collections::VecDeque;

/// The flag of a queued request that is a put needing an outbound line: the
/// top bit of its number (the request slab never holds 2^31 requests).
const PUT_LINE: OpId = 1 << 31;

/// An element's bus interface unit: requests waiting for the command bus and
/// a count of those in flight.
#[derive(Debug, Clone)]
pub struct Biu {
    /// Requests waiting for the command bus, oldest first, each with whether
    /// it needs an outbound put line.
    /// (The flag is the request's top bit, [`PUT_LINE`]: a queue of plain
    /// request numbers, as before the variant.)
    queue: Fifo<OpId>,
    /// Requests accepted by the command bus and not yet complete.
    pub outstanding: u32,
    depth: u32,
    max_outstanding: u32,
    /// The outbound put lines, when puts need one (see the module docs).
    lines: Option<PutLines>,
}

/// An element's outbound put line buffers.
#[derive(Debug, Clone)]
struct PutLines {
    max: u32,
    /// Taken by accepted puts whose data has not all left yet.
    taken: u32,
    /// When the data of granted puts will have left, ascending: their lines free then.
    frees: VecDeque<Cycle>,
}

impl PutLines {
    /// Returns the lines freed by `now`.
    #[inline]
    fn collect(&mut self, now: Cycle) {
        while self.frees.front().is_some_and(|&t| t <= now) {
            self.frees.pop_front();
            self.taken -= 1;
        }
    }

    #[inline]
    fn free_at(&self, now: Cycle) -> bool {
        let freed = self.frees.iter().take_while(|&&t| t <= now).count() as u32;
        self.taken - freed < self.max
    }
}

impl Biu {
    /// An empty BIU; `put_lines` outbound line buffers for puts (`None`: puts need none).
    pub fn new(depth: u32, max_outstanding: u32, put_lines: Option<u32>) -> Biu {
        Biu {
            queue: Fifo::with_capacity(depth as usize),
            outstanding: 0,
            depth,
            max_outstanding,
            lines: put_lines.map(|max| PutLines {
                max,
                taken: 0,
                frees: VecDeque::with_capacity(max as usize),
            }),
        }
    }

    /// Room for another unrolled request.
    #[inline]
    pub fn has_room(&self) -> bool {
        (self.queue.len() as u32) < self.depth
    }

    /// Whether puts need an outbound line here.
    #[inline]
    pub fn puts_need_lines(&self) -> bool {
        self.lines.is_some()
    }

    /// Queues a request for the command bus; `put` when it is a put that
    /// needs an outbound line (see [`Biu::puts_need_lines`]).
    #[inline]
    pub fn push(&mut self, id: OpId, put: bool) {
        debug_assert!(id < PUT_LINE);
        self.queue.push_back(if put { id | PUT_LINE } else { id });
    }

    /// The command bus takes the oldest request at `now`; a put takes its
    /// line (`LINES`: whether puts need lines here, [`Biu::puts_need_lines`],
    /// known to the caller once for every BIU of the chip).
    #[inline]
    pub fn pop<const LINES: bool>(&mut self, now: Cycle) -> Option<OpId> {
        let id = self.queue.pop_front()?;
        if !LINES {
            return Some(id); // no request carries the flag
        }
        if id & PUT_LINE != 0 {
            let l = self
                .lines
                .as_mut()
                .expect("a put needing a line needs lines");
            l.collect(now);
            l.taken += 1;
        }
        Some(id & !PUT_LINE)
    }

    /// The oldest request waiting for the command bus.
    #[inline]
    pub fn head(&self) -> Option<OpId> {
        (!self.queue.is_empty()).then(|| self.queue.get(0) & !PUT_LINE)
    }

    /// Requests waiting for the command bus.
    #[inline]
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// A put's data will have left the element's port at `t`: its line frees then.
    #[inline]
    pub fn free_line_at(&mut self, t: Cycle) {
        let l = self
            .lines
            .as_mut()
            .expect("a put needing a line needs lines");
        let pos = l.frees.partition_point(|&f| f <= t);
        l.frees.insert(pos, t);
    }

    /// A request is waiting and the in-flight limit (and, for a put that
    /// needs a line, its outbound lines at `now`) allow sending it. `LINES`:
    /// whether puts need lines here (see [`Biu::pop`]); without, this is
    /// the two comparisons it was before the variant.
    #[inline]
    pub fn can_send<const LINES: bool>(&self, now: Cycle) -> bool {
        if self.queue.is_empty() || self.outstanding >= self.max_outstanding {
            return false;
        }
        if !LINES {
            return true;
        }
        match &self.lines {
            Some(l) if self.queue.get(0) & PUT_LINE != 0 => l.free_at(now),
            _ => true,
        }
    }
}

/// The address concentrator's scheduling state.
#[derive(Debug, Clone, Default)]
pub struct CommandBus {
    pub(super) rr: usize,
    pub(super) next_free: Cycle,
    /// Commands accepted so far.
    pub accepted: u64,
}

impl CommandBus {
    /// Picks the element whose command is accepted at bus edge `now`, if the
    /// command bus is free and someone can send. Round-robin from the element
    /// after the last one served.
    #[inline]
    pub fn select<const LINES: bool>(
        &mut self,
        now: Cycle,
        bius: &[Biu; RAMPS],
        bus_cycle: Cycle,
    ) -> Option<Ramp> {
        self.select_by(now, bus_cycle, |r| bius[r].can_send::<LINES>(now))
    }

    /// [`CommandBus::select`] skipping the elements that back off after a
    /// retry (variant `eib.command_retry`).
    #[inline]
    pub fn select_held<const LINES: bool>(
        &mut self,
        now: Cycle,
        bius: &[Biu; RAMPS],
        bus_cycle: Cycle,
        retries: &super::retry::Retries,
    ) -> Option<Ramp> {
        self.select_by(now, bus_cycle, |r| {
            retries.may_send(r, now) && bius[r].can_send::<LINES>(now)
        })
    }

    #[inline(always)]
    fn select_by(
        &mut self,
        now: Cycle,
        bus_cycle: Cycle,
        can_send: impl Fn(usize) -> bool,
    ) -> Option<Ramp> {
        if now < self.next_free {
            return None;
        }
        // Round-robin from the BIU after the last one served (two plain
        // ranges, not a modulo per step).
        let start = self.rr + 1;
        let r = (start..RAMPS)
            .find(|&r| can_send(r))
            .or_else(|| (0..start.min(RAMPS)).find(|&r| can_send(r)))?;
        self.rr = r;
        self.next_free = now + bus_cycle;
        self.accepted += 1;
        Some(Ramp(r as u8))
    }

    /// When the command bus can accept its next command.
    pub fn next_free(&self) -> Cycle {
        self.next_free
    }
}

/// Contract: a BIU's future is decided by its queue (requests, in order,
/// and which need a put line), `outstanding` and, with put lines, the lines
/// taken and when the taken ones free. Left out: the depth and limits
/// (settings).
impl Part for Biu {
    fn next_wake(&self) -> Option<Cycle> {
        None // the command bus looks at it when it runs
    }

    fn shape(&self, s: &mut Shape) {
        s.raw(self.queue.len() as u64);
        (0..self.queue.len()).for_each(|i| {
            let id = self.queue.get(i);
            let put = id & PUT_LINE != 0;
            let id = id & !PUT_LINE;
            s.op(id);
            s.raw(put as u64);
        });
        s.raw(self.outstanding as u64);
        if let Some(l) = &self.lines {
            s.raw(l.taken as u64);
            s.raw(l.frees.len() as u64);
            l.frees.iter().for_each(|&t| s.time(t));
        }
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        if let Some(l) = self.lines.as_mut() {
            l.frees.iter_mut().for_each(|t| shift(t, dt));
        }
    }
}

/// Contract: the address concentrator's future is decided by its
/// round-robin pointer (`rr`) and when it is free (`next_free`); `accepted`
/// is a counter (the jump scales it).
impl Part for CommandBus {
    fn next_wake(&self) -> Option<Cycle> {
        None // its chip's bus keeps the command bus's wake-up (`ChipBus::cb_wake`)
    }

    fn shape(&self, s: &mut Shape) {
        s.raw(self.rr as u64);
        s.time(self.next_free);
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        shift(&mut self.next_free, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_command_per_bus_cycle_round_robin() {
        let mut bius: [Biu; RAMPS] = std::array::from_fn(|_| Biu::new(4, 16, None));
        bius[2].push(0, false);
        bius[2].push(1, false);
        bius[7].push(2, false);
        let mut cb = CommandBus::default();
        assert_eq!(cb.select::<false>(0, &bius, 2), Some(Ramp(2)));
        bius[2].pop::<false>(0);
        assert_eq!(cb.select::<false>(0, &bius, 2), None, "one per bus cycle");
        assert_eq!(
            cb.select::<false>(2, &bius, 2),
            Some(Ramp(7)),
            "round robin moves on"
        );
    }

    #[test]
    fn the_in_flight_limit_holds_requests_back() {
        let mut b = Biu::new(4, 1, None);
        b.push(0, false);
        assert!(b.can_send::<false>(0));
        b.outstanding = 1;
        assert!(!b.can_send::<false>(0));
    }

    #[test]
    fn a_put_waits_for_an_outbound_line_and_a_get_does_not() {
        let mut b = Biu::new(4, 16, Some(1));
        b.push(0, true);
        b.push(1, true);
        b.push(2, false);
        assert!(b.can_send::<true>(0));
        assert_eq!(b.pop::<true>(0), Some(0));
        assert!(
            !b.can_send::<true>(10),
            "the one line is taken until the data leaves"
        );
        b.free_line_at(40);
        assert!(!b.can_send::<true>(39));
        assert!(b.can_send::<true>(40));
        assert_eq!(b.pop::<true>(40), Some(1));
        b.free_line_at(80);
        assert!(b.can_send::<true>(50), "a get behind it needs no line");
        assert_eq!(b.pop::<true>(50), Some(2));
    }
}
