//! A set-associative cache directory (tags only: the bytes stay in main
//! memory, which every access reads and writes directly — the caches decide
//! *when* an access completes, never *what* it sees).
//!
//! Lines are 128 bytes; replacement is least-recently-used within a set; a
//! way may be *pending* (reserved for a line on its way in) and *dirty*
//! (written since it came in: it must be cast out when evicted).

/// Line size in bytes (the PPE's caches and the lock-line reservations).
pub const LINE: u64 = 128;

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Not in the cache.
    Miss,
    /// Present, at this way index.
    Hit(usize),
    /// Reserved for the line, which has not arrived yet (way index).
    Pending(usize),
}

#[derive(Debug, Clone, Copy, Default)]
struct Way {
    /// Line number + 1; 0 = invalid.
    tag: u64,
    /// Last use, for LRU.
    stamp: u64,
    dirty: bool,
    pending: bool,
}

/// The directory of one cache.
#[derive(Debug, Clone)]
pub struct Cache {
    sets: u64,
    ways: usize,
    w: Vec<Way>,
    clock: u64,
}

/// A line that left the cache to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    /// The line number.
    pub line: u64,
    /// It was written and must go back to memory.
    pub dirty: bool,
}

impl Cache {
    /// A cache of `bytes` bytes with `ways` ways of 128-byte lines.
    pub fn new(bytes: u64, ways: usize) -> Cache {
        let lines = (bytes / LINE).max(ways as u64);
        let sets = (lines / ways as u64).max(1);
        Cache {
            sets,
            ways,
            w: vec![Way::default(); (sets as usize) * ways],
            clock: 0,
        }
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.sets * self.ways as u64 * LINE
    }

    #[inline]
    fn set_range(&self, line: u64) -> std::ops::Range<usize> {
        let s = (line % self.sets) as usize * self.ways;
        s..s + self.ways
    }

    /// Where `line` is, without touching the LRU order.
    #[inline]
    pub fn lookup(&self, line: u64) -> Lookup {
        for i in self.set_range(line) {
            let w = &self.w[i];
            if w.tag == line + 1 {
                return if w.pending {
                    Lookup::Pending(i)
                } else {
                    Lookup::Hit(i)
                };
            }
        }
        Lookup::Miss
    }

    /// Marks way `i` most recently used.
    #[inline]
    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.w[i].stamp = self.clock;
    }

    /// Marks way `i` written (it will be cast out when evicted).
    #[inline]
    pub fn set_dirty(&mut self, i: usize) {
        self.w[i].dirty = true;
    }

    /// The least recently used way of `line`'s set that is not pending (an
    /// invalid way first), or `None` when every way waits for a line.
    pub fn victim_way(&self, line: u64) -> Option<usize> {
        self.set_range(line)
            .filter(|&i| !self.w[i].pending)
            .min_by_key(|&i| (self.w[i].tag != 0, self.w[i].stamp))
    }

    /// The line in way `i` if it holds a valid one.
    pub fn line_at(&self, i: usize) -> Option<Victim> {
        let w = &self.w[i];
        (w.tag != 0 && !w.pending).then(|| Victim {
            line: w.tag - 1,
            dirty: w.dirty,
        })
    }

    /// Puts `line` into way `i` (pending or present), evicting what was there.
    pub fn fill_way(&mut self, i: usize, line: u64, pending: bool) -> Option<Victim> {
        let old = self.line_at(i);
        self.clock += 1;
        self.w[i] = Way {
            tag: line + 1,
            stamp: self.clock,
            dirty: false,
            pending,
        };
        old
    }

    /// Inserts `line` as present in its LRU way; returns what it evicted.
    /// Does nothing when the line is already there or every way is pending.
    pub fn insert(&mut self, line: u64) -> Option<Victim> {
        match self.lookup(line) {
            Lookup::Hit(i) => {
                self.touch(i);
                None
            }
            Lookup::Pending(i) => {
                self.w[i].pending = false;
                self.touch(i);
                None
            }
            Lookup::Miss => {
                let i = self.victim_way(line)?;
                self.fill_way(i, line, false)
            }
        }
    }

    /// A pending way's line has arrived.
    pub fn arrive(&mut self, i: usize) {
        self.w[i].pending = false;
        self.touch(i);
    }

    /// Drops `line` (present or pending); returns whether it was present and dirty.
    pub fn invalidate(&mut self, line: u64) -> Option<Victim> {
        for i in self.set_range(line) {
            if self.w[i].tag == line + 1 {
                let v = self.line_at(i);
                self.w[i] = Way::default();
                return v.or(Some(Victim { line, dirty: false }));
            }
        }
        None
    }

    /// Number of valid (present) lines.
    pub fn valid_lines(&self) -> usize {
        self.w.iter().filter(|w| w.tag != 0 && !w.pending).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        // 2 sets x 2 ways.
        let mut c = Cache::new(4 * LINE, 2);
        assert_eq!(c.insert(0), None);
        assert_eq!(c.insert(2), None); // same set as 0
        if let Lookup::Hit(i) = c.lookup(0) {
            c.touch(i);
        }
        let v = c.insert(4).expect("a full set evicts");
        assert_eq!(v.line, 2, "line 0 was used more recently");
        assert!(matches!(c.lookup(0), Lookup::Hit(_)));
        assert_eq!(c.lookup(2), Lookup::Miss);
    }

    #[test]
    fn pending_ways_are_not_victims_and_dirty_lines_say_so() {
        let mut c = Cache::new(2 * LINE, 2); // 1 set x 2 ways
        let i = c.victim_way(0).unwrap();
        c.fill_way(i, 0, true);
        assert!(matches!(c.lookup(0), Lookup::Pending(_)));
        c.insert(1);
        if let Lookup::Hit(j) = c.lookup(1) {
            c.set_dirty(j);
        }
        assert_eq!(c.victim_way(5), Some(1 - i), "only the present line can go");
        let v = c.fill_way(1 - i, 5, false).unwrap();
        assert_eq!(
            v,
            Victim {
                line: 1,
                dirty: true
            }
        );
        c.arrive(i);
        assert!(matches!(c.lookup(0), Lookup::Hit(_)));
        assert_eq!(c.valid_lines(), 2);
        assert!(c.invalidate(0).is_some());
        assert_eq!(c.lookup(0), Lookup::Miss);
    }
}
