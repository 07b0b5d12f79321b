//! Command retries: the variant `eib.command_retry = "target"`.
//!
//! The address concentrator reflects every command to every element, and the
//! combined response may say "retry" when an element cannot take the command
//! (Kistler et al. 2006 describe the command bus, the snoops and the combined
//! response; the depth of the queues and the back-off are not published).
//! Here each element other than the memory controller (whose read and write
//! queues are the MIC's own model: its windows and write buffers) holds
//! `eib.target_queue` commands addressed to it, from the command bus's
//! acceptance until its data has left it (a get) or arrived at it (a put).
//! A command for an element whose queue is full uses its command-bus slot
//! and is answered "retry" after the command phase; its requester sends
//! nothing more until `eib.retry_backoff_bus_cycles` after that answer, then
//! sends the same command again (it stays at the head of its BIU's queue).
//! The mechanism is inferred: a per-target cost that could make where a
//! ring's tasks sit matter (Keller and Varbanescu 2010).
//!
//! With `eib.command_retry = "snoop"` the queue is a snoop queue: a command
//! holds its slot from acceptance only until its combined response, a time
//! known when it is accepted (the arbiter's grants free nothing).
//!
//! With `eib.command_retry = "split"` each element holds two such queues, as
//! a unit with separate inbound and outbound paths would: one for the reads
//! of its memory (gets from its local store) and one for the writes into it
//! (puts), each `eib.target_queue` deep and held until the data has moved. A
//! partner that both reads and writes one local store (Jiménez-González et
//! al. 2007's SPE-SPE loop) then fills neither, where two neighbours reading
//! one SPE's packets at once (a ring's tasks) fill its read queue.
//!
//! The variant `mic.queue_full = "retry"` gives the memory controller such a
//! queue too, `mic.command_slots` deep and held until the data has moved,
//! with the same response and back-off (the other elements' queues stay
//! unbounded unless `eib.command_retry` bounds them). A requester's commands
//! leave its BIU in order, so one whose memory command is retried holds back
//! the commands behind it, to the other chip's memory as well.

use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::RAMPS;

/// Queues per target: one, or a read queue and a write queue (`"split"`).
const QUEUES: usize = 2 * RAMPS;

/// The targets' command queues and the requesters' back-offs of one chip.
#[derive(Debug, Clone)]
pub struct Retries {
    depth: u32,
    /// The memory controller's queue depth (`mic.command_slots`).
    mic_depth: u32,
    /// The ramp of the memory controller (its queue's index over two).
    mic: usize,
    /// The elements other than the memory controller refuse commands
    /// (`eib.command_retry`); else only the memory controller may.
    targets: bool,
    /// The memory controller refuses commands (`mic.queue_full = "retry"`).
    memory: bool,
    /// Slots free at the combined response (`"snoop"`), not when the data has moved.
    until_response: bool,
    /// Reads and writes of a target take slots of separate queues (`"split"`).
    split: bool,
    /// Per queue (see [`Retries::queue`]): commands accepted whose data has
    /// not been granted yet (their slot's end is not known).
    pending: [u32; QUEUES],
    /// Per queue: when the granted commands' slots free.
    frees: [Vec<Cycle>; QUEUES],
    /// Per requester: it sends nothing before this cycle.
    hold: [Cycle; RAMPS],
    /// Commands answered "retry" so far.
    pub retried: u64,
}

impl Retries {
    /// Queues of `depth` commands at every target (two per target, reads
    /// and writes, when `split`), none of them a memory controller.
    #[cfg(test)]
    fn new(depth: u32, until_response: bool, split: bool) -> Retries {
        Retries::with_memory(depth, until_response, split, true, usize::MAX, None)
    }

    /// The queues of a chip whose memory controller is at ramp `mic`: it
    /// holds `mic_depth` commands (`Some`) or refuses none (`None`); every
    /// other target holds `depth` (two queues of it when `split`) or refuses
    /// none (`targets` false).
    pub fn with_memory(
        depth: u32,
        until_response: bool,
        split: bool,
        targets: bool,
        mic: usize,
        mic_depth: Option<u32>,
    ) -> Retries {
        let (memory, mic_depth) = (mic_depth.is_some(), mic_depth.unwrap_or(0));
        Retries {
            depth,
            mic_depth,
            mic,
            targets,
            memory,
            until_response,
            split,
            pending: [0; QUEUES],
            frees: std::array::from_fn(|_| Vec::with_capacity(depth as usize)),
            hold: [0; RAMPS],
            retried: 0,
        }
    }

    /// The queue of target `t` a read (`write` false) or a write takes a
    /// slot of.
    #[inline]
    fn queue(&self, t: usize, write: bool) -> usize {
        2 * t + (self.split && write) as usize
    }

    /// Whether target `t` can take another read or write command at `now`:
    /// if so it takes it (a slot until [`Retries::granted`] says when it
    /// frees).
    #[inline]
    pub fn take(&mut self, now: Cycle, t: usize, write: bool) -> bool {
        let k = self.queue(t, write);
        let depth = if t == self.mic {
            self.mic_depth
        } else {
            self.depth
        };
        let q = &mut self.frees[k];
        q.retain(|&f| f > now);
        if self.pending[k] + q.len() as u32 >= depth {
            return false;
        }
        self.pending[k] += 1;
        true
    }

    /// Whether a command to target `t` may be refused (and so takes a
    /// slot): the memory controller's with `mic.queue_full = "retry"`, the
    /// others' with `eib.command_retry`.
    #[inline]
    pub fn covers(&self, t: usize) -> bool {
        if t == self.mic {
            self.memory
        } else {
            self.targets
        }
    }

    /// Whether the slot a command holds at target `t` frees when its data
    /// is granted (not at the combined response, as a snoop queue's).
    #[inline]
    pub fn frees_at_grant(&self, t: usize) -> bool {
        self.covers(t) && (t == self.mic || !self.until_response)
    }

    /// A command that took a slot at `t` will not move data (a failed
    /// conditional store): its slot frees at once.
    #[inline]
    pub fn drop_pending(&mut self, t: usize, write: bool) {
        let k = self.queue(t, write);
        self.pending[k] -= 1;
    }

    /// The data of a read or write command holding a slot at `t` was
    /// granted: the slot frees at `free`.
    #[inline]
    pub fn granted(&mut self, t: usize, write: bool, free: Cycle) {
        let k = self.queue(t, write);
        self.pending[k] -= 1;
        self.frees[k].push(free);
    }

    /// Requester `r`'s command was answered "retry": it waits until `until`.
    #[inline]
    pub fn back_off(&mut self, r: usize, until: Cycle) {
        self.hold[r] = until;
        self.retried += 1;
    }

    /// Whether requester `r` may send at `now`.
    #[inline]
    pub fn may_send(&self, r: usize, now: Cycle) -> bool {
        self.hold[r] <= now
    }

    /// When requester `r` may send again.
    #[inline]
    pub fn held_until(&self, r: usize) -> Cycle {
        self.hold[r]
    }

    /// Writes the state that decides the future (see [`crate::steady`]): the
    /// pending counts, the slots still taken and the back-offs; `retried`
    /// is a counter.
    pub(crate) fn shape(&self, s: &mut Shape) {
        let now = s.now();
        for (p, q) in self.pending.iter().zip(&self.frees) {
            s.raw(*p as u64);
            let mut live: Vec<Cycle> = q.iter().copied().filter(|&f| f > now).collect();
            live.sort_unstable();
            s.raw(live.len() as u64);
            live.iter().for_each(|&f| s.time(f));
        }
        self.hold.iter().for_each(|&h| s.time(h));
    }

    /// Moves every time `dt` later.
    pub(crate) fn shift(&mut self, dt: Cycle) {
        self.frees
            .iter_mut()
            .for_each(|q| q.iter_mut().for_each(|t| shift(t, dt)));
        self.hold.iter_mut().for_each(|t| shift(t, dt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_target_refuses_until_a_slot_frees() {
        let mut r = Retries::new(2, false, false);
        assert!(r.take(0, 5, false));
        assert!(r.take(0, 5, false));
        assert!(
            !r.take(1, 5, false),
            "two commands held: the third is retried"
        );
        assert!(r.take(1, 6, false), "another target has its own queue");
        r.granted(5, false, 40);
        assert!(
            !r.take(39, 5, false),
            "granted, its slot is held until its data has moved"
        );
        assert!(r.take(40, 5, false));
        r.drop_pending(5, false);
        assert!(r.take(41, 5, false));
    }

    #[test]
    fn a_snoop_queue_frees_at_the_response_not_after_the_data() {
        // The caller (the command bus) says when a snoop queue's slot frees.
        let mut r = Retries::new(1, true, false);
        assert!(r.take(0, 5, false));
        r.granted(5, false, 100);
        assert!(!r.take(99, 5, false));
        assert!(r.take(100, 5, false));
    }

    #[test]
    fn split_queues_hold_reads_and_writes_apart() {
        let mut r = Retries::new(1, false, true);
        assert!(r.take(0, 5, false));
        assert!(!r.take(0, 5, false), "the read queue is full");
        assert!(r.take(0, 5, true), "the write queue has its own slot");
        assert!(!r.take(0, 5, true));
        let mut shared = Retries::new(1, false, false);
        assert!(shared.take(0, 5, false));
        assert!(!shared.take(0, 5, true), "one queue for both");
    }

    #[test]
    fn a_retried_requester_waits_its_back_off() {
        let mut r = Retries::new(1, false, false);
        assert!(r.may_send(3, 0));
        r.back_off(3, 120);
        assert!(!r.may_send(3, 119));
        assert!(r.may_send(3, 120));
        assert!(r.may_send(4, 0));
        assert_eq!(r.retried, 1);
    }

    #[test]
    fn the_memory_controller_has_its_own_depth_and_its_own_switch() {
        // MIC at ramp 11 with 3 slots; the other targets refuse nothing.
        let mut r = Retries::with_memory(1, false, false, false, 11, Some(3));
        assert!(r.covers(11) && !r.covers(5));
        assert!(r.take(0, 11, false) && r.take(0, 11, true) && r.take(0, 11, false));
        assert!(
            !r.take(0, 11, false),
            "three commands held: the fourth is retried"
        );
        assert!(r.frees_at_grant(11) && !r.frees_at_grant(5));
        // The other targets' queues on, the memory's off (eib.command_retry alone).
        let r = Retries::with_memory(1, false, false, true, 11, None);
        assert!(!r.covers(11) && r.covers(5));
        // A snoop queue frees at the response; the MIC's always when its data moved.
        let r = Retries::with_memory(1, true, false, true, 11, Some(3));
        assert!(r.frees_at_grant(11) && !r.frees_at_grant(5));
    }
}
