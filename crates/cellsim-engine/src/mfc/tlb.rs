//! The MFC's address translation: its TLB.
//!
//! Every DMA names effective (virtual) addresses; the MFC's MMU translates
//! them before unrolling (Kistler et al. 2006's DMA flow, step 4: "When the translation
//! is available in the TLB, processing proceeds ... On a TLB miss, the MMU
//! performs the translation, using the page tables stored in main memory,
//! and updates the TLB. The DMA entry is updated and must be reselected").
//! A miss holds its command for `miss` cycles while the DMAC works on the
//! others; the page then stays in the TLB until it is the least recently used
//! of its set. The MMU walks the page table for one miss at a time, and a
//! command reaching a page whose walk is still under way waits for that walk. Its reach — entries times the page size — decides how often a
//! stream misses: 256 x 4 KB is 1 MB, 256 x 64 KB is 16 MB.

use crate::time::Cycle;

/// One SPE's TLB: `sets` x `ways` entries, least recently used replaced.
#[derive(Debug, Clone)]
pub struct Tlb {
    /// Per set, per way: (tag, last use, cycle the translation is there);
    /// tag = (virtual page number << 6) | page shift, 0 = empty.
    entries: Vec<(u64, u64, Cycle)>,
    /// The sets holding a translation, in order (a set fills its ways in
    /// order and never empties: the first unused way is the least
    /// recently used): what a shape writes.
    filled: Vec<u32>,
    ways: usize,
    set_mask: u64,
    clock: u64,
    miss: Cycle,
    /// When the table-walk engine is free for the next miss.
    walk_free: Cycle,
    /// Lookups that missed.
    pub misses: u64,
    /// Lookups.
    pub lookups: u64,
}

impl Tlb {
    /// An empty TLB of `entries` entries in sets of `ways`; a miss costs `miss` cycles.
    pub fn new(entries: usize, ways: usize, miss: Cycle) -> Tlb {
        Tlb {
            entries: vec![(0, 0, 0); entries],
            filled: Vec::new(),
            ways,
            set_mask: (entries / ways) as u64 - 1,
            clock: 0,
            miss,
            walk_free: 0,
            misses: 0,
            lookups: 0,
        }
    }

    /// Translates the page of `ea` (pages of `1 << shift` bytes) at `now`:
    /// `None` on a hit, else the cycles to wait (a miss: the walk, after which
    /// the page is in the TLB; a page whose walk is under way: its rest).
    #[inline]
    pub fn translate(&mut self, ea: u64, shift: u32, now: Cycle) -> Option<Cycle> {
        let vpn = ea >> shift;
        let tag = (vpn << 6) | shift as u64;
        self.lookups += 1;
        self.clock += 1;
        let set = (vpn & self.set_mask) as usize * self.ways;
        let ways = &mut self.entries[set..set + self.ways];
        if let Some(w) = ways.iter_mut().find(|w| w.0 == tag) {
            w.1 = self.clock;
            return (w.2 > now).then(|| w.2 - now);
        }
        self.misses += 1;
        if ways[0].1 == 0 {
            let set = (vpn & self.set_mask) as u32;
            let at = self.filled.partition_point(|&s| s < set);
            self.filled.insert(at, set);
        }
        let victim = ways
            .iter_mut()
            .min_by_key(|w| w.1)
            .expect("a set has at least one way");
        let done = now.max(self.walk_free) + self.miss;
        self.walk_free = done;
        *victim = (tag, self.clock, done);
        Some(done - now)
    }
}

impl Tlb {
    /// Writes the TLB (see [`crate::steady`]): each entry's page and its
    /// rank by last use within its set (replacement only compares those),
    /// its walk's end and the page walker's, relative to now.
    pub(crate) fn shape(&self, s: &mut crate::steady::Shape) {
        // Only the sets in use (the others are all alike), each with its
        // used ways (the first ones).
        s.raw(self.filled.len() as u64);
        for &i in &self.filled {
            let set = &self.entries[i as usize * self.ways..][..self.ways];
            let used = set.iter().take_while(|w| w.1 != 0).count();
            s.raw(i as u64);
            s.raw(used as u64);
            for w in &set[..used] {
                s.raw(w.0);
                let rank = set.iter().filter(|o| o.1 < w.1).count() as u64;
                s.raw(rank);
                s.time(w.2);
            }
        }
        s.time(self.walk_free);
    }

    /// Use counters: lookups, misses and the clock of last uses.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (self.lookups, self.misses, self.clock)
    }

    /// A jump of `k` periods that started with counts `then` (see
    /// `machine::steady`): each period made the same lookups in the same
    /// order, so the entries used since then were last used `k` periods
    /// later, every count grows `k` times its increase, and walks under way
    /// end `dt` later.
    pub(crate) fn jumped(&mut self, then: (u64, u64, u64), k: u64, now: Cycle, dt: Cycle) {
        let (lookups, misses, clock) = then;
        let d = self.clock - clock;
        for w in &mut self.entries {
            if w.1 > clock {
                w.1 += k * d;
            }
            if w.2 > now {
                w.2 += dt;
            }
        }
        self.clock += k * d;
        self.lookups += k * (self.lookups - lookups);
        self.misses += k * (self.misses - misses);
        if self.walk_free > now {
            self.walk_free += dt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_misses_once_then_hits_until_evicted() {
        let mut t = Tlb::new(8, 2, 300);
        assert_eq!(t.translate(0x1_0000, 16, 700), Some(300));
        assert_eq!(
            t.translate(0x1_FFFF, 16, 800),
            Some(200),
            "its walk is under way"
        );
        assert_eq!(t.translate(0x1_FFFF, 16, 1000), None, "same 64 KB page");
        // Pages 1, 5, 9 share set 1 of 4 (two ways): the least recently used goes.
        assert_eq!(t.translate(5 << 16, 16, 1000), Some(300));
        assert_eq!(t.translate(0x1_0000, 16, 1000), None);
        assert_eq!(
            t.translate(9 << 16, 16, 1000),
            Some(600),
            "evicts page 5, walks after its walk"
        );
        assert_eq!(t.translate(0x1_0000, 16, 1000), None);
        assert_eq!(t.translate(5 << 16, 16, 2000), Some(300));
        assert_eq!((t.lookups, t.misses), (8, 4));
    }

    #[test]
    fn page_size_sets_the_reach() {
        // Two passes over 16 MB: 256 entries of 64 KB hold it all, so the
        // second pass hits; 4 KB pages (1 MB of reach) miss on every page again.
        let span = 16u64 << 20;
        for (shift, first, second) in [(16u32, 256u64, 0u64), (12, 4096, 4096)] {
            let mut t = Tlb::new(256, 4, 100);
            let mut pass = || {
                let before = t.misses;
                for a in (0..span).step_by(4096) {
                    t.translate(a, shift, u64::MAX / 2);
                }
                t.misses - before
            };
            assert_eq!(
                (pass(), pass()),
                (first, second),
                "pages of 2^{shift} bytes"
            );
        }
    }
}
