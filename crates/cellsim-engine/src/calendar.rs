//! The wake-up calendar: what lets the engine skip idle cycles.
//!
//! A timing wheel of [`WHEEL`] one-cycle slots holds the events of the near
//! future (almost every event on the chip is due within a few hundred cycles);
//! a binary heap holds the rare far ones. A bitmap of occupied slots finds the
//! next due time in a few word scans, so simulated time jumps straight to it
//! instead of ticking through empty cycles. Nothing is allocated once the slot
//! vectors have grown to their working size.
//!
//! Events due at the same cycle come out in the order they were scheduled
//! (far events moved into the wheel join the end of their slot), which keeps
//! every run deterministic.

use crate::time::Cycle;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Number of one-cycle slots in the wheel (a power of two).
pub const WHEEL: usize = 1024;
const MASK: Cycle = WHEEL as Cycle - 1;
const WORDS: usize = WHEEL / 64;

struct Far<E> {
    time: Cycle,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A calendar of future events of type `E`.
pub struct Calendar<E> {
    /// A fixed-size array: a slot index masked by `MASK` needs no bounds check.
    slots: Box<[Vec<E>; WHEEL]>,
    occupied: [u64; WORDS],
    /// Every event in the wheel is due in `[now, now + WHEEL)`.
    now: Cycle,
    far: BinaryHeap<Far<E>>,
    /// The earliest far event's time (`Cycle::MAX` when there is none): the
    /// per-step check for far events to pull is one compare, not a call.
    far_next: Cycle,
    far_seq: u64,
    /// Events of the current slot already handed out by [`Calendar::pop_due`].
    cursor: usize,
}

impl<E> Default for Calendar<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Calendar<E> {
    /// An empty calendar at time 0.
    pub fn new() -> Self {
        Calendar {
            slots: Box::new(std::array::from_fn(|_| Vec::new())),
            occupied: [0; WORDS],
            now: 0,
            far: BinaryHeap::new(),
            far_next: Cycle::MAX,
            far_seq: 0,
            cursor: 0,
        }
    }

    /// Number of scheduled events: counted when asked (tests, draining),
    /// not kept by every schedule and pop.
    pub fn len(&self) -> usize {
        let mut n = self.far.len() - self.cursor;
        for (w, &word) in self.occupied.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                n += self.slots[w * 64 + bits.trailing_zeros() as usize].len();
                bits &= bits - 1;
            }
        }
        n
    }

    /// True when nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at time `at` (which must not be in the past).
    #[inline(always)]
    pub fn schedule(&mut self, at: Cycle, event: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        let at = at.max(self.now);
        if at - self.now < WHEEL as Cycle {
            let i = (at & MASK) as usize;
            self.occupied[i / 64] |= 1 << (i % 64);
            let slot = &mut self.slots[i];
            if slot.len() < slot.capacity() {
                slot.push(event);
            } else {
                // A tail call: the usual path makes no call at all, so its
                // callers need not save registers around one.
                self.grow_slot(i, event);
            }
        } else {
            self.schedule_far(at, event);
        }
    }

    /// [`Calendar::schedule`] into a slot that is full: grows it (rare once
    /// the slots have their working size).
    #[cold]
    #[inline(never)]
    fn grow_slot(&mut self, i: usize, event: E) {
        self.slots[i].push(event);
    }

    /// [`Calendar::schedule`] beyond the wheel: rare, and out of line so that
    /// the heap's push is not inlined into every caller of `schedule`.
    #[cold]
    #[inline(never)]
    fn schedule_far(&mut self, at: Cycle, event: E) {
        self.far_seq += 1;
        self.far_next = self.far_next.min(at);
        self.far.push(Far {
            time: at,
            seq: self.far_seq,
            event,
        });
    }

    /// The time of the earliest scheduled event, if any.
    pub fn next_time(&self) -> Option<Cycle> {
        let t = self.next_due();
        (t != Cycle::MAX).then_some(t)
    }

    /// The time of the earliest scheduled event, `Cycle::MAX` when there is
    /// none: plain mins for the step loop, which runs this once per step.
    #[inline]
    pub fn next_due(&self) -> Cycle {
        self.next_in_wheel().min(self.far_next)
    }

    /// The earliest event time in the wheel (`Cycle::MAX`: none).
    #[inline]
    fn next_in_wheel(&self) -> Cycle {
        let start = (self.now & MASK) as usize;
        let (w0, b0) = (start / 64, start % 64);
        // First word: only bits at or after the current slot.
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            let i = w0 * 64 + first.trailing_zeros() as usize;
            return self.now + (i - start) as Cycle;
        }
        self.next_in_wheel_after(w0, b0, start)
    }

    /// [`Calendar::next_in_wheel`] past the current slot's word.
    fn next_in_wheel_after(&self, w0: usize, b0: usize, start: usize) -> Cycle {
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
            let mut bits = self.occupied[w];
            if k == WORDS {
                bits &= !(!0u64 << b0); // wrapped around: only bits before the current slot
            }
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                let ahead = (i + WHEEL - start) % WHEEL;
                return self.now + ahead as Cycle;
            }
        }
        Cycle::MAX
    }

    /// Moves time forward to `t` (no event may be due before `t`) and pulls
    /// far events that now fall inside the wheel.
    #[inline]
    pub fn advance_to(&mut self, t: Cycle) {
        debug_assert!(t >= self.now);
        debug_assert_eq!(
            self.cursor, 0,
            "the events due at {} were not all handed out",
            self.now
        );
        self.now = t;
        if self.far_next < t.saturating_add(WHEEL as Cycle) {
            self.pull_far();
        }
    }

    fn pull_far(&mut self) {
        while let Some(f) = self.far.peek() {
            if f.time - self.now >= WHEEL as Cycle {
                break;
            }
            let f = self.far.pop().expect("peeked");
            let i = (f.time & MASK) as usize;
            self.slots[i].push(f.event);
            self.occupied[i / 64] |= 1 << (i % 64);
        }
        self.far_next = self.far.peek().map_or(Cycle::MAX, |f| f.time);
    }

    /// Swaps the events due now into `out` (which must be empty), in
    /// scheduling order. Events scheduled for `now` while `out` is being
    /// processed land in the slot again: call until `out` comes back empty.
    pub fn take_due(&mut self, out: &mut Vec<E>) {
        debug_assert!(out.is_empty());
        debug_assert_eq!(self.cursor, 0, "pop_due is handing out this slot");
        let i = (self.now & MASK) as usize;
        if self.occupied[i / 64] & (1 << (i % 64)) == 0 {
            return;
        }
        std::mem::swap(&mut self.slots[i], out);
        self.occupied[i / 64] &= !(1 << (i % 64));
    }

    /// Hands out the next event due now, in scheduling order; an event
    /// scheduled for `now` while the earlier ones are handled comes out after
    /// them (as [`Calendar::take_due`] called until empty). `None` once the
    /// cycle's events are all out: call until then. The events are read in
    /// place, not moved out of their slot in batches.
    #[inline]
    pub fn pop_due(&mut self) -> Option<E>
    where
        E: Copy,
    {
        let i = (self.now & MASK) as usize;
        let slot = &mut self.slots[i];
        if let Some(&e) = slot.get(self.cursor) {
            self.cursor += 1;
            return Some(e);
        }
        if self.cursor > 0 {
            slot.clear();
            self.cursor = 0;
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        None
    }

    /// Every scheduled event in the order the calendar will hand them out
    /// (time, then scheduling order): the wheel from `now`, then the far
    /// events (all later than the wheel's, since `advance_to` pulls the near
    /// ones in). For the steady-state fast-forward, which compares and moves
    /// whole calendars.
    pub fn for_each_in_order(&self, mut f: impl FnMut(Cycle, &E)) {
        let start = (self.now & MASK) as usize;
        // Occupied slots from `start` on, then those before it (wrapped).
        for (from, to) in [(start, WHEEL), (0, start)] {
            for w in from / 64..to.div_ceil(64) {
                let mut bits = self.occupied[w];
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if i < from || i >= to {
                        continue;
                    }
                    let ahead = (i + WHEEL - start) % WHEEL;
                    for e in &self.slots[i] {
                        f(self.now + ahead as Cycle, e);
                    }
                }
            }
        }
        let mut far: Vec<&Far<E>> = self.far.iter().collect();
        far.sort_by_key(|x| (x.time, x.seq));
        for x in far {
            f(x.time, &x.event);
        }
    }

    /// Empties the calendar, returning its events in order (see
    /// [`Calendar::for_each_in_order`]).
    pub fn drain_in_order(&mut self) -> Vec<(Cycle, E)> {
        let mut out = Vec::with_capacity(self.len());
        let start = (self.now & MASK) as usize;
        for ahead in 0..WHEEL {
            let i = (start + ahead) & MASK as usize;
            if self.occupied[i / 64] & (1 << (i % 64)) != 0 {
                let t = self.now + ahead as Cycle;
                out.extend(self.slots[i].drain(..).map(|e| (t, e)));
            }
        }
        self.occupied = [0; WORDS];
        self.far_next = Cycle::MAX;
        let mut far = std::mem::take(&mut self.far).into_vec();
        far.sort_by_key(|x| (x.time, x.seq));
        out.extend(far.into_iter().map(|x| (x.time, x.event)));
        out
    }

    /// The current time of the calendar.
    pub fn now(&self) -> Cycle {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(c: &mut Calendar<u32>) -> Vec<(Cycle, u32)> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while let Some(t) = c.next_time() {
            c.advance_to(t);
            loop {
                c.take_due(&mut buf);
                if buf.is_empty() {
                    break;
                }
                out.extend(buf.drain(..).map(|e| (t, e)));
            }
        }
        out
    }

    #[test]
    fn events_come_out_in_time_then_fifo_order() {
        let mut c = Calendar::new();
        c.schedule(5, 1);
        c.schedule(3, 2);
        c.schedule(5, 3);
        c.schedule(100_000, 4);
        c.schedule(WHEEL as Cycle + 7, 5);
        assert_eq!(c.len(), 5);
        assert_eq!(
            drain(&mut c),
            vec![
                (3, 2),
                (5, 1),
                (5, 3),
                (WHEEL as Cycle + 7, 5),
                (100_000, 4)
            ]
        );
        assert!(c.is_empty());
    }

    #[test]
    fn wraparound_finds_slots_before_the_cursor() {
        let mut c = Calendar::new();
        c.advance_to(WHEEL as Cycle - 3);
        c.schedule(WHEEL as Cycle + 10, 9); // slot index 10, behind the cursor
        c.schedule(WHEEL as Cycle - 1, 8);
        assert_eq!(
            drain(&mut c),
            vec![(WHEEL as Cycle - 1, 8), (WHEEL as Cycle + 10, 9)]
        );
    }

    #[test]
    fn pop_due_hands_out_what_take_due_would() {
        let mut c: Calendar<u32> = Calendar::new();
        c.schedule(3, 1);
        c.schedule(3, 2);
        c.schedule(5, 9);
        c.advance_to(3);
        let mut out = Vec::new();
        while let Some(e) = c.pop_due() {
            if e == 1 {
                c.schedule(3, 3); // joins the end of the cycle's events
            }
            out.push(e);
        }
        assert_eq!(out, vec![1, 2, 3]);
        assert_eq!((c.len(), c.next_time()), (1, Some(5)));
        c.schedule(3, 4); // after the cycle's events were all out: seen again
        assert_eq!(c.next_time(), Some(3));
        assert_eq!(c.pop_due(), Some(4));
        assert_eq!(c.pop_due(), None);
        assert_eq!(drain(&mut c), vec![(5, 9)]);
    }

    #[test]
    fn zero_delay_events_are_seen_in_the_same_cycle() {
        let mut c: Calendar<u32> = Calendar::new();
        c.schedule(0, 1);
        let mut buf = Vec::new();
        c.take_due(&mut buf);
        assert_eq!(buf, vec![1]);
        buf.clear();
        c.schedule(0, 2);
        c.take_due(&mut buf);
        assert_eq!(buf, vec![2]);
    }
}
