//! The Memory Flow Controller of one SPE.
//!
//! - [`command`]: opcodes and the size/alignment rules.
//! - [`list`]: DMA-list elements.
//! - [`queue`]: the 16-entry SPU command queue and barrier/fence ordering.
//! - [`tags`]: the 32 tag groups.
//! - [`tlb`]: address translation.
//!
//! [`Mfc`] is a part of the chip (see `crate::part`): the queues, the tag
//! groups, and the DMAC's unrolling cursor (when it may create its next bus
//! request and which direction it served last). It owns its behaviour: the
//! DMAC's handlers ([`dmac`]: enqueue, unroll, a request done, retire, list
//! stalls) are its methods over a narrow context; the machine routes the
//! events to them (`machine/dmac.rs`).

pub mod command;
pub(crate) mod dmac;
pub mod list;
pub mod queue;
pub mod tags;
pub mod tlb;

use crate::part::Part;
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
    /// The DMAC stopped because its BIU's queue was full (the command bus
    /// restarts it when it takes a request).
    pub dmac_blocked: bool,
    /// The last bus request unrolled belonged to a get.
    pub last_was_get: bool,
    /// The DMAC may start a new command at this cycle.
    pub next_command: Cycle,
    /// Address translation (none: translation is not modelled on this machine).
    pub tlb: Option<Tlb>,
}

impl Mfc {
    /// An idle MFC with a queue of `depth` entries whose DMAC unrolls
    /// `turns` started commands in turn (0: the oldest first).
    pub fn new(depth: u32, proxy_depth: u32, turns: u8, tlb: Option<Tlb>) -> Mfc {
        Mfc {
            queue: CommandQueue::new(depth).take_turns(turns),
            tags: TagGroups::default(),
            proxy: CommandQueue::new(proxy_depth).take_turns(turns),
            proxy_tags: TagGroups::default(),
            atomic_pending: 0,
            atomic_status: None,
            list_stall: 0,
            reserved_line: None,
            dmac_free: 0,
            dmac_wake: None,
            dmac_blocked: false,
            last_was_get: false,
            next_command: 0,
            tlb,
        }
    }
}

/// Contract: an MFC's future is decided by its queues (entries in issue
/// order: commands, segments left, ready times, in-flight counts; see
/// [`CommandQueue::shape`]), its tag groups, pending atomics, stalled lists,
/// the DMAC's cursor (`dmac_free`, `dmac_wake`, `dmac_blocked`,
/// `last_was_get`, `next_command`) and its TLB. Left out: each entry's
/// progress (bytes unrolled, issue number, issue and start cycles — the jump
/// moves them by whole lines per period, see `machine::steady`), the atomic
/// status and reserved line (only a program reads them, and a program
/// running ends a steady state).
impl Part for Mfc {
    fn next_wake(&self) -> Option<Cycle> {
        self.dmac_wake
    }

    fn shape(&self, s: &mut Shape) {
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
        s.raw(self.dmac_blocked as u64);
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        self.queue.shift(dt);
        self.proxy.shift(dt);
        shift(&mut self.dmac_free, dt);
        if let Some(w) = self.dmac_wake.as_mut() {
            shift(w, dt);
        }
        shift(&mut self.next_command, dt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::Space;
    use crate::mfc::command::{MfcCommand, Opcode};
    use crate::mfc::queue::{Entry, Segment};
    use crate::part::{each_in_shape, left_out_but_decides, rule_holds, Perturb, RuleCase};
    use crate::topology::Ramp;

    /// A 16 KB command of `op` from memory address `ea`, `done` bytes unrolled.
    fn entry(op: Opcode, ea: u64, done: u32) -> Entry {
        Entry {
            cmd: MfcCommand::single(op, 0, ea, 16384, 1),
            seq: 0,
            ready_at: 0,
            seg: Segment {
                lsa: 0,
                ea,
                size: 16384,
                done,
                target: Ramp(11),
                remote: Space::Memory(ea),
            },
            list: None,
            in_flight: 2,
            issued_at: 0,
            started: true,
            started_at: 0,
            page: 0,
            retiring: false,
            failed: false,
        }
    }

    /// What the DMAC does next with the MFC: which command it serves and
    /// the address of the bus request it creates, relative to now.
    fn next_request(m: &mut Mfc, now: Cycle) -> Option<(u8, u64, Cycle)> {
        let new_allowed = now >= m.next_command;
        let (slot, _) = m.queue.pick(now, !m.last_was_get, new_allowed);
        let e = m.queue.get(slot?);
        Some((
            slot?,
            e.seg.ea + e.seg.done as u64,
            m.dmac_free.saturating_sub(now),
        ))
    }

    /// The shape rule (see [`crate::part`]) for an MFC streaming a get and a put.
    #[test]
    fn shape_rule() {
        let now = 5000;
        let mut a = Mfc::new(16, 8, 0, None);
        for (op, ea) in [(Opcode::Get, 0x10000), (Opcode::Put, 0x20000)] {
            a.queue.reserve();
            a.queue.insert(entry(op, ea, 1024));
        }
        a.dmac_free = now + 2;
        let drive = |m: &mut Mfc| next_request(m, now);
        // Read only by programs (which end steady states): out of the shape.
        let mut b = a.clone();
        b.atomic_status = Some(1);
        b.reserved_line = Some(0x80);
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let decide: [Perturb<Mfc>; 4] = [
            ("dmac_free", |m| m.dmac_free += 2),
            ("last_was_get", |m| m.last_was_get = !m.last_was_get),
            ("dmac_blocked", |m| m.dmac_blocked = true),
            ("in_flight", |m| m.queue.get_mut(0).in_flight += 1),
        ];
        each_in_shape(&a, now, drive, &decide);
        // Bytes unrolled are progress, left out of the shape, and they do
        // decide the next request's address: the jump moves them by whole
        // lines per period and replays the moves at the advanced addresses.
        let mut b = a.clone();
        b.queue.get_mut(0).seg.done += 128;
        b.queue.get_mut(1).seg.done += 128;
        let (fa, fb) = left_out_but_decides(&a, &b, now, drive);
        assert_eq!(fb.unwrap().1 - fa.unwrap().1, 128);
    }
}
