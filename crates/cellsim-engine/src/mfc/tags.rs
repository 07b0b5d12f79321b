//! Tag groups: 32 counters of commands not yet complete.
//!
//! A command counts in its tag group from the moment the SPU issues it until
//! the MFC retires it; `mfc_read_tag_status_*` reports the groups of the tag
//! mask that have nothing left.

/// How a tag-status read completes (`MFC_WrTagUpdate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagUpdate {
    /// Return the current status at once (0).
    Immediate,
    /// Block until any group in the mask is complete (1).
    Any,
    /// Block until every group in the mask is complete (2).
    All,
}

/// Outstanding commands per tag group.
#[derive(Debug, Clone, Default)]
pub struct TagGroups {
    outstanding: [u16; 32],
}

impl TagGroups {
    /// Writes the groups' counts (see [`crate::steady`]).
    pub(crate) fn shape(&self, s: &mut crate::steady::Shape) {
        // Four counts to a word.
        for w in self.outstanding.chunks(4) {
            s.raw(w.iter().fold(0, |m, &c| m << 16 | c as u64));
        }
    }

    /// A command of group `tag` was issued.
    #[inline]
    pub fn add(&mut self, tag: u32) {
        self.outstanding[tag as usize] += 1;
    }

    /// A command of group `tag` retired.
    #[inline]
    pub fn retire(&mut self, tag: u32) {
        debug_assert!(self.outstanding[tag as usize] > 0);
        self.outstanding[tag as usize] -= 1;
    }

    /// Bit `i` set when group `i` is in `mask` and has nothing outstanding.
    #[inline]
    pub fn status(&self, mask: u32) -> u32 {
        let mut s = 0;
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            if self.outstanding[i as usize] == 0 {
                s |= 1 << i;
            }
            m &= m - 1;
        }
        s
    }

    /// Whether a read with `mode` and `mask` would complete now.
    #[inline]
    pub fn satisfied(&self, mask: u32, mode: TagUpdate) -> bool {
        match mode {
            TagUpdate::Immediate => true,
            TagUpdate::Any => self.status(mask) != 0,
            TagUpdate::All => self.status(mask) == mask,
        }
    }

    /// Commands outstanding in group `tag`.
    pub fn count(&self, tag: u32) -> u16 {
        self.outstanding[tag as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_and_all() {
        let mut t = TagGroups::default();
        t.add(1);
        t.add(3);
        let mask = (1 << 1) | (1 << 3) | (1 << 5);
        assert_eq!(t.status(mask), 1 << 5);
        assert!(t.satisfied(mask, TagUpdate::Any));
        assert!(!t.satisfied(mask, TagUpdate::All));
        t.retire(1);
        t.retire(3);
        assert!(t.satisfied(mask, TagUpdate::All));
    }
}
