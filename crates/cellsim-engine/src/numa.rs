//! Main memory of a blade: each chip's MIC has its own memory (Jiménez-González et al. 2007: "two
//! memory banks, one associated to each chip"), and the operating system
//! places every page on one of them (a NUMA node) as Linux did: by the
//! policy of the allocation (numactl's, or the machine file's default).
//!
//! - `first-touch` (Linux's default, "local"): the node of the thread that
//!   touches the page first. PPE programs run on chip 0, so pages go to node
//!   0 until it is full, then to node 1 (Linux falls back to another node).
//! - `interleave` (`numactl --interleave=all`): pages alternate between the
//!   nodes.
//! - `node0` / `node1` (`numactl --membind`): every page on that node; an
//!   allocation larger than what is left there is an error.
//! - `weighted`: a fixed share of the pages on node 1, chosen page by page by
//!   a hash, so every region gets the same mix (a calibration, not a Linux
//!   policy: see `machines/blade21.toml`).
//!
//! Pages are `page_kb` (4 KB or 64 KB, as the kernel was built) unless an
//! allocation asks for 16 MB huge pages (hugetlbfs); a page's size matters to
//! the MFC's TLB ([`crate::mfc::tlb`]).

use crate::config::NumaPolicy;

/// Where main-memory pages are and how big they are.
#[derive(Debug, Clone)]
pub struct Numa {
    nodes: usize,
    /// Base page size, as a shift (12: 4 KB, 16: 64 KB).
    page_shift: u32,
    node_bytes: u64,
    used: [u64; 2],
    /// Per base page: its node, and the page size (shift) it belongs to.
    /// Empty on a one-node machine with one page size: node 0, base pages.
    pages: Vec<Page>,
    policy: NumaPolicy,
}

/// A base page's placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Page {
    node: u8,
    shift: u8,
    placed: bool,
}

/// The shift of a 16 MB huge page.
pub const HUGE_SHIFT: u32 = 24;

impl Numa {
    /// `memory_bytes` split evenly over `nodes` nodes, pages of `page_kb`.
    pub fn new(nodes: usize, memory_bytes: u64, page_kb: u64, policy: NumaPolicy) -> Numa {
        let page_shift = (page_kb * 1024).trailing_zeros();
        Numa {
            nodes,
            page_shift,
            node_bytes: memory_bytes / nodes as u64,
            used: [0; 2],
            pages: Vec::new(),
            policy,
        }
    }

    /// The base page size as a shift.
    #[inline]
    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// The node holding main-memory offset `addr`.
    #[inline]
    pub fn node_of(&self, addr: u64) -> usize {
        match self.pages.get((addr >> self.page_shift) as usize) {
            Some(p) => p.node as usize,
            None => 0,
        }
    }

    /// The size (as a shift) of the page holding `addr`.
    #[inline]
    pub fn page_shift_of(&self, addr: u64) -> u32 {
        match self.pages.get((addr >> self.page_shift) as usize) {
            Some(p) if p.placed => p.shift as u32,
            _ => self.page_shift,
        }
    }

    /// Bytes placed on each node so far.
    pub fn used(&self) -> [u64; 2] {
        self.used
    }

    /// The bytes each node holds.
    pub fn node_bytes(&self) -> u64 {
        self.node_bytes
    }

    /// Places the pages of `[start, start + size)`, allocated with `policy`
    /// (the machine's default if `None`) and pages of `1 << shift` bytes.
    /// Pages already placed (shared with an earlier allocation) stay where they are.
    pub fn place(
        &mut self,
        start: u64,
        size: u64,
        policy: Option<NumaPolicy>,
        shift: u32,
    ) -> Result<(), String> {
        let policy = policy.unwrap_or(self.policy);
        if self.nodes == 1
            && shift == self.page_shift
            && !matches!(policy, NumaPolicy::Node(n) if n > 0)
        {
            return Ok(());
        }
        if let NumaPolicy::Node(n) = policy {
            if n as usize >= self.nodes {
                return Err(format!(
                    "NUMA node {n} does not exist: this machine has {} node{} (0{})",
                    self.nodes,
                    if self.nodes == 1 { "" } else { "s" },
                    if self.nodes == 2 { " and 1" } else { "" }
                ));
            }
        }
        let first = (start >> self.page_shift) as usize;
        let last = ((start + size.max(1) - 1) >> self.page_shift) as usize;
        if self.pages.len() <= last {
            self.pages.resize(
                last + 1,
                Page {
                    node: 0,
                    shift: self.page_shift as u8,
                    placed: false,
                },
            );
        }
        let base = 1u64 << self.page_shift;
        let new: Vec<usize> = (first..=last).filter(|&i| !self.pages[i].placed).collect();
        if let NumaPolicy::Node(n) = policy {
            let want = new.len() as u64 * base;
            let left = self.node_bytes - self.used[n as usize];
            if want > left {
                return Err(format!(
                    "{size} bytes bound to NUMA node {n} do not fit: the node holds {} MB and {} MB are left",
                    self.node_bytes >> 20,
                    left >> 20
                ));
            }
        }
        // A huge page is placed whole: its base pages share one node.
        let per = shift.saturating_sub(self.page_shift);
        for i in new {
            let node = self.pick((i >> per) as u64, policy);
            self.pages[i] = Page {
                node: node as u8,
                shift: shift as u8,
                placed: true,
            };
            self.used[node] += base;
        }
        Ok(())
    }

    /// The node of new base page `page` under `policy`.
    fn pick(&self, page: u64, policy: NumaPolicy) -> usize {
        let fits = |n: usize| self.used[n] < self.node_bytes;
        match policy {
            NumaPolicy::FirstTouch => {
                if fits(0) || self.nodes == 1 {
                    0
                } else {
                    1
                }
            }
            NumaPolicy::Interleave => (page as usize) % self.nodes,
            NumaPolicy::Node(n) => n as usize,
            NumaPolicy::Weighted(per_mille) => {
                if self.nodes == 1 {
                    0
                } else {
                    (splitmix(page) % 1000 < per_mille as u64) as usize
                }
            }
        }
    }
}

/// splitmix64: a fixed hash of a page number.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn first_touch_fills_node_zero_then_falls_back() {
        let mut n = Numa::new(2, 8 * MB, 64, NumaPolicy::FirstTouch);
        n.place(0, 3 * MB, None, 16).unwrap();
        assert_eq!(n.node_of(MB), 0);
        n.place(3 * MB, 2 * MB, None, 16).unwrap();
        assert_eq!(n.node_of(3 * MB + 5), 0);
        assert_eq!(n.node_of(4 * MB + 65536), 1, "node 0's 4 MB are used up");
        assert_eq!(n.used(), [4 * MB, MB]);
    }

    #[test]
    fn interleave_alternates_pages_and_binding_checks_room() {
        let mut n = Numa::new(2, 8 * MB, 64, NumaPolicy::Interleave);
        n.place(0, 4 * 65536, None, 16).unwrap();
        let nodes: Vec<usize> = (0..4).map(|p| n.node_of(p * 65536)).collect();
        assert_eq!(nodes, [0, 1, 0, 1]);
        let err = n
            .place(MB, 5 * MB, Some(NumaPolicy::Node(1)), 16)
            .unwrap_err();
        assert!(err.contains("node 1") && err.contains("4 MB"), "{err}");
        assert!(n.place(MB, MB, Some(NumaPolicy::Node(2)), 16).is_err());
        n.place(MB, MB, Some(NumaPolicy::Node(1)), 16).unwrap();
        assert_eq!(n.node_of(MB + 3), 1);
    }

    #[test]
    fn pages_keep_their_place_and_huge_pages_their_size() {
        let mut n = Numa::new(2, 64 * MB, 64, NumaPolicy::Interleave);
        n.place(0, 100, Some(NumaPolicy::Node(1)), 16).unwrap();
        n.place(200, 100, Some(NumaPolicy::Node(0)), 16).unwrap();
        assert_eq!(
            n.node_of(250),
            1,
            "the page was placed by the first allocation"
        );
        n.place(16 * MB, 16 * MB, None, HUGE_SHIFT).unwrap();
        assert_eq!(n.page_shift_of(16 * MB + 12345), HUGE_SHIFT);
        assert_eq!(n.page_shift_of(0), 16);
    }

    #[test]
    fn a_weighted_share_of_pages_is_remote() {
        let mut n = Numa::new(2, 512 * MB, 64, NumaPolicy::Weighted(300));
        n.place(0, 256 * MB, None, 16).unwrap();
        let share = n.used()[1] as f64 / (256 * MB) as f64;
        assert!((share - 0.3).abs() < 0.02, "{share}");
    }
}
