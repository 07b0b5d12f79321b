//! The Memory Flow Controller of one SPE.
//!
//! - [`command`]: opcodes and the size/alignment rules.
//! - [`list`]: DMA-list elements.
//! - [`queue`]: the 16-entry SPU command queue and barrier/fence ordering.
//! - [`tags`]: the 32 tag groups.
//! - [`tlb`]: address translation.
//!
//! [`Mfc`] is the state the machine drives: the queue, the tag groups, and
//! the DMAC's unrolling cursor (when it may create its next bus request and
//! which direction it served last).

pub mod command;
pub mod list;
pub mod queue;
pub mod tags;
pub mod tlb;

use crate::steady::{shift, Shape};
use crate::time::Cycle;
use queue::CommandQueue;
use tags::TagGroups;
use tlb::Tlb;

/// One SPE's MFC.
#[derive(Debug, Clone)]
pub struct Mfc {
    /// SPU command queue.
    pub queue: CommandQueue,
    /// Tag groups.
    pub tags: TagGroups,
    /// Proxy command queue (commands the PPE issues through the memory map).
    pub proxy: CommandQueue,
    /// Proxy tag groups.
    pub proxy_tags: TagGroups,
    /// Atomic commands issued and not retired.
    pub atomic_pending: u32,
    /// Atomic status bits waiting to be read (`MFC_RdAtomicStat`).
    pub atomic_status: Option<u32>,
    /// Tag groups whose DMA list is stalled (`MFC_RdListStallStat`), not yet read.
    pub list_stall: u32,
    /// The line of the last getllar issued, until a putllc uses it.
    pub reserved_line: Option<u64>,
    /// The DMAC may unroll its next bus request at this cycle.
    pub dmac_free: Cycle,
    /// A DMAC wake-up is already on the calendar for this cycle.
    pub dmac_wake: Option<Cycle>,
    /// The last bus request unrolled belonged to a get.
    pub last_was_get: bool,
    /// The DMAC may start a new command at this cycle.
    pub next_command: Cycle,
    /// Address translation (none: translation is not modelled on this machine).
    pub tlb: Option<Tlb>,
}

impl Mfc {
    /// An idle MFC with a queue of `depth` entries.
    pub fn new(depth: u32, proxy_depth: u32, tlb: Option<Tlb>) -> Mfc {
        Mfc {
            queue: CommandQueue::new(depth),
            tags: TagGroups::default(),
            proxy: CommandQueue::new(proxy_depth),
            proxy_tags: TagGroups::default(),
            atomic_pending: 0,
            atomic_status: None,
            list_stall: 0,
            reserved_line: None,
            dmac_free: 0,
            dmac_wake: None,
            last_was_get: false,
            next_command: 0,
            tlb,
        }
    }
}

impl Mfc {
    /// Writes the MFC's state (see [`crate::steady`]); the reservation
    /// only changes when a program runs, which ends a steady state.
    pub(crate) fn shape(&self, s: &mut Shape) {
        self.queue.shape(s);
        self.proxy.shape(s);
        self.tags.shape(s);
        self.proxy_tags.shape(s);
        s.raw(self.atomic_pending as u64);
        s.raw(self.list_stall as u64);
        s.time(self.dmac_free);
        s.maybe_time(self.dmac_wake);
        s.raw(self.last_was_get as u64);
        s.time(self.next_command);
        match &self.tlb {
            Some(t) => t.shape(s),
            None => s.raw(u64::MAX),
        }
    }

    /// Moves every time of the MFC `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        self.queue.shift(dt);
        self.proxy.shift(dt);
        shift(&mut self.dmac_free, dt);
        if let Some(w) = self.dmac_wake.as_mut() {
            shift(w, dt);
        }
        shift(&mut self.next_command, dt);
    }
}
