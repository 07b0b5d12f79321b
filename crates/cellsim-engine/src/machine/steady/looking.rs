//! Looking at the state: every so many commands, the fast-forward writes
//! the state's shape (each part's, by its contract: `crate::part`) and
//! compares it with the looks it keeps; a repeat arms a recording or calls
//! the jump.

use super::periods::plain;
use super::*;
use crate::bus::Owner;
use crate::part::Part;
use crate::steady::Shape;
use crate::time::Cycle;

/// What kind of calendar event a shape's word is: the tag in its second
/// byte (the first holds the SPE of a DMAC wake-up). Events outside shapes
/// (synthetic traffic, a program's code) have none.
#[derive(Clone, Copy)]
enum EventTag {
    Dmac = 0,
    Snoop = 1,
    DataReady = 2,
    Complete = 3,
    Wake = 4,
    Enqueue = 5,
    Retire = 6,
    Decided = 7,
}

impl EventTag {
    /// The tag, in its place in a shape's word.
    #[inline]
    fn word(self) -> u64 {
        (self as u64) << 8
    }
}

/// A shape's hash, to find it again among earlier looks (equal shapes are
/// then compared word by word).
fn hash(words: &[u64]) -> u64 {
    words.iter().fold(words.len() as u64, |h, &w| {
        (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
    })
}

impl Machine {
    /// Called after each step: every so many commands, looks at the state,
    /// and jumps over whole periods of a steady state, ending before `limit`.
    #[inline]
    pub(in crate::machine) fn maybe_fast_forward(&mut self, limit: Cycle) {
        if !self.ff.enabled {
            return;
        }
        // (Whether the anchor retired in this step.)
        let aligned = std::mem::take(&mut self.ff.aligned);
        let commands = self.commands();
        if commands >= self.ff.next_look && self.ready.is_empty() {
            let ff = &mut self.ff;
            if ff.spacing > ALIGN_SPACING && !aligned && !ff.disturbed {
                // Spaced-out looks wait for the anchor's next retirement,
                // or look anyway when it does not come within a spacing.
                if commands < ff.next_look + ff.spacing {
                    return;
                }
                ff.anchor = None;
            }
            self.look(limit);
        }
    }

    /// Something outside shapes happened (an event, a program ran): the
    /// state is a new one, looked at soon (a look far off, or a long
    /// recording under way, would wait for a state that is gone).
    #[inline]
    pub(in crate::machine) fn disturb(&mut self) {
        if !self.ff.disturbed {
            self.ff.disturbed = true;
            let soon = self.commands() + self.ff.floor;
            self.ff.next_look = self.ff.next_look.min(soon);
        }
    }

    /// A command of SPE `p` retired: a spaced-out look may follow this step
    /// (see `FastForward::anchor`).
    #[inline]
    pub(in crate::machine) fn retired_for_looks(&mut self, p: u8) {
        let ff = &mut self.ff;
        if ff.spacing > ALIGN_SPACING && *ff.anchor.get_or_insert(p) == p {
            ff.aligned = true;
        }
    }

    /// Commands accepted on every chip's command bus (kept by the step
    /// loop: this is read at every step).
    #[inline]
    pub(super) fn commands(&self) -> u64 {
        debug_assert_eq!(self.commands_accepted, self.count_commands());
        self.commands_accepted
    }

    /// Counts the commands accepted on every chip's command bus.
    pub(in crate::machine) fn count_commands(&self) -> u64 {
        self.chips.iter().map(|c| c.command_bus.accepted).sum()
    }

    pub(super) fn look(&mut self, limit: Cycle) {
        let commands = self.commands();
        let ff = &mut self.ff;
        ff.next_look = commands + ff.spacing;
        if std::mem::take(&mut ff.disturbed) {
            // A new state: whatever steady state follows starts from here.
            if ff.jumped {
                ff.floor = (ff.floor / 2).max(FIRST_SPACING);
            } else if ff.looked {
                ff.floor = (ff.floor * 2).min(MAX_FLOOR);
            }
            (ff.looked, ff.jumped) = (false, false);
            ff.disarm();
            ff.history.clear();
            ff.anchor = None;
            ff.spacing = ff.floor;
            ff.misses = 0;
            return;
        }
        let names = std::mem::take(&mut self.ff.names);
        let Some((mut shape, boundary)) = self.steady_shape(names) else {
            self.ff.disarm();
            return;
        };
        self.ff.names = shape.finish();
        self.ff.shape_len = shape.words.len();
        let progress = self.progress();
        self.ff.looked = true;
        // While the state is young every look is kept, and recorded from,
        // so that a period is jumped as soon as it is found.
        let young = self.ff.history.len() < YOUNG_LOOKS;
        // Short periods are recorded from the first look (a state's first
        // windows are short); once looks have backed off and the state is
        // no longer young, recording (which costs on every transfer) waits
        // for a first repeat.
        let mut record = young || self.ff.spacing <= RECORD_SPACING;
        if let Some(last) = self.ff.snaps.last() {
            let last_at = last.commands;
            let same = shape.words == last.words;
            if same && !last.recorded {
                // A repeat: record the next period.
                self.arm(shape, progress, true, false);
                self.ff.next_look = commands + (commands - last_at);
                return;
            }
            let i = self.ff.snaps.len() - 1;
            if same && self.ff.replayable(i) {
                if self.jump_from(i, &shape, &progress, boundary, limit) {
                    return;
                }
            } else {
                // No period of this length: after a few misses, try longer ones.
                let ff = &mut self.ff;
                ff.misses += 1;
                if ff.misses >= MISSES {
                    // While the state is young, looks stay close enough to
                    // see most phases of the anchor (each is then seen again
                    // a period on); later, rarer.
                    let max = if young { YOUNG_SPACING } else { MAX_SPACING };
                    ff.spacing = (ff.spacing * 2).min(max).max(ff.spacing);
                    ff.misses = 0;
                }
            }
        }
        // A shape seen some looks ago: the period may be that long (the
        // state has a position in each queue's rotation and each declared
        // loop, which may take many looks to come round). Jump from that
        // look if it is kept; else record from here and look again one
        // such period on.
        // With each command's progress: a period long enough to be
        // remembered replaces the commands, which must come back as far.
        let dones: Vec<u64> = progress.iter().map(|x| x.done as u64).collect();
        let h = hash(&shape.words) ^ hash(&dones).rotate_left(1);
        if let Some(&then) = self.ff.history.get(&h) {
            let kept = self.ff.snaps.iter().position(|a| a.commands == then);
            match kept {
                Some(i) if self.ff.replayable(i) && shape.words == self.ff.snaps[i].words => {
                    if self.jump_from(i, &shape, &progress, boundary, limit) {
                        return;
                    }
                    // (Not yet: the next looks meet the next kept ones.)
                }
                _ => {
                    let period = commands - then;
                    if period > self.ff.spacing {
                        self.ff.next_look = commands + period;
                        record = true;
                    }
                }
            }
        }
        let ff = &mut self.ff;
        if ff.history.len() == HISTORY {
            ff.history.clear();
        }
        ff.history.insert(h, commands);
        self.arm(shape, progress, record, young);
    }

    /// The state's shape and the first event outside it, if the state is one
    /// a shape covers whole; `names` is the shape's scratch space.
    pub(super) fn steady_shape(&self, names: Vec<u32>) -> Option<(Shape, Cycle)> {
        let whole = self.trace.is_none()
            && self.chips.iter().all(|c| c.eib.log.is_none())
            && self
                .bif
                .as_ref()
                .is_none_or(|b| b.links.iter().all(|l| l.log.is_none()))
            && self.ls_loops.is_empty()
            && self.ls_computes == 0 // the port's log is not in shapes
            && self.core_wake == Cycle::MAX
            && self.traffic.is_none()
            && self.ready.is_empty()
            && self.fault.is_none()
            && !self.mbox_changed
            && self.reservations.is_empty()
            && self.spes.iter().all(|u| {
                [&u.mfc.queue, &u.mfc.proxy].iter().all(|q| {
                    q.entries()
                        .all(|(_, e)| e.list.is_none() && e.cmd.op.atomic().is_none())
                })
            });
        if !whole {
            return None;
        }
        let now = self.now;
        let mut s = Shape::new(now, names, self.ff.shape_len);
        let mut boundary = Cycle::MAX;
        // Slots are named by their rank in issue order (see `CommandQueue::shape`).
        let queues = |u: &crate::machine::SpeUnit| [u.mfc.queue.depth(), u.mfc.proxy.depth()];
        let stride = self.spes.iter().flat_map(queues).max().unwrap_or(0);
        let mut ranks = vec![u8::MAX; self.spes.len() * 2 * stride];
        for (u, r) in self.spes.iter().zip(ranks.chunks_mut(2 * stride)) {
            u.mfc.queue.write_ranks(&mut r[..stride]);
            u.mfc.proxy.write_ranks(&mut r[stride..]);
        }
        let rank = |p: u8, proxy: bool, slot: u8| {
            ranks[(p as usize * 2 + proxy as usize) * stride + slot as usize]
        };
        self.calendar.for_each_in_order(|t, e| {
            if !self.in_shape(e) {
                boundary = boundary.min(t);
                return;
            }
            s.time(t);
            match *e {
                Event::Wake(tid) => s.raw(EventTag::Wake.word() | (tid as u64) << 16),
                Event::Enqueue(tid) => s.raw(EventTag::Enqueue.word() | (tid as u64) << 16),
                Event::Retire(p, slot, proxy) => {
                    let r = rank(p, proxy, slot) as u64;
                    s.raw(
                        EventTag::Retire.word() | (p as u64) << 16 | r << 24 | (proxy as u64) << 32,
                    )
                }
                Event::Dmac(p) => s.raw(EventTag::Dmac.word() | p as u64),
                Event::Snoop(op) => {
                    s.raw(EventTag::Snoop.word());
                    s.op(op)
                }
                Event::DataReady(op) => {
                    s.raw(EventTag::DataReady.word());
                    s.op(op)
                }
                Event::Complete(op) => {
                    s.raw(EventTag::Complete.word());
                    s.op(op)
                }
                Event::Decided(op) => {
                    s.raw(EventTag::Decided.word());
                    s.op(op)
                }
                _ => unreachable!("events outside shapes are skipped"),
            }
        });
        // Every part writes what decides its future (its contract, `crate::part`).
        self.chips.iter().for_each(|c| c.shape(&mut s));
        if let Some(b) = &self.bif {
            b.shape(&mut s);
        }
        self.mics.iter().for_each(|m| m.shape(&mut s));
        self.spes.iter().for_each(|u| u.mfc.shape(&mut s));
        self.threads.iter().for_each(|t| t.shape(&mut s));
        // The requests, in the order met, without their addresses.
        let mut whole = s.ops.len() == self.ops.live();
        for i in 0..s.ops.len() {
            let op = self.ops[s.ops[i]];
            whole &= plain(&op);
            let Owner::Mfc { spe, slot, proxy } = op.owner else {
                continue;
            };
            let slot = rank(spe, proxy, slot);
            for v in [spe as u64, slot as u64, proxy as u64, op.kind as u64] {
                s.raw(v);
            }
            for v in [op.requester.0, op.target.0] {
                s.raw(v as u64);
            }
            s.raw(op.size as u64);
            crate::steady::space(&mut s, op.remote, false);
            s.raw(op.leg as u64);
            // (`queued_at` is history: nothing reads it.)
            s.time(op.respond_at);
        }
        whole.then_some((s, boundary))
    }

    /// Takes `shape` as the state a period may start from; `record`: logs
    /// the byte moves from here (a jump needs them); `keep`: the looks kept
    /// stay, if recorded (see `FastForward::snaps`), else they are dropped.
    pub(super) fn arm(&mut self, shape: Shape, progress: Vec<Progress>, record: bool, keep: bool) {
        let ops = shape
            .ops
            .iter()
            .map(|&id| {
                let op = self.ops[id];
                (id, op.lsa, op.remote)
            })
            .collect();
        let ff = &mut self.ff;
        if !(keep && record && ff.recording) {
            // A new recording: the requests alive are numbered in the
            // order of the shape.
            ff.disarm();
            for (c, &id) in shape.ops.iter().enumerate() {
                let i = id as usize;
                if ff.serial.len() <= i {
                    ff.serial.resize(i + 1, 0);
                }
                ff.serial[i] = c as u32;
            }
            ff.next_serial = shape.ops.len() as u32;
        }
        ff.disturbed = false;
        ff.recording = record;
        let serials = shape.ops.iter().map(|&id| ff.serial[id as usize]).collect();
        let armed = Armed {
            words: shape.words,
            recorded: record,
            log_at: ff.log.len(),
            base: ff.next_serial,
            serials,
            commands: self.commands(),
            at: self.now,
            ops,
            dones: progress,
            seqs: self.next_seqs(),
            scripts: self
                .threads
                .iter()
                .map(|t| t.script.map(|x| x.left))
                .collect(),
            pending: self
                .threads
                .iter()
                .map(|t| t.pending.map(|p| self.now - p.issued_at))
                .collect(),
            tlbs: self
                .spes
                .iter()
                .map(|u| u.mfc.tlb.as_ref().map(|t| t.counts()))
                .collect(),
            latencies: self
                .dma_latencies
                .as_ref()
                .map_or_else(Vec::new, |v| v.iter().map(|l| l.len()).collect()),
            totals: self.totals(),
        };
        self.ff.snaps.push(armed);
    }

    /// Every queue entry's bytes unrolled and issue number.
    pub(super) fn progress(&self) -> Vec<Progress> {
        let mut v = Vec::new();
        for (p, u) in self.spes.iter().enumerate() {
            for (proxy, q) in [(false, &u.mfc.queue), (true, &u.mfc.proxy)] {
                // In issue order: entries are compared by rank (see `CommandQueue::shape`).
                v.extend(q.issue_order().iter().map(|&s| {
                    let e = q.get(s);
                    let started = if e.started {
                        self.now - e.started_at + 1
                    } else {
                        0
                    };
                    Progress {
                        spe: p as u8,
                        proxy,
                        slot: s,
                        done: e.seg.done,
                        seq: e.seq,
                        issued: self.now - e.issued_at,
                        started,
                    }
                }));
            }
        }
        v
    }

    pub(super) fn next_seqs(&self) -> Vec<u64> {
        self.spes
            .iter()
            .flat_map(|u| [u.mfc.queue.next_seq(), u.mfc.proxy.next_seq()])
            .collect()
    }
}
