//! An MFC command's way through the chip, on the bus side.
//!
//! 1.-2. **Enqueue** and **unroll**: the DMAC's handlers (`mfc::dmac`,
//!    routed by `machine/dmac.rs`)
//!    put the command in its queue and unroll it into bus requests in its
//!    BIU's queue.
//! 3. **Command bus**: one command per bus cycle chip-wide; the command phase
//!    (Table 1, "coherence protocol") ends with the combined response. The
//!    command bus is the coherence point: a request reads its source bytes
//!    here, a write to main memory takes effect here, and lock-line
//!    reservations are set, checked and lost here.
//! 4. **Data**: the sender's data must be ready — a put's data was read from
//!    the local store during the command phase; a get from another local store
//!    reads it after the response; a get from memory waits for the DRAM (the
//!    MIC started it when it snooped the command); a problem-state register
//!    answers after `mmio_access`. Then the data arbiter grants a ring.
//! 5. **Completion**: a put completes when its data has reached the memory
//!    controller or the remote local store (or register) and the
//!    acknowledgement is back; a get when its data is in the local store.
//!    Bytes for local stores and registers land then.
//! 6. **Retire**: when every bus request of a command is complete, the DMAC
//!    retires it (`mfc::dmac`).
//!
//! The data arbiter's round (step 4) is its chip's bus's (`eib::round`).

use super::steady::DataMove;
use super::threads::{ThreadId, ThreadState};
use super::{Event, Machine, SpeUnit};
use crate::atomic::Holder;
use crate::bus::{BusOp, Leg, OpId, OpKind, Owner, Space};
use crate::config::GrantDelay;
use crate::eib::round::Round;
use crate::mailbox::Outbound;
use crate::memory_map::ps;
use crate::mfc::command::Atomic;
use crate::storage::Storage;
use crate::time::Cycle;
use crate::topology::Ramp;
use crate::trace::Track;

impl Machine {
    /// The address concentrator accepts at most one command this bus cycle.
    /// This is the coherence point: the request's source bytes are read,
    /// main-memory writes and reservations take effect. Its data phase is
    /// scheduled at once.
    #[inline(always)]
    pub(super) fn run_command_bus(&mut self, chip: usize) {
        // The variant of outbound put lines chooses the code once: with it
        // off (the default), the BIUs' checks are what they were before it.
        // So does the variant of command retries (`eib.command_retry`).
        if self.chips[chip].cb_variants {
            self.command_bus_variants(chip)
        } else {
            self.command_bus_cycle::<false, false>(chip)
        }
    }

    #[inline(never)]
    fn command_bus_variants(&mut self, chip: usize) {
        match (
            self.chips[chip].put_lines,
            self.chips[chip].retries.is_some(),
        ) {
            (true, false) => self.command_bus_cycle::<true, false>(chip),
            (false, true) => self.command_bus_cycle::<false, true>(chip),
            (true, true) => self.command_bus_cycle::<true, true>(chip),
            (false, false) => self.command_bus_cycle::<false, false>(chip),
        }
    }

    /// [`Machine::run_command_bus`], with puts needing outbound lines or
    /// not, and with commands to a full target retried or not.
    #[inline(always)]
    fn command_bus_cycle<const LINES: bool, const RETRY: bool>(&mut self, chip: usize) {
        let now = self.now;
        let c = &mut self.chips[chip];
        let selected = if RETRY {
            let r = c.retries.as_ref().expect("retries on");
            c.command_bus
                .select_held::<LINES>(now, &c.bius, Self::BUS, r)
        } else {
            c.command_bus.select::<LINES>(now, &c.bius, Self::BUS)
        };
        let Some(local) = selected else {
            if RETRY {
                self.wake_after_retries::<LINES>(chip);
            } else if c.bius.iter().any(|b| b.can_send::<LINES>(now)) {
                self.wake_command_bus(chip, now + Self::BUS);
            }
            return;
        };
        // The count the fast-forward's looks read (select counted it on the chip).
        self.commands_accepted += 1;
        // Without retries the chip's bus is still the one selected from
        // (no second look-up).
        let c = if RETRY {
            if self.retried(chip, local) {
                self.wake_after_retries::<LINES>(chip);
                return;
            }
            &mut self.chips[chip]
        } else {
            c
        };
        let biu = &mut c.bius[local.idx()];
        let id = biu.pop::<LINES>(now).expect("selected BIU has a request");
        biu.outstanding += 1;
        if let Some(log) = c.eib.log.as_mut() {
            log.commands.push((now, self.ops[id].size));
        }
        // The few timing values needed, not a copy of the whole Timing.
        let t = &self.timing;
        let (bif_latency, mic_snoop, ls_access, mmio_access) =
            (t.bif_latency, t.mic_snoop, t.ls_access, t.mmio_access);
        self.ops[id].respond_at = now + t.command_phase + self.other_chips_snoop(id);
        self.coherence_point(id);
        let op = self.ops[id];
        if RETRY && op.failed {
            // A failed conditional store moves no data: the slot it took frees.
            let t = op.target;
            let r = self.chips[t.chip()].retries.as_mut().expect("retries on");
            if r.frees_at_grant(t.local().idx()) {
                r.drop_pending(t.local().idx(), op.kind == OpKind::Write);
            }
        }
        // The memory's MIC sees the command when it is reflected on its chip.
        let (mic_sees, windowed_write) = match op.remote {
            Space::Memory(a) => {
                let node = self.numa.node_of(a);
                let cross = if node == chip { 0 } else { bif_latency };
                (now + mic_snoop + cross, self.mics[node].windows_writes())
            }
            _ => (0, false),
        };
        let leave = op.data_may_leave(bif_latency);
        match (op.kind, op.remote) {
            _ if op.failed => self.schedule(op.respond_at, Event::Complete(id)),
            (OpKind::Read, Space::Memory(_)) => self.schedule(mic_sees, Event::Snoop(id)),
            (OpKind::Write, Space::Memory(_)) if windowed_write => {
                self.schedule(mic_sees, Event::Snoop(id))
            }
            (OpKind::Read, Space::Ls { .. }) => {
                self.schedule(leave + ls_access, Event::DataReady(id))
            }
            (OpKind::Read, Space::Ps { .. }) => {
                self.schedule(leave + mmio_access, Event::DataReady(id))
            }
            _ => self.schedule(op.respond_at, Event::DataReady(id)),
        }
        // The BIU has room again: a DMAC that stopped for it goes on in this
        // same bus cycle (inline, no calendar round trip).
        if let Some(p) = self.topo.spe_at(Ramp::on_chip(chip, local)) {
            // Looked at before the DMAC's context is made: most commands
            // find their DMAC going.
            if self.spes[p as usize].mfc.dmac_blocked {
                let (mfc, mut cx) = self.dmac_of(p);
                if mfc.biu_room(&mut cx) {
                    self.dmac(p);
                }
            }
        }
        if RETRY {
            self.wake_after_retries::<LINES>(chip);
        } else if self.chips[chip]
            .bius
            .iter()
            .any(|b| b.can_send::<LINES>(now))
        {
            self.wake_command_bus(chip, now + Self::BUS);
        }
    }

    /// Whether the command at the head of element `local`'s BIU finds its
    /// target's command queue full (variant `eib.command_retry`): then its
    /// combined response is "retry" and the element backs off; otherwise the
    /// command takes a slot of the queue. The memory controller's queues
    /// are its own (windows, write buffers): commands to memory never retry.
    #[inline(never)]
    fn retried(&mut self, chip: usize, local: Ramp) -> bool {
        let now = self.now;
        let id = self.chips[chip].bius[local.idx()]
            .head()
            .expect("selected BIU has a request");
        let target = self.ops[id].target;
        let t = target.local().idx();
        let retries = self.chips[target.chip()].retries.as_ref();
        if !retries.expect("every chip has retries").covers(t) {
            return false;
        }
        let response = now + self.timing.command_phase + self.other_chips_snoop(id);
        let at = self.chips[target.chip()]
            .retries
            .as_mut()
            .expect("every chip has retries");
        let write = self.ops[id].kind == OpKind::Write;
        if at.take(now, t, write) {
            if !at.frees_at_grant(t) {
                at.granted(t, write, response);
            }
            return false;
        }
        let until = response + self.timing.retry_backoff;
        self.chips[chip]
            .retries
            .as_mut()
            .expect("retries on")
            .back_off(local.idx(), until);
        true
    }

    /// Wakes the command bus when the next element may send: next bus
    /// cycle, or when the earliest back-off ends (variant `eib.command_retry`).
    #[inline(never)]
    fn wake_after_retries<const LINES: bool>(&mut self, chip: usize) {
        let now = self.now;
        let c = &self.chips[chip];
        let r = c.retries.as_ref().expect("retries on");
        let t = (0..c.bius.len())
            .filter(|&i| c.bius[i].can_send::<LINES>(now))
            .map(|i| r.held_until(i).max(now + Self::BUS))
            .min();
        if let Some(t) = t {
            self.wake_command_bus(chip, t);
        }
    }

    /// What the other chip adds to a command's combined response on a
    /// two-chip machine: it snoops every coherent command (main memory), and
    /// a command for one of its elements is forwarded to it and answered back.
    #[inline]
    fn other_chips_snoop(&self, id: OpId) -> Cycle {
        let Some(b) = &self.bif else {
            return 0;
        };
        let op = &self.ops[id];
        if matches!(op.remote, Space::Memory(_)) || op.leg != Leg::Within {
            b.snoop
        } else {
            0
        }
    }

    /// What happens to memory, registers and reservations when the command
    /// bus orders request `id`.
    // Inlined into both copies of the command bus's cycle (as it was into
    // the one before the variant of put lines made two).
    #[inline(always)]
    fn coherence_point(&mut self, id: OpId) {
        let op = self.ops[id];
        if self.ff.recording {
            let s = self.ff.serial[id as usize];
            self.ff.moved(DataMove::Coherence(s, op));
        }
        let n = op.size as usize;
        let mfc_spe = match op.owner {
            Owner::Mfc { spe, .. } => Some(spe),
            _ => None,
        };
        if let Owner::PpeCache { .. } = op.owner {
            // The L2's line fetches and castouts: the bytes are in memory already.
            return;
        }
        match (op.kind, op.remote) {
            (OpKind::Read, Space::Memory(a)) => {
                read_into(&self.memory, a as usize, &mut self.staging[id as usize], n);
                if op.atomic == Some(Atomic::GetLLAR) {
                    self.reservations
                        .reserve(Holder::Spe(mfc_spe.expect("MFC")), a);
                }
            }
            (OpKind::Read, Space::Ls { spe, offset }) => {
                self.ls_touch(spe);
                read_into(
                    &self.spes[spe as usize].ls,
                    offset as usize,
                    &mut self.staging[id as usize],
                    n,
                );
            }
            (OpKind::Read, Space::Ps { spe, reg }) => {
                let v = self.read_register(spe, reg);
                self.staging[id as usize][..4].copy_from_slice(&v.to_be_bytes());
            }
            (OpKind::Write, Space::Memory(a)) => {
                let p = mfc_spe.expect("memory writes come from an MFC");
                if op.atomic == Some(Atomic::PutLLC) && !self.reservations.holds(Holder::Spe(p), a)
                {
                    self.ops[id].failed = true;
                    return;
                }
                let ls = &self.spes[p as usize].ls;
                Storage::copy(ls, op.lsa as usize, &self.memory, a as usize, n);
                self.reservations.written(a, n as u64);
                if op.atomic == Some(Atomic::PutLLC) {
                    // Its own conditional store used the reservation up: not lost.
                    self.reservations.take_lost(p);
                }
                // Coherence: the PPE's caches give the lines up.
                self.ppu.snoop_write(a, n as u64);
                self.ls_touch(p);
                self.counters.put_bytes += n as u64;
            }
            (OpKind::Write, Space::Ls { .. } | Space::Ps { .. }) => {
                if let Some(p) = mfc_spe {
                    self.ls_touch(p);
                    read_into(
                        &self.spes[p as usize].ls,
                        op.lsa as usize,
                        &mut self.staging[id as usize],
                        n,
                    );
                }
                // A PPE store's bytes were staged when it was issued.
            }
            (_, Space::None) => {}
        }
    }

    /// A problem-state register read through the memory map.
    fn read_register(&mut self, p: u8, reg: u32) -> u32 {
        let mbox = &mut self.spes[p as usize].mbox;
        let v = match reg {
            ps::SPU_OUT_MBOX => mbox.take_outbound(Outbound::Plain),
            ps::SPU_OUT_INTR_MBOX => mbox.take_outbound(Outbound::Interrupt),
            ps::SPU_MBOX_STAT => return mbox.status(),
            _ => return 0,
        };
        if v.is_some() {
            self.mbox_changed = true;
        }
        v.unwrap_or(u32::MAX)
    }

    /// The MIC sees a request: a read's DRAM access starts now, a write's
    /// data may come after the combined response — or either waits until
    /// the requester's window has room.
    pub(super) fn snoop(&mut self, id: OpId) {
        let op = self.ops[id];
        let Space::Memory(a) = op.remote else {
            unreachable!("only memory requests are snooped")
        };
        let bank = self.bank(a);
        let who = op.requester.idx();
        let mic = &mut self.mics[bank];
        let ready = match op.kind {
            OpKind::Read => mic.snoop_read(self.now, who, id, a, op.size),
            OpKind::Write => mic.snoop_write(who, id).then_some(self.now),
        };
        if let Some(ready) = ready {
            let leave = op.data_may_leave(self.timing.bif_latency);
            self.schedule(ready.max(leave), Event::DataReady(id));
        }
    }

    /// Data is at the sender (of this leg) and the command phase is over:
    /// ask the sender's chip for a ring.
    #[inline(always)]
    pub(super) fn data_ready(&mut self, id: OpId) {
        if self.grant_delay != GrantDelay::None {
            return self.grant_decision(id);
        }
        self.ask_for_ring(id);
    }

    /// The data arbiter takes `eib.grant_delay_bus_cycles` (per segment of
    /// the path with `eib.grant_delay = "hops"`) to decide on a transfer
    /// whose data is ready (variant `eib.grant_delay`): it asks for a ring then.
    #[inline(never)]
    fn grant_decision(&mut self, id: OpId) {
        let (src, dst) = self.ops[id].leg_ends(&self.topo);
        let d = match self.grant_delay {
            GrantDelay::Hops => {
                crate::topology::Topology::route(src, dst).0 as Cycle * self.timing.grant_delay
            }
            _ => self.timing.grant_delay,
        };
        self.schedule(self.now + d, Event::Decided(id));
    }

    /// The arbiter has decided on transfer `id` (variant `eib.grant_delay`).
    #[inline(never)]
    pub(super) fn decided(&mut self, id: OpId) {
        self.ask_for_ring(id);
    }

    /// The data is ready and the arbiter considers it: ask the sender's
    /// chip for a ring.
    #[inline(always)]
    fn ask_for_ring(&mut self, id: OpId) {
        let (src, dst) = self.ops[id].leg_ends(&self.topo);
        let chip = src.chip();
        let c = &mut self.chips[chip];
        let port_free = c.eib.send_free(src.local());
        c.arbiter.request(src.local(), dst.local(), id, port_free);
        self.wake_arbiter(chip, self.now.max(port_free));
    }

    /// One arbitration of the data rings. A granted transfer's completion is
    /// known at once: the receiver has the last beat at `arrive`; a get is
    /// complete when the data is written into the local store, a put when the
    /// memory controller has taken it (architecture notes) or the remote local
    /// store or register has written it, and the acknowledgement is back.
    #[inline]
    pub(super) fn run_arbiter(&mut self, chip: usize) {
        // The put flow-control variants choose the round's code once: with
        // them off a round pays no check for them (docs/performance.md).
        // Two copies of the round, not one per combination: each copy's
        // grant closure has the ring's `try_grant` inlined.
        // With command retries (`eib.command_retry`) a third and fourth
        // copy free the targets' command slots.
        match self.chips[chip].round_mode {
            1 => self.arbiter_round::<true, false>(chip),
            0 => self.arbiter_round::<false, false>(chip),
            _ => self.arbiter_round_retries(chip),
        }
    }

    #[inline(never)]
    fn arbiter_round_retries(&mut self, chip: usize) {
        if self.chips[chip].put_flow {
            self.arbiter_round::<true, true>(chip)
        } else {
            self.arbiter_round::<false, true>(chip)
        }
    }

    /// [`Machine::run_arbiter`]; `FLOW`: whether puts may need a receiver's
    /// credit (variant `eib.put_flow`) or an outbound line (variant
    /// `biu.put_flow`), then checked at each grant.
    // Out of line: inlined into the step loop's loop over chips, the
    // addresses its grant closure captures are hoisted and spilled there.
    #[inline(never)]
    fn arbiter_round<const FLOW: bool, const RETRY: bool>(&mut self, chip: usize) {
        let now = self.now;
        let Machine {
            chips,
            mics,
            ops,
            calendar,
            trace,
            topo,
            numa,
            bif,
            spes,
            timing,
            ..
        } = self;
        let end = chips[chip].arbiter_round::<FLOW, RETRY>(Round {
            now,
            chip,
            calendar,
            ops,
            mics,
            bif,
            trace,
            topo,
            numa,
            timing,
            spes,
        });
        if let Some(t) = end.retry {
            if t != Cycle::MAX {
                self.wake_arbiter(chip, t.max(now + 1));
            }
        }
        if FLOW && end.line_free != Cycle::MAX {
            self.wake_command_bus(chip, end.line_free);
        }
    }

    /// The requester hears that a bus request is complete; bytes bound for a
    /// local store or a register land now.
    pub(super) fn complete(&mut self, id: OpId) {
        let now = self.now;
        let op = self.ops[id];
        self.land(id, &op);
        if let (OpKind::Write, Space::Memory(a)) = (op.kind, op.remote) {
            // The acknowledgement returns the write's window slot.
            let bank = self.bank(a);
            let who = op.requester.idx();
            let mic = &mut self.mics[bank];
            if mic.windows_writes() && !op.failed {
                if let Some(next) = mic.release(who) {
                    let crossing = self.timing.bif_latency;
                    crate::mic::window_slot_taken(
                        mic,
                        &self.ops[next],
                        next,
                        now,
                        crossing,
                        &mut self.calendar,
                    );
                }
            }
        }
        self.ops.remove(id);
        self.counters.bus_completed += 1;
        let chip = op.requester.chip();
        let biu = &mut self.chips[chip].bius[op.requester.local().idx()];
        biu.outstanding -= 1;
        if biu.queued() > 0 {
            self.wake_command_bus(chip, now);
        }
        match op.owner {
            Owner::Mfc { spe, slot, proxy } => {
                let (mfc, mut cx) = self.dmac_of(spe);
                if mfc.request_done(&mut cx, slot, proxy, op.failed) {
                    self.check_spu_waiter(spe);
                }
            }
            Owner::Ppe { thread } => self.ppe_request_done(thread as usize, id, &op),
            Owner::PpeCache { id } => self.ppu_bus_done(id),
            Owner::Synthetic => {}
        }
        if std::mem::take(&mut self.mbox_changed) {
            self.wake_blocked();
        }
    }

    /// A PPE thread's load or store through the memory map is complete.
    /// Out of line, as the other rare paths of the step loop: inlined, the
    /// addresses they touch are hoisted and spilled at every step.
    #[inline(never)]
    fn ppe_request_done(&mut self, tid: ThreadId, id: OpId, op: &BusOp) {
        let now = self.now;
        if op.kind == OpKind::Write {
            let th = &mut self.threads[tid];
            th.stores_in_flight -= 1;
            if th.stores_in_flight == 0 {
                if let Some((target, remote, size)) = th.deferred_load.take() {
                    self.ppe_bus_op(tid, OpKind::Read, target, remote, size, 0);
                }
            }
        }
        if op.kind == OpKind::Read {
            if let (true, ThreadState::Blocked { request, since }) =
                (self.trace.is_some(), self.threads[tid].state)
            {
                self.record(Track::Ppe(tid), since, now, || {
                    format!("wait: {}", request.describe(0))
                });
            }
            let v = read_be_slice(&self.staging[id as usize][..op.size as usize]);
            let th = &mut self.threads[tid];
            th.reply = v;
            th.wait = None;
            th.state = ThreadState::Active;
            self.ready.push_back(tid);
        }
    }

    /// Bytes bound for a local store or a problem-state register land.
    fn land(&mut self, id: OpId, op: &BusOp) {
        if self.ff.recording {
            let s = self.ff.serial[id as usize];
            self.ff.moved(DataMove::Land(s, *op));
        }
        let n = op.size as usize;
        let line = &self.staging[id as usize];
        let bytes = &line[..n];
        match (op.kind, op.remote, op.owner) {
            (OpKind::Read, _, Owner::Mfc { spe, .. }) if !op.failed => {
                write_from(&self.spes[spe as usize].ls, op.lsa as usize, line, n);
                self.counters.get_bytes += n as u64;
                self.ls_touch(spe);
            }
            (OpKind::Write, Space::Ls { spe, offset }, _) => {
                write_from(&self.spes[spe as usize].ls, offset as usize, line, n);
                self.counters.put_bytes += n as u64;
                self.ls_touch(spe);
            }
            (OpKind::Write, Space::Ps { spe, reg }, owner) => {
                let v = read_be_slice(bytes) as u32;
                self.write_register(spe, reg, v, owner);
            }
            _ => {}
        }
    }

    /// A problem-state register written through the memory map.
    fn write_register(&mut self, p: u8, reg: u32, v: u32, from: Owner) {
        let counted = matches!(from, Owner::Ppe { .. });
        if self.trace.is_some() {
            let logical = self.spes[p as usize].logical.unwrap_or(p as u32);
            let what = match reg {
                ps::SPU_IN_MBOX => "in_mbox",
                ps::SIG_NOTIFY_1 => "signal1",
                ps::SIG_NOTIFY_2 => "signal2",
                _ => "register",
            };
            let sender = command_of(&self.spes, from);
            self.record_with(Track::Spu(logical), self.now, self.now, || {
                let mut args = vec![("value", v as u64)];
                args.extend(sender.into_iter().flatten());
                (format!("{what} <- 0x{v:x}"), args)
            });
        }
        let unit = &mut self.spes[p as usize];
        match reg {
            ps::SPU_IN_MBOX => {
                if counted {
                    // A PPE write reserved its room when it was issued.
                    unit.mbox.inbound_in_flight = unit.mbox.inbound_in_flight.saturating_sub(1);
                }
                unit.mbox.deliver_inbound(v);
            }
            ps::SIG_NOTIFY_1 => unit.signals.deliver(0, v),
            ps::SIG_NOTIFY_2 => unit.signals.deliver(1, v),
            _ => return,
        }
        self.check_spu_waiter(p);
    }
}

/// Reads `n` bytes into a staging line; a full line is a fixed-size copy the
/// compiler inlines.
#[inline(always)]
pub(super) fn read_into(src: &Storage, off: usize, line: &mut [u8; 128], n: usize) {
    if n == line.len() {
        src.read_array(off, line);
    } else {
        src.read(off, &mut line[..n]);
    }
}

/// Writes `n` bytes of a staging line.
#[inline(always)]
pub(super) fn write_from(dst: &Storage, off: usize, line: &[u8; 128], n: usize) {
    if n == line.len() {
        dst.write_array(off, line);
    } else {
        dst.write(off, &line[..n]);
    }
}

fn read_be_slice(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |v, &x| (v << 8) | x as u64)
}

/// The trace track of the MFC command that made a bus transfer (its logical
/// SPE and queue-slot lane, proxy slots after the SPU's), if an MFC made it.
pub(crate) fn command_of(spes: &[SpeUnit], owner: Owner) -> Option<[(&'static str, u64); 2]> {
    match owner {
        Owner::Mfc { spe, slot, proxy } => {
            let logical = spes[spe as usize].logical.unwrap_or(spe as u32);
            let lane = slot as u64 + if proxy { 16 } else { 0 };
            Some([("spe", logical as u64), ("slot", lane)])
        }
        _ => None,
    }
}
