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
    /// When its command phase ends (the combined response); the data may not
    /// move before.
    pub respond_at: Cycle,
}

impl BusOp {
    /// The ramp that sends the data.
    #[inline]
    pub fn data_src(&self) -> Ramp {
        match self.kind {
            OpKind::Read => self.target,
            OpKind::Write => self.requester,
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
