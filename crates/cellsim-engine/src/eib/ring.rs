//! One data ring.
//!
//! A ring is 12 segments in one direction; segment `i` of a clockwise ring
//! joins ramp `i` to ramp `i+1`, of a counter-clockwise ring ramp `i` to
//! `i-1`. A transfer's beats cross segment `k` of its path `k` hops after they
//! leave the sender, so the reservation of each segment is staggered by the hop
//! delay. Besides free segments a ring needs a free transfer slot (at most
//! three transfers at once) and respects its start interval (architecture
//! notes: a new operation every 3 bus cycles).

use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Direction, Ramp, RAMPS};

/// Most concurrent transfers a ring may carry (the machine files' limit).
const MAX_LANES: usize = 6;

/// One 16-byte data ring.
#[derive(Debug, Clone)]
pub struct Ring {
    /// Direction of travel.
    pub dir: Direction,
    /// `path[src][k]`: the k-th segment on the way from ramp `src` (k < 6).
    path: [[u8; 6]; RAMPS],
    /// When each segment frees. Indexed by a `u8` of `path`, so 256 entries
    /// (of which the first `RAMPS` are segments): a lookup needs no bounds
    /// check, on the path of every grant.
    seg_free: [Cycle; 256],
    /// The latest of `seg_free` (and of the lanes' ends: a transfer's end is
    /// its last segment's free time): when it is past, the whole ring is free.
    busy_until: Cycle,
    /// End cycles of the transfers in flight (one slot per concurrent
    /// transfer); lanes past `lanes` hold `Cycle::MAX` and are never free.
    slots: [Cycle; MAX_LANES],
    lanes: usize,
    next_start: Cycle,
    start_interval: Cycle,
}

impl Ring {
    /// An idle ring.
    pub fn new(dir: Direction, max_transfers: usize, start_interval: Cycle) -> Ring {
        assert!(
            max_transfers <= MAX_LANES,
            "the machine files allow {MAX_LANES}"
        );
        let mut path = [[0u8; 6]; RAMPS];
        for (src, p) in path.iter_mut().enumerate() {
            for (k, seg) in p.iter_mut().enumerate() {
                *seg = match dir {
                    Direction::Clockwise => (src + k) % RAMPS,
                    Direction::CounterClockwise => (src + RAMPS - k) % RAMPS,
                } as u8;
            }
        }
        Ring {
            dir,
            path,
            seg_free: [0; 256],
            busy_until: 0,
            slots: std::array::from_fn(|i| if i < max_transfers { 0 } else { Cycle::MAX }),
            lanes: max_transfers,
            next_start: 0,
            start_interval,
        }
    }

    /// Index of the `k`-th segment on the path leaving `src`.
    #[inline]
    pub fn segment(&self, src: Ramp, k: u32) -> usize {
        self.path[src.idx()][k as usize] as usize
    }

    /// Earliest cycle (not before `now`) at which a transfer leaving `src` over
    /// `hops` segments could start on this ring, given current reservations.
    #[inline]
    pub fn earliest_start(&self, now: Cycle, src: Ramp, hops: u32, hop: Cycle) -> Cycle {
        let mut t = now.max(self.next_start);
        if self.busy_until <= t {
            // Every segment and lane is free by then.
            return t;
        }
        let path = &self.path[src.idx()];
        let mut lag = 0;
        for &seg in &path[..hops as usize] {
            t = t.max(self.seg_free[seg as usize].saturating_sub(lag));
            lag += hop;
        }
        // A free transfer slot: the earliest-ending transfer must be over.
        let mut min_end = Cycle::MAX;
        for &e in &self.slots {
            if e <= t {
                return t;
            }
            min_end = min_end.min(e);
        }
        t.max(min_end)
    }

    /// Reserves the path for a transfer starting `now` whose beats take
    /// `duration` cycles at each segment. Returns when the ring slot frees.
    #[inline]
    pub fn occupy(
        &mut self,
        now: Cycle,
        src: Ramp,
        hops: u32,
        hop: Cycle,
        duration: Cycle,
    ) -> (Cycle, u8) {
        self.reserve(now, src, hops, hop, duration, |_| {})
    }

    /// [`Ring::occupy`], calling `each(segment)` for every segment reserved.
    #[inline(always)]
    pub(crate) fn reserve(
        &mut self,
        now: Cycle,
        src: Ramp,
        hops: u32,
        hop: Cycle,
        duration: Cycle,
        mut each: impl FnMut(usize),
    ) -> (Cycle, u8) {
        let path = &self.path[src.idx()];
        let mut at = now + duration;
        for &seg in &path[..hops as usize] {
            self.seg_free[seg as usize] = at;
            each(seg as usize);
            at += hop;
        }
        let end = now + hops.saturating_sub(1) as Cycle * hop + duration;
        let lane = self
            .slots
            .iter()
            .position(|e| *e <= now)
            .expect("earliest_start checked a free slot");
        self.slots[lane] = end;
        self.busy_until = self.busy_until.max(end);
        self.next_start = now + self.start_interval;
        (end, lane as u8)
    }
}

impl Ring {
    /// Writes the ring's timing state (see [`crate::steady`]).
    /// `back`: how far a transfer's hops reach back (see [`Shape::time_back`]).
    pub(crate) fn shape(&self, s: &mut Shape, back: Cycle) {
        self.seg_free[..RAMPS]
            .iter()
            .for_each(|&t| s.time_back(t, back));
        // Which lane holds which transfer shows only in traces and the
        // reservation log (neither is on while fast-forwarding): the
        // timing depends on the lanes' end times, in any order.
        let mut ends = self.slots;
        ends[..self.lanes].sort_unstable();
        ends[..self.lanes].iter().for_each(|&t| s.time(t));
        s.time(self.next_start);
    }

    /// Moves every time of the ring `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        self.seg_free[..RAMPS].iter_mut().for_each(|t| shift(t, dt));
        self.slots.iter_mut().for_each(|t| shift(t, dt));
        shift(&mut self.busy_until, dt);
        shift(&mut self.next_start, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_follow_the_direction() {
        let cw = Ring::new(Direction::Clockwise, 3, 6);
        let ccw = Ring::new(Direction::CounterClockwise, 3, 6);
        assert_eq!(
            (0..3).map(|k| cw.segment(Ramp(10), k)).collect::<Vec<_>>(),
            vec![10, 11, 0]
        );
        assert_eq!(
            (0..3).map(|k| ccw.segment(Ramp(1), k)).collect::<Vec<_>>(),
            vec![1, 0, 11]
        );
    }

    #[test]
    fn at_most_three_transfers_and_a_start_interval() {
        let mut r = Ring::new(Direction::Clockwise, 3, 6);
        // Disjoint 1-hop paths, started as fast as the interval allows.
        let mut t = 0;
        for src in [0u8, 2, 4] {
            t = r.earliest_start(t, Ramp(src), 1, 2);
            r.occupy(t, Ramp(src), 1, 2, 16);
        }
        assert_eq!(t, 12, "starts are 6 cycles apart");
        assert_eq!(r.earliest_start(t, Ramp(6), 1, 2), 18, "the start interval");
        // With a short interval, a fourth waits for the first to end (0 + 16).
        let mut r = Ring::new(Direction::Clockwise, 3, 2);
        for (i, src) in [0u8, 2, 4].into_iter().enumerate() {
            r.occupy(2 * i as Cycle, Ramp(src), 1, 2, 16);
        }
        assert_eq!(r.earliest_start(6, Ramp(6), 1, 2), 16);
    }

    #[test]
    fn staggered_segments_let_a_follower_start_early() {
        let mut r = Ring::new(Direction::Clockwise, 3, 2);
        r.occupy(0, Ramp(0), 3, 2, 16); // segment 1 busy until 18, segment 2 until 20
                                        // A transfer entering at ramp 1 needs segment 1 from its start.
        assert_eq!(r.earliest_start(2, Ramp(1), 1, 2), 18);
    }
}
