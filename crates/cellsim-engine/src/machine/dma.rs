//! An MFC command's way through the chip.
//!
//! 1. **Enqueue**: after the channel writes, the command takes its queue entry;
//!    the DMAC may start on it `to_eib` cycles later (Table 1, "DMA to EIB").
//! 2. **Unroll**: one bus request (at most 128 bytes, never crossing a 128-byte
//!    boundary of the effective address) per bus cycle into the BIU queue,
//!    alternating gets and puts, respecting barriers and fences.
//! 3. **Command bus**: one command per bus cycle chip-wide; the command phase
//!    (Table 1, "coherence protocol") ends with the combined response.
//! 4. **Data**: the sender's data must be ready — a put's data was read from
//!    the local store during the command phase; a get from another local store
//!    reads it after the response; a get from memory waits for the DRAM (the
//!    MIC started it when it snooped the command). Then the data arbiter grants
//!    a ring.
//! 5. **Completion**: a put completes when its data has reached the memory
//!    controller or the remote local store and the acknowledgement is back; a
//!    get when its data is in the local store. The bytes are copied then.
//! 6. **Retire**: when every bus request of a command is complete, the tag
//!    group is updated `completion` cycles later and the queue entry frees.

use super::{Event, Machine, SpeUnit};
use crate::bus::{BusOp, OpId, OpKind, Owner, Space};
use crate::mfc::command::Opcode;
use crate::mfc::queue::Entry;
use crate::storage::Storage;
use crate::time::{bus_edge, Cycle};

/// A byte position: a store and an offset in it.
type Place<'a> = (&'a Storage, usize);

/// Largest bus request.
const LINE: u64 = 128;

impl Machine {
    pub(super) fn enqueue(&mut self, tid: usize) {
        let now = self.now;
        let to_eib = self.timing.to_eib;
        let th = &mut self.threads[tid];
        let pend = th.pending.take().expect("an issued command is pending");
        let p = th.spe.expect("SPU thread").physical;
        self.ready.push_back(tid);
        let entry = Entry {
            cmd: pend.cmd,
            seq: 0,
            ready_at: now + to_eib,
            target: pend.target,
            remote: pend.remote,
            unrolled: 0,
            in_flight: 0,
            issued_at: pend.issued_at,
            started: false,
            retiring: false,
        };
        self.spes[p as usize].mfc.queue.insert(entry);
        if pend.cmd.op == Opcode::Barrier {
            self.retire_barriers(p);
        }
        self.wake_dmac(p, now + to_eib);
    }

    /// Schedules the DMAC of SPE `p` at the first bus edge at or after `t`,
    /// unless it is already due earlier.
    pub(super) fn wake_dmac(&mut self, p: u8, t: Cycle) {
        let t = bus_edge(t);
        let mfc = &mut self.spes[p as usize].mfc;
        if mfc.dmac_wake.is_some_and(|w| w <= t && w >= self.now) {
            return;
        }
        mfc.dmac_wake = Some(t);
        self.schedule(t, Event::Dmac(p));
    }

    /// The DMAC of SPE `p` creates at most one bus request.
    pub(super) fn dmac(&mut self, p: u8) {
        let now = self.now;
        let unit = &mut self.spes[p as usize];
        if unit.mfc.dmac_wake != Some(now) {
            return; // superseded by an earlier wake-up
        }
        unit.mfc.dmac_wake = None;
        if now < unit.mfc.dmac_free {
            let t = unit.mfc.dmac_free;
            self.wake_dmac(p, t);
            return;
        }
        let ramp = unit.ramp;
        if !self.bius[ramp.idx()].has_room() {
            unit.dmac_blocked = true;
            return;
        }
        let new_allowed = now >= unit.mfc.next_command;
        let (pick, later) = unit
            .mfc
            .queue
            .pick(now, !unit.mfc.last_was_get, new_allowed);
        let Some(slot) = pick else {
            let setup_over = (!new_allowed).then_some(unit.mfc.next_command);
            if let Some(t) = later.into_iter().chain(setup_over).min() {
                self.wake_dmac(p, t);
            }
            return;
        };
        let e = unit.mfc.queue.get_mut(slot);
        if !e.started {
            // Selecting and translating a new command occupies the DMAC's
            // command set-up for `command` cycles (bounds the command rate).
            unit.mfc.next_command = now + self.timing.command;
        }
        e.started = true;
        if e.cmd.size == 0 {
            // A zero-length transfer moves nothing and completes at once.
            let at = now + self.timing.completion;
            let q = &mut self.spes[p as usize].mfc.queue;
            q.unrolled(slot);
            let e = q.get_mut(slot);
            e.retiring = true;
            self.schedule(at, Event::Retire(p, slot));
            self.wake_dmac(p, now + Self::BUS);
            return;
        }
        let off = e.unrolled;
        let ea = e.cmd.ea + off as u64;
        let n = ((e.cmd.size - off) as u64).min(LINE - ea % LINE) as u32;
        e.unrolled += n;
        e.in_flight += 1;
        let is_get = e.cmd.op.is_get();
        let done = e.unrolled >= e.cmd.size;
        let op = BusOp {
            owner: Owner::Mfc { spe: p, slot },
            kind: if is_get { OpKind::Read } else { OpKind::Write },
            requester: ramp,
            target: e.target,
            size: n,
            lsa: e.cmd.lsa + off,
            remote: offset_space(e.remote, off),
            queued_at: now,
            respond_at: Cycle::MAX,
        };
        if done {
            unit.mfc.queue.unrolled(slot);
        }
        unit.mfc.last_was_get = is_get;
        let unroll = self.timing.unroll;
        unit.mfc.dmac_free = now + unroll;
        let id = self.new_op(op);
        let biu = &mut self.bius[ramp.idx()];
        biu.queue.push_back(id);
        let biu_full = !biu.has_room();
        self.wake_command_bus(now);
        if biu_full {
            // The command bus will restart the DMAC when it takes a request.
            self.spes[p as usize].dmac_blocked = true;
        } else {
            self.wake_dmac(p, now + unroll);
        }
    }

    /// The address concentrator accepts at most one command this bus cycle.
    /// Its data phase is scheduled at once: the data is ready at the sender
    /// when the command phase ends (a put's data was read out of the local
    /// store meanwhile), a local-store read `ls_access` later, and a memory
    /// read when the DRAM has delivered (the MIC starts on the reflected
    /// command `snoop` cycles after acceptance).
    pub(super) fn run_command_bus(&mut self) {
        let now = self.now;
        let Some(r) = self.command_bus.select(now, &self.bius, Self::BUS) else {
            if self.bius.iter().any(|b| b.can_send()) {
                self.wake_command_bus(now + Self::BUS);
            }
            return;
        };
        let biu = &mut self.bius[r.idx()];
        let id = biu.queue.pop_front().expect("selected BIU has a request");
        biu.outstanding += 1;
        let t = self.timing;
        let op = &mut self.ops[id];
        op.respond_at = now + t.command_phase;
        // The command bus orders every access (seed 000: it is the coherence
        // point): the request sees the sender's bytes as they are now, and
        // they land at the receiver when the request completes.
        if let Some(((src, off), _)) = Self::data_ends(op, &self.memory, &self.spes) {
            let buf = &mut self.staging[id as usize];
            if op.size as usize == buf.len() {
                // A full line: a fixed-size copy the compiler inlines.
                src.read_array(off, buf);
            } else {
                src.read(off, &mut buf[..op.size as usize]);
            }
        }
        let (kind, remote, size, respond_at) = (op.kind, op.remote, op.size, op.respond_at);
        if let Some(log) = self.eib.log.as_mut() {
            log.commands.push((now, size));
        }
        match (kind, remote) {
            (OpKind::Read, Space::Memory(_)) => self.schedule(now + t.mic_snoop, Event::Snoop(id)),
            (OpKind::Read, Space::Ls { .. }) => {
                self.schedule(respond_at + t.ls_access, Event::DataReady(id))
            }
            _ => self.schedule(respond_at, Event::DataReady(id)),
        }
        // The BIU has room again: a DMAC that stopped for it goes on in this
        // same bus cycle (inline, no calendar round trip).
        if let crate::topology::Element::Spe(p) = self.topo.element(r) {
            if std::mem::take(&mut self.spes[p as usize].dmac_blocked) {
                let unit = &mut self.spes[p as usize].mfc;
                if unit.dmac_wake.is_none() && unit.dmac_free <= now {
                    unit.dmac_wake = Some(now);
                    self.dmac(p);
                } else {
                    self.wake_dmac(p, now);
                }
            }
        }
        if self.bius.iter().any(|b| b.can_send()) {
            self.wake_command_bus(now + Self::BUS);
        }
    }

    /// The MIC sees a read: its DRAM access starts now or when the
    /// requester's window has room.
    pub(super) fn snoop(&mut self, id: OpId) {
        let op = self.ops[id];
        if let Some(ready) = self
            .mic
            .snoop_read(self.now, op.requester.idx(), id, op.size)
        {
            self.schedule(ready.max(op.respond_at), Event::DataReady(id));
        }
    }

    /// Data is at the sender and the command phase is over: ask for a ring.
    pub(super) fn data_ready(&mut self, id: OpId) {
        let op = &self.ops[id];
        self.arbiter.request(op.data_src(), op.data_dst(), id);
        self.wake_arbiter(self.now);
    }

    /// One arbitration of the data rings. A granted transfer's completion is
    /// known at once: the receiver has the last beat at `arrive`; a get is
    /// complete when the data is written into the local store, a put when the
    /// memory controller has taken it (architecture notes) or the remote local
    /// store has written it, and the acknowledgement is back.
    pub(super) fn run_arbiter(&mut self) {
        let now = self.now;
        let mic_ramp = self.topo.mic();
        let (ls_access, mic_accept, put_ack) = (
            self.timing.ls_access,
            self.timing.mic_accept,
            self.timing.put_ack,
        );
        let Machine {
            arbiter,
            eib,
            mic,
            ops,
            calendar,
            ..
        } = self;
        let retry = arbiter.arbitrate(now, |id| {
            let op = &ops[id];
            let (src, dst) = (op.data_src(), op.data_dst());
            let to_memory = op.kind == OpKind::Write && matches!(op.remote, Space::Memory(_));
            if to_memory {
                mic.write_buffer(now)?;
            }
            let g = eib.try_grant(now, src, dst, op.size)?;
            let done = match (op.kind, op.remote) {
                (_, Space::None) => g.arrive,
                (OpKind::Read, _) => g.arrive + ls_access,
                (OpKind::Write, Space::Memory(_)) => {
                    mic.write(g.arrive, op.size);
                    g.arrive + mic_accept + put_ack
                }
                (OpKind::Write, Space::Ls { .. }) => g.arrive + ls_access + put_ack,
            };
            if src == mic_ramp && matches!(op.remote, Space::Memory(_)) {
                if let Some((next, ready)) = mic.read_sent(now, op.requester.idx(), |i| ops[i].size)
                {
                    calendar.schedule(ready.max(ops[next].respond_at), Event::DataReady(next));
                }
            }
            calendar.schedule(done, Event::Complete(id));
            Ok(g.start + g.beats_time)
        });
        if let Some(t) = retry {
            if t != Cycle::MAX {
                self.wake_arbiter(t.max(now + 1));
            }
        }
    }

    /// The two ends of a bus request's data, as (store, offset) pairs:
    /// `(sender, receiver)`. `None` for synthetic traffic.
    fn data_ends<'a>(
        op: &BusOp,
        memory: &'a Storage,
        spes: &'a [SpeUnit],
    ) -> Option<(Place<'a>, Place<'a>)> {
        let Owner::Mfc { spe, .. } = op.owner else {
            return None;
        };
        let local = (&*spes[spe as usize].ls, op.lsa as usize);
        let remote = match op.remote {
            Space::Memory(a) => (memory, a as usize),
            Space::Ls { spe: q, offset } => (&*spes[q as usize].ls, offset as usize),
            Space::None => return None,
        };
        Some(match op.kind {
            OpKind::Read => (remote, local),
            OpKind::Write => (local, remote),
        })
    }

    /// The requester hears that a bus request is complete; the bytes are in
    /// place from this cycle on.
    pub(super) fn complete(&mut self, id: OpId) {
        let now = self.now;
        let op = self.ops[id];
        // The bytes staged when the command bus accepted the request are in
        // place at the receiver from now on.
        if let Some((_, (dst, off))) = Self::data_ends(&op, &self.memory, &self.spes) {
            let buf = &self.staging[id as usize];
            if op.size as usize == buf.len() {
                dst.write_array(off, buf);
            } else {
                dst.write(off, &buf[..op.size as usize]);
            }
            match op.kind {
                OpKind::Read => self.counters.get_bytes += op.size as u64,
                OpKind::Write => self.counters.put_bytes += op.size as u64,
            }
        }
        self.ops.remove(id);
        self.counters.bus_completed += 1;
        let biu = &mut self.bius[op.requester.idx()];
        biu.outstanding -= 1;
        if !biu.queue.is_empty() {
            self.wake_command_bus(now);
        }
        if let Owner::Mfc { spe, slot } = op.owner {
            let completion = self.timing.completion;
            let e = self.spes[spe as usize].mfc.queue.get_mut(slot);
            e.in_flight -= 1;
            if e.in_flight == 0 && e.fully_unrolled() {
                e.retiring = true;
                self.schedule(now + completion, Event::Retire(spe, slot));
            }
        }
    }

    /// A command retires: its tag group and queue entry are freed.
    pub(super) fn retire(&mut self, p: u8, slot: u8) {
        let mfc = &mut self.spes[p as usize].mfc;
        let e = mfc.queue.remove(slot);
        mfc.tags.retire(e.cmd.tag);
        self.check_tag_waiter(p);
        self.check_queue_waiter(p);
        self.retire_barriers(p);
        // Barriers and fences may have been waiting for this command.
        self.wake_dmac(p, self.now);
    }

    /// `mfc_barrier` entries whose earlier commands are done retire.
    fn retire_barriers(&mut self, p: u8) {
        let completion = self.timing.completion;
        let q = &self.spes[p as usize].mfc.queue;
        let ready: Vec<u8> = q
            .completable_barriers()
            .filter(|&s| !q.get(s).retiring)
            .collect();
        for slot in ready {
            self.spes[p as usize].mfc.queue.get_mut(slot).retiring = true;
            self.schedule(self.now + completion, Event::Retire(p, slot));
        }
    }
}

fn offset_space(s: Space, off: u32) -> Space {
    match s {
        Space::Memory(a) => Space::Memory(a + off as u64),
        Space::Ls { spe, offset } => Space::Ls {
            spe,
            offset: offset + off,
        },
        Space::None => Space::None,
    }
}
