//! Bus requests: the up-to-128-byte transactions the EIB carries.
//!
//! The DMAC unrolls each MFC command into bus requests ([`BusOp`]); each one
//! goes through the command bus (snoop, combined response) and then the data
//! arbiter and a ring. They live in a [`Slab`] so that a request is an index,
//! and finished slots are reused without allocating.

use crate::time::Cycle;
use crate::topology::Ramp;

/// Index of a bus request in the slab.
pub type OpId = u32;

/// Direction of the data relative to the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Data flows from the target to the requester (a get).
    Read,
    /// Data flows from the requester to the target (a put).
    Write,
}

/// Who issued a bus request and must hear of its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// An MFC command: physical SPE and command-queue slot.
    Mfc {
        /// Physical SPE number.
        spe: u8,
        /// Slot in that SPE's command queue.
        slot: u8,
        /// The slot is in the proxy queue (a command the PPE issued).
        proxy: bool,
    },
    /// A PPE load or store through the memory map (non-cacheable).
    Ppe {
        /// The PPE thread; a load's value is its reply.
        thread: u32,
    },
    /// The PPE's L2: a line fetch (its miss machine) or a castout
    /// ([`crate::ppu::CASTOUT`]). The bytes are already where they belong
    /// (the caches time accesses, main memory holds the data).
    PpeCache {
        /// The [`crate::ppu::BusReq`] id.
        id: u32,
    },
    /// Synthetic traffic (speed benchmark); no data is moved.
    Synthetic,
}

/// Where a request's remote end lives, for moving the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// Main memory at this offset.
    Memory(u64),
    /// A local store, by physical SPE number.
    Ls {
        /// Physical SPE number.
        spe: u8,
        /// Byte offset.
        offset: u32,
    },
    /// A problem-state register of a physical SPE (mailbox, signal).
    Ps {
        /// Physical SPE number.
        spe: u8,
        /// Register offset in the problem-state area.
        reg: u32,
    },
    /// No data (synthetic traffic).
    None,
}

/// One bus request in flight.
#[derive(Debug, Clone, Copy)]
pub struct BusOp {
    /// Who issued it.
    pub owner: Owner,
    /// Read or write.
    pub kind: OpKind,
    /// The issuing element's ramp.
    pub requester: Ramp,
    /// The element that owns the remote address.
    pub target: Ramp,
    /// Bytes (1..=128).
    pub size: u32,
    /// Requester-side local-store offset.
    pub lsa: u32,
    /// Remote end.
    pub remote: Space,
    /// When the request reached the command bus queue.
    pub queued_at: Cycle,
    /// When its command phase ends (the combined response reaches the
    /// requester); the data may not move before, nor before the sender has
    /// heard it too (see [`BusOp::data_may_leave`]).
    pub respond_at: Cycle,
    /// The atomic command this request carries, if any.
    pub atomic: Option<crate::mfc::command::Atomic>,
    /// A putllc whose reservation was lost: no data moves.
    pub failed: bool,
    /// Where its data is on its way (see [`Leg`]).
    pub leg: Leg,
}

/// The part of its way a bus request's data is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// Sender and receiver are on one chip: one transfer.
    Within,
    /// Between the chips of a blade: across the sender's chip to its IOIF0.
    ToBif,
    /// Between the chips: from the receiver's IOIF0 across its chip.
    FromBif,
}

impl BusOp {
    /// A request of `size` bytes from `requester` to `target`, queued at
    /// `now`: from local-store address 0, no atomic, within the chip (the
    /// MFC's requests set those they need).
    pub fn new(
        owner: Owner,
        kind: OpKind,
        (requester, target): (Ramp, Ramp),
        size: u32,
        remote: Space,
        now: Cycle,
    ) -> BusOp {
        BusOp {
            owner,
            kind,
            requester,
            target,
            size,
            lsa: 0,
            remote,
            queued_at: now,
            respond_at: Cycle::MAX,
            atomic: None,
            failed: false,
            leg: Leg::Within,
        }
    }

    /// The sender and receiver of the leg the data is on now: the transfer
    /// itself on one chip; between the chips, to the sender's IOIF0 (leg 0),
    /// then from the receiver's IOIF0 (leg 1), the BIF between.
    #[inline]
    pub fn leg_ends(&self, topo: &crate::topology::Topology) -> (Ramp, Ramp) {
        let (src, dst) = (self.data_src(), self.data_dst());
        match self.leg {
            Leg::Within => (src, dst),
            Leg::ToBif => (src, topo.ioif0(src.chip())),
            Leg::FromBif => (topo.ioif0(dst.chip()), dst),
        }
    }

    /// The ramp that sends the data.
    #[inline]
    pub fn data_src(&self) -> Ramp {
        match self.kind {
            OpKind::Read => self.target,
            OpKind::Write => self.requester,
        }
    }

    /// When the data's sender has the combined response: at once on one
    /// chip; `crossing` later for a read whose target is on the other chip of
    /// a blade (the response crosses the BIF to it).
    #[inline]
    pub fn data_may_leave(&self, crossing: Cycle) -> Cycle {
        if self.kind == OpKind::Read && self.leg != Leg::Within {
            self.respond_at + crossing
        } else {
            self.respond_at
        }
    }

    /// The ramp that receives the data.
    #[inline]
    pub fn data_dst(&self) -> Ramp {
        match self.kind {
            OpKind::Read => self.requester,
            OpKind::Write => self.target,
        }
    }
}

/// A vector of slots with a free list: stable indices, no allocation once warm.
#[derive(Debug, Default)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    live: usize,
}

impl<T: Copy> Slab<T> {
    /// An empty slab.
    pub fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Stores `v` and returns its index.
    #[inline(always)]
    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = v;
            i
        } else {
            self.push_new(v)
        }
    }

    #[cold]
    fn push_new(&mut self, v: T) -> u32 {
        self.items.push(v);
        (self.items.len() - 1) as u32
    }

    /// Frees slot `i`.
    #[inline]
    pub fn remove(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }

    /// Number of live entries.
    #[inline]
    pub fn live(&self) -> usize {
        self.live
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

/// A first-in first-out queue on a power-of-two ring buffer: what the
/// per-element queues of the arbiter and the BIUs need (push at the back,
/// look at and take from the front, peek at the first few), with cheaper,
/// inlined operations than `VecDeque`. Grows by doubling; never shrinks.
#[derive(Debug, Clone)]
pub struct Fifo<T> {
    buf: Box<[T]>,
    head: usize,
    len: usize,
    mask: usize,
}

impl<T: Copy + Default> Fifo<T> {
    /// An empty queue with room for at least `capacity` items before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let n = capacity.max(4).next_power_of_two();
        Fifo {
            buf: vec![T::default(); n].into_boxed_slice(),
            head: 0,
            len: 0,
            mask: n - 1,
        }
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `v` at the back.
    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len > self.mask {
            self.grow();
        }
        self.buf[(self.head + self.len) & self.mask] = v;
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let n = self.buf.len();
        let mut buf = vec![T::default(); 2 * n];
        for (k, slot) in buf.iter_mut().take(self.len).enumerate() {
            *slot = self.buf[(self.head + k) & self.mask];
        }
        self.buf = buf.into_boxed_slice();
        self.head = 0;
        self.mask = 2 * n - 1;
    }

    /// The front item.
    #[inline]
    pub fn front(&self) -> Option<T> {
        (self.len > 0).then(|| self.buf[self.head])
    }

    /// Takes the front item.
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        Some(v)
    }

    /// The `i`-th item from the front (`i < len`).
    #[inline]
    pub fn get(&self, i: usize) -> T {
        debug_assert!(i < self.len);
        self.buf[(self.head + i) & self.mask]
    }

    /// Removes the `i`-th item from the front (`i < len`), keeping the order
    /// of the others.
    pub fn remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "Fifo::remove out of range");
        let m = self.mask;
        let v = self.buf[(self.head + i) & m];
        for k in i..self.len - 1 {
            self.buf[(self.head + k) & m] = self.buf[(self.head + k + 1) & m];
        }
        self.len -= 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::Fifo;
    use std::collections::VecDeque;

    #[test]
    fn fifo_behaves_like_a_vecdeque() {
        let mut f: Fifo<u32> = Fifo::with_capacity(2);
        let mut v: VecDeque<u32> = VecDeque::new();
        let mut x = 12345u32;
        for step in 0..5000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            match (x >> 16) % 7 {
                0..=2 => {
                    f.push_back(step);
                    v.push_back(step);
                }
                3 | 4 => assert_eq!(f.pop_front(), v.pop_front()),
                5 if !v.is_empty() => {
                    let i = (x as usize >> 8) % v.len();
                    assert_eq!(f.remove(i), v.remove(i).unwrap());
                }
                _ => assert_eq!(f.front(), v.front().copied()),
            }
            assert_eq!(f.len(), v.len());
            for (i, e) in v.iter().enumerate() {
                assert_eq!(f.get(i), *e);
            }
        }
    }
}
