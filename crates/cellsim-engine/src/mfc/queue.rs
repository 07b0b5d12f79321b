//! The MFC SPU command queue and its ordering rules.
//!
//! Commands may run in any order (Kistler et al. 2006, "DMA flow") except where the
//! barrier and fence forms say otherwise (CBEA):
//! - a **fenced** command waits until every earlier command of its tag group
//!   has completed;
//! - a **barrier** command waits likewise, and every later command of its tag
//!   group waits for those earlier commands too;
//! - **`mfc_barrier`** makes every later command, of any tag, wait until every
//!   earlier command has completed.
//!
//! Nothing else is ordered: a later command of another tag group overtakes.

#[cfg(test)]
use super::command::Opcode;
use super::command::{MfcCommand, Ordering};
use crate::bus::Space;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::Ramp;

/// The piece of a command the DMAC is unrolling: the whole transfer, or the
/// current element of a DMA list.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// Local-store address of its first byte.
    pub lsa: u32,
    /// Effective address of its first byte.
    pub ea: u64,
    /// Bytes.
    pub size: u32,
    /// Bytes unrolled so far.
    pub done: u32,
    /// The element owning the effective address.
    pub target: Ramp,
    /// The remote end of the transfer.
    pub remote: Space,
}

impl Segment {
    /// A segment with nothing in it (a list before its first element).
    pub fn empty() -> Segment {
        Segment {
            lsa: 0,
            ea: 0,
            size: 0,
            done: 0,
            target: Ramp(0),
            remote: Space::None,
        }
    }

    /// Everything of this segment has been unrolled.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.done >= self.size
    }
}

/// How far a DMA list has got.
#[derive(Debug, Clone, Copy)]
pub struct ListProgress {
    /// Elements in the list.
    pub count: u32,
    /// The next element to fetch.
    pub next: u32,
    /// Local-store address of the next element's data.
    pub cursor: u32,
    /// The current element (as fetched) has its stall-and-notify flag set.
    pub stall_here: bool,
    /// The current element asked to stall once its transfers complete.
    pub stall_pending: bool,
    /// The list is stalled until the program acknowledges.
    pub stalled: bool,
    /// When the element after the current one is in the MFC: the fetch unit
    /// reads the next element while the current one unrolls.
    pub prefetched_at: Cycle,
}

/// A command in the queue.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The command as issued.
    pub cmd: MfcCommand,
    /// Issue order.
    pub seq: u64,
    /// When the DMAC may next work on it (enqueue + flow-through latency, or
    /// a list element's fetch).
    pub ready_at: Cycle,
    /// What is being unrolled now.
    pub seg: Segment,
    /// List state, for list commands.
    pub list: Option<ListProgress>,
    /// Bus requests issued and not complete.
    pub in_flight: u32,
    /// Cycle the SPU issued it.
    pub issued_at: Cycle,
    /// The DMAC has started on it.
    pub started: bool,
    /// Cycle the DMAC started on it (selected it for its first bus request).
    pub started_at: Cycle,
    /// The page whose translation the DMAC holds for it (page number + 1;
    /// 0: none yet): requests within it need no TLB lookup.
    pub page: u64,
    /// Its retirement is scheduled.
    pub retiring: bool,
    /// A putllc that lost its reservation.
    pub failed: bool,
}

impl Entry {
    /// Every bus request has been created.
    #[inline]
    pub fn fully_unrolled(&self) -> bool {
        if self.cmd.op.is_sync() {
            return true;
        }
        let elements_left = self.list.is_some_and(|l| l.next < l.count);
        self.started && self.seg.exhausted() && !elements_left
    }

    /// A list whose current element is exhausted and that has more to fetch.
    #[inline]
    pub fn needs_element(&self) -> bool {
        self.seg.exhausted() && self.list.is_some_and(|l| l.next < l.count)
    }

    /// Held by a stall-and-notify element.
    #[inline]
    pub fn stalled(&self) -> bool {
        self.list.is_some_and(|l| l.stall_pending || l.stalled)
    }
}

/// The 16-entry SPU command queue (depth from the machine file).
#[derive(Debug, Clone)]
pub struct CommandQueue {
    slots: Vec<Option<Entry>>,
    /// The live slots in issue order (a command takes the next issue
    /// number): the order looks at steady states write entries in.
    order: Vec<u8>,
    /// Slots of entries the DMAC has not finished unrolling, in issue order
    /// (with `turns`, in the order of their next turn).
    to_unroll: Vec<u8>,
    /// Started commands that take turns at the DMAC, one bus request each
    /// (`mfc.unroll = "turns"`); 0: the oldest is unrolled to its end first.
    turns: u8,
    reserved: u32,
    used: u32,
    next_seq: u64,
    /// Entries with a barrier/fence attribute, or `mfc_barrier`s, present.
    ordered: u32,
}

impl CommandQueue {
    /// An empty queue of `depth` entries.
    pub fn new(depth: u32) -> CommandQueue {
        CommandQueue {
            slots: vec![None; depth as usize],
            order: Vec::with_capacity(depth as usize),
            to_unroll: Vec::with_capacity(depth as usize),
            turns: 0,
            reserved: 0,
            used: 0,
            next_seq: 0,
            ordered: 0,
        }
    }

    /// Lets `n` started commands take turns at the DMAC (0: oldest first).
    pub fn take_turns(mut self, n: u8) -> CommandQueue {
        self.turns = n;
        self
    }

    /// The DMAC created a bus request of the command in `slot`: with turns,
    /// the command goes to the back of the line (a fully unrolled one has
    /// already left it).
    #[inline]
    pub fn served(&mut self, slot: u8) {
        if self.turns == 0 {
            return;
        }
        if let Some(i) = self.to_unroll.iter().position(|&s| s == slot) {
            let s = self.to_unroll.remove(i);
            self.to_unroll.push(s);
        }
    }

    /// Free entries, counting reservations as used.
    #[inline]
    pub fn free(&self) -> u32 {
        self.slots.len() as u32 - self.used - self.reserved
    }

    /// Holds an entry for a command whose channel writes are under way.
    #[inline]
    pub fn reserve(&mut self) {
        debug_assert!(self.free() > 0);
        self.reserved += 1;
    }

    /// Places a (reserved) command in the queue; returns its slot.
    pub fn insert(&mut self, mut e: Entry) -> u8 {
        debug_assert!(self.reserved > 0);
        self.reserved -= 1;
        self.used += 1;
        e.seq = self.next_seq;
        self.next_seq += 1;
        if e.cmd.op.is_sync() || e.cmd.op.ordering() != Ordering::None {
            self.ordered += 1;
        }
        let i = self
            .slots
            .iter()
            .position(Option::is_none)
            .expect("a reserved entry is free");
        if !e.cmd.op.is_sync() {
            self.to_unroll.push(i as u8);
        }
        self.order.push(i as u8);
        self.slots[i] = Some(e);
        i as u8
    }

    /// Removes a retired command.
    pub fn remove(&mut self, slot: u8) -> Entry {
        let e = self.slots[slot as usize]
            .take()
            .expect("retiring an empty slot");
        self.used -= 1;
        if e.cmd.op.is_sync() || e.cmd.op.ordering() != Ordering::None {
            self.ordered -= 1;
        }
        if let Some(i) = self.order.iter().position(|&s| s == slot) {
            self.order.remove(i);
        }
        e
    }

    /// The entry in `slot`.
    #[inline]
    pub fn get(&self, slot: u8) -> &Entry {
        self.slots[slot as usize].as_ref().expect("live slot")
    }

    /// The DMAC has created the last bus request of the entry in `slot` (or
    /// started a zero-length one): it is no longer a candidate for unrolling.
    pub fn unrolled(&mut self, slot: u8) {
        if let Some(i) = self.to_unroll.iter().position(|&s| s == slot) {
            self.to_unroll.remove(i);
        }
    }

    /// The entry in `slot`, mutably.
    #[inline]
    pub fn get_mut(&mut self, slot: u8) -> &mut Entry {
        self.slots[slot as usize].as_mut().expect("live slot")
    }

    /// Live entries with their slots.
    pub fn entries(&self) -> impl Iterator<Item = (u8, &Entry)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i as u8, e)))
    }

    /// Whether the ordering rules let `e` start (or, for `mfc_barrier`, complete).
    #[inline]
    pub fn may_start(&self, e: &Entry) -> bool {
        self.ordered == 0 || self.may_start_ordered(e)
    }

    /// [`CommandQueue::may_start`] when ordered entries are present.
    fn may_start_ordered(&self, e: &Entry) -> bool {
        let older = || self.slots.iter().flatten().filter(move |o| o.seq < e.seq);
        if e.cmd.op.is_sync() {
            return older().next().is_none();
        }
        let tag = e.cmd.tag;
        let waits_for_tag = e.cmd.op.ordering() != Ordering::None;
        for o in older() {
            if o.cmd.op.is_sync() {
                return false;
            }
            if o.cmd.tag != tag {
                continue;
            }
            if waits_for_tag {
                return false;
            }
            // A barrier command between `o` and `e` holds `e` back until `o`
            // is done (`o` may itself be a barrier command: `e` need not wait
            // for the last barrier, but does for the ones before it).
            let barrier_between = self.slots.iter().flatten().any(|b| {
                b.cmd.tag == tag
                    && b.cmd.op.ordering() == Ordering::Barrier
                    && o.seq < b.seq
                    && b.seq < e.seq
            });
            if barrier_between {
                return false;
            }
        }
        true
    }

    /// The next command the DMAC should unroll at `now`: ready, allowed by the
    /// ordering rules, not fully unrolled; the oldest of the preferred
    /// direction (the DMAC alternates gets and puts) or else the oldest. A
    /// command not started yet qualifies only if `new_allowed` (the DMAC's
    /// per-command set-up is over). Also returns the earliest `ready_at` of
    /// commands not ready yet. Inlined into the DMAC (its one caller with
    /// the proxy queue's), which reads both results from registers.
    #[inline(always)]
    pub fn pick(
        &self,
        now: Cycle,
        prefer_get: bool,
        new_allowed: bool,
    ) -> (Option<u8>, Option<Cycle>) {
        let mut fallback = None;
        let mut later: Option<Cycle> = None;
        // With turns, a new command starts only while fewer than `turns` of
        // its direction are under way (with none, `new_allowed` alone decides).
        let (gets, puts) = self.under_way();
        for &slot in &self.to_unroll {
            let e = self.get(slot);
            if e.ready_at > now {
                later = Some(later.map_or(e.ready_at, |l| l.min(e.ready_at)));
                continue;
            }
            let may_begin = || {
                new_allowed
                    && (self.turns == 0 || if e.cmd.op.is_get() { gets } else { puts } < self.turns)
            };
            if (!e.started && !may_begin()) || e.stalled() || !self.may_start(e) {
                continue;
            }
            if e.cmd.op.is_get() == prefer_get {
                return (Some(slot), None);
            }
            fallback = fallback.or(Some(slot));
        }
        (fallback, later)
    }

    /// Started gets and puts not fully unrolled (counted only with turns).
    #[inline]
    fn under_way(&self) -> (u8, u8) {
        if self.turns == 0 {
            return (0, 0);
        }
        let mut n = (0, 0);
        for e in self.to_unroll.iter().map(|&x| self.get(x)) {
            match (e.started, e.cmd.op.is_get()) {
                (true, true) => n.0 += 1,
                (true, false) => n.1 += 1,
                _ => {}
            }
        }
        n
    }

    /// Whether the queue holds nothing (and nothing is reserved).
    pub fn is_empty(&self) -> bool {
        self.used == 0 && self.reserved == 0
    }

    /// Slots of `mfc_barrier` entries whose earlier commands are all done.
    pub fn completable_barriers(&self) -> impl Iterator<Item = u8> + '_ {
        // Without ordered entries (the common case, at every retirement)
        // there is nothing to scan.
        let slots = if self.ordered > 0 {
            &self.slots[..]
        } else {
            &[]
        };
        slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i as u8, e)))
            .filter(|(_, e)| e.cmd.op.is_sync() && self.may_start(e))
            .map(|(i, _)| i)
    }
}

impl Entry {
    /// Writes the entry (see [`crate::steady`]): the command as issued and
    /// where its segment starts; its issue number relative to the queue's
    /// next (the order of entries); what its segment has unrolled is
    /// progress, left out. Its issue and start cycles are history (only
    /// latencies and traces read them). DMA lists (whose segment changes)
    /// end steady states.
    pub(crate) fn shape(&self, s: &mut Shape, next_seq: u64) {
        s.raw(next_seq - self.seq);
        crate::script::command_shape(s, &self.cmd);
        s.raw(self.seg.lsa as u64);
        s.raw(self.seg.ea);
        s.raw(self.seg.size as u64);
        s.raw(self.seg.target.0 as u64);
        crate::steady::space(s, self.seg.remote, true);
        s.time(self.ready_at);
        s.raw(self.in_flight as u64);
        s.raw(self.page);
        let flags = [
            self.started,
            self.retiring,
            self.failed,
            self.list.is_some(),
        ];
        s.raw(flags.iter().fold(0, |m, &f| m << 1 | f as u64));
    }
}

impl CommandQueue {
    /// Writes the queue (see [`crate::steady`]); the issue number of the
    /// next command is progress, `turns` a setting fixed at build.
    ///
    /// Entries are written in issue order and slots named by their rank in
    /// it ([`CommandQueue::ranks`]): which slot a command landed in is only
    /// a name (a command takes any free slot; the DMAC picks, and
    /// barriers and fences order, by issue number; at most one
    /// `mfc_barrier` is completable at a time, the oldest entry), so a
    /// state whose slots have turned round is the same state.
    pub(crate) fn shape(&self, s: &mut Shape) {
        let order = self.issue_order();
        let mut ranks = [u8::MAX; 256];
        self.write_ranks(&mut ranks);
        s.raw(order.len() as u64);
        order
            .iter()
            .for_each(|&slot| self.get(slot).shape(s, self.next_seq));
        s.raw(self.to_unroll.len() as u64);
        self.to_unroll
            .iter()
            .for_each(|&x| s.raw(ranks[x as usize] as u64));
        for v in [self.reserved, self.used, self.ordered] {
            s.raw(v as u64);
        }
    }

    /// The live slots in issue order.
    pub(crate) fn issue_order(&self) -> &[u8] {
        debug_assert!(self
            .order
            .windows(2)
            .all(|w| self.get(w[0]).seq < self.get(w[1]).seq));
        debug_assert_eq!(self.order.len(), self.used as usize);
        &self.order
    }

    /// Writes each slot's entry's rank in issue order into `ranks` (free
    /// slots: `u8::MAX`; `ranks` has a place per slot at least).
    pub(crate) fn write_ranks(&self, ranks: &mut [u8]) {
        ranks[..self.slots.len()].fill(u8::MAX);
        for (rank, &slot) in self.issue_order().iter().enumerate() {
            ranks[slot as usize] = rank as u8;
        }
    }

    /// The most entries it holds.
    pub(crate) fn depth(&self) -> usize {
        self.slots.len()
    }

    /// The issue number the next command gets.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// `n` more commands were issued (a fast-forward's jump).
    pub(crate) fn skip_seqs(&mut self, n: u64) {
        self.next_seq += n;
    }

    /// Moves the times of the entries `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        for e in self.slots.iter_mut().flatten() {
            shift(&mut e.ready_at, dt);
            if let Some(l) = e.list.as_mut() {
                shift(&mut l.prefetched_at, dt);
            }
        }
    }

    /// Live entries with their slots, mutably.
    pub(crate) fn entries_mut(&mut self) -> impl Iterator<Item = (u8, &mut Entry)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, e)| e.as_mut().map(|e| (i as u8, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(op: Opcode, tag: u32) -> Entry {
        Entry {
            cmd: MfcCommand::single(op, 0, 0, 128, tag),
            seq: 0,
            ready_at: 0,
            seg: Segment {
                lsa: 0,
                ea: 0,
                size: 128,
                done: 0,
                target: Ramp(11),
                remote: Space::Memory(0),
            },
            list: None,
            in_flight: 0,
            issued_at: 0,
            started: false,
            started_at: 0,
            page: 0,
            retiring: false,
            failed: false,
        }
    }

    fn queue(ops: &[(Opcode, u32)]) -> (CommandQueue, Vec<u8>) {
        let mut q = CommandQueue::new(16);
        let slots = ops
            .iter()
            .map(|&(op, tag)| {
                q.reserve();
                q.insert(entry(op, tag))
            })
            .collect();
        (q, slots)
    }

    /// The slots the DMAC serves in `n` picks of gets, each command started
    /// when picked and served (moved to the back of the line with turns).
    fn served(q: &mut CommandQueue, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                let slot = q.pick(0, true, true).0.expect("a get to serve");
                q.get_mut(slot).started = true;
                q.served(slot);
                slot
            })
            .collect()
    }

    #[test]
    fn the_oldest_is_served_until_it_is_unrolled() {
        let (mut q, s) = queue(&[(Opcode::Get, 1), (Opcode::Get, 1), (Opcode::Get, 1)]);
        assert_eq!(served(&mut q, 3), vec![s[0]; 3]);
    }

    #[test]
    fn with_turns_started_commands_take_turns_and_no_more_start() {
        let (q, s) = queue(&[(Opcode::Get, 1), (Opcode::Get, 1), (Opcode::Get, 1)]);
        let mut q = q.take_turns(2);
        let order = served(&mut q, 5);
        assert_eq!(
            order,
            vec![s[0], s[1], s[0], s[1], s[0]],
            "the third waits for a turn"
        );
        // The first one's last request: the waiting one starts, first in line.
        q.unrolled(s[0]);
        assert_eq!(served(&mut q, 3), vec![s[2], s[1], s[2]]);
    }

    #[test]
    fn turns_are_counted_per_direction() {
        let (q, s) = queue(&[(Opcode::Get, 1), (Opcode::Get, 1), (Opcode::Put, 1)]);
        let mut q = q.take_turns(1);
        assert_eq!(served(&mut q, 2), vec![s[0], s[0]], "one get at a time");
        assert_eq!(
            q.pick(0, false, true).0,
            Some(s[2]),
            "the put starts beside it"
        );
    }

    #[test]
    fn plain_commands_are_unordered() {
        let (q, s) = queue(&[(Opcode::Get, 1), (Opcode::Put, 1)]);
        assert!(q.may_start(q.get(s[1])));
    }

    #[test]
    fn a_fence_waits_for_its_own_tag_only() {
        let (q, s) = queue(&[
            (Opcode::Get, 1),
            (Opcode::Get, 2),
            (Opcode::PutF, 2),
            (Opcode::PutF, 3),
        ]);
        assert!(!q.may_start(q.get(s[2])), "fenced behind the tag-2 get");
        assert!(q.may_start(q.get(s[3])), "tag 3 has nothing earlier");
    }

    #[test]
    fn a_barrier_holds_later_commands_of_its_tag() {
        let (q, s) = queue(&[
            (Opcode::Get, 1),
            (Opcode::PutB, 1),
            (Opcode::Put, 1),
            (Opcode::Put, 2),
        ]);
        assert!(!q.may_start(q.get(s[1])));
        assert!(!q.may_start(q.get(s[2])), "behind the barrier");
        assert!(q.may_start(q.get(s[3])), "other tag overtakes");
        // A later command need not wait for the barrier command itself.
        let (q, s) = queue(&[(Opcode::PutB, 1), (Opcode::Put, 1)]);
        assert!(q.may_start(q.get(s[1])));
    }

    #[test]
    fn mfc_barrier_orders_every_tag() {
        let (q, s) = queue(&[(Opcode::Get, 1), (Opcode::Barrier, 0), (Opcode::Put, 7)]);
        assert!(!q.may_start(q.get(s[2])));
        assert!(q.completable_barriers().next().is_none());
        let (q, s) = queue(&[(Opcode::Barrier, 0), (Opcode::Put, 7)]);
        assert_eq!(q.completable_barriers().collect::<Vec<_>>(), vec![s[0]]);
    }

    #[test]
    fn pick_alternates_directions_and_prefers_the_oldest() {
        let (q, s) = queue(&[(Opcode::Get, 1), (Opcode::Put, 1), (Opcode::Get, 1)]);
        assert_eq!(q.pick(0, false, true).0, Some(s[1]));
        assert_eq!(q.pick(0, true, true).0, Some(s[0]));
        assert_eq!(
            q.pick(0, true, false).0,
            None,
            "no new command during set-up"
        );
    }
}
