//! The DMAC of an SPE's MFC: the handlers of a command's way in and out.
//!
//! 1. **Enqueue**: after the channel writes, the command takes its queue entry
//!    (the SPU queue, or the proxy queue for the PPE's commands); the DMAC may
//!    start on it `to_eib` cycles later (Table 1, "DMA to EIB").
//! 2. **Unroll**: one bus request (at most 128 bytes, never crossing a 128-byte
//!    boundary of the effective address) per bus cycle into the BIU queue,
//!    alternating gets and puts, SPU queue before proxy queue, respecting
//!    barriers and fences. A DMA list fetches each element from the local
//!    store (`list_element` cycles, the next one while the current one
//!    unrolls) before unrolling it, and stops after an
//!    element marked stall-and-notify until the program acknowledges.
//! 3. (The command bus, the data arbiter and the rings carry the requests:
//!    `machine/dma.rs`, `eib::round`.)
//! 4. **Retire**: when every bus request of a command is complete, the tag
//!    group (or the atomic status) is updated `completion` cycles later and
//!    the queue entry frees.
//!
//! The handlers are the machine's (`impl Machine`): the DMAC reads its BIU's
//! room, the NUMA placement and the calendar, and wakes threads.

use crate::bus::{BusOp, Leg, OpKind, Owner, Space};
use crate::error::{MfcError, MfcErrorKind, SimError};
use crate::machine::{DmaLatency, Event, Machine};
use crate::mfc::command::Atomic;
use crate::mfc::list::ListElement;
use crate::mfc::queue::{Entry, ListProgress, Segment};
use crate::program::{MFC_GETLLAR_STATUS, MFC_PUTLLC_STATUS, MFC_PUTLLUC_STATUS};
use crate::time::{bus_edge, Cycle};
use crate::trace::Track;

/// Largest bus request.
const LINE: u64 = 128;

impl Machine {
    pub(crate) fn enqueue(&mut self, tid: usize) {
        let now = self.now;
        let to_eib = self.timing.to_eib;
        let pend = self.threads[tid]
            .pending
            .take()
            .expect("an issued command is pending");
        let p = pend.spe;
        self.ready.push_back(tid);
        let list = pend.cmd.op.is_list().then_some(ListProgress {
            count: pend.cmd.size / 8,
            next: 0,
            cursor: pend.cmd.lsa,
            stall_here: false,
            stall_pending: false,
            stalled: false,
            prefetched_at: 0,
        });
        let seg = if list.is_some() {
            Segment::empty()
        } else {
            Segment {
                lsa: pend.cmd.lsa,
                ea: pend.cmd.ea,
                size: pend.cmd.transfer_size(),
                done: 0,
                target: pend.target,
                remote: pend.remote,
            }
        };
        let entry = Entry {
            cmd: pend.cmd,
            seq: 0,
            ready_at: now + to_eib,
            seg,
            list,
            in_flight: 0,
            issued_at: pend.issued_at,
            started: false,
            started_at: 0,
            page: 0,
            retiring: false,
            failed: false,
        };
        let mfc = &mut self.spes[p as usize].mfc;
        if pend.proxy {
            mfc.proxy.insert(entry);
        } else {
            mfc.queue.insert(entry);
        }
        if pend.cmd.op.is_sync() {
            self.retire_barriers(p);
        }
        self.wake_dmac(p, now + to_eib);
    }

    /// Schedules the DMAC of SPE `p` at the first bus edge at or after `t`,
    /// unless it is already due earlier.
    #[inline]
    pub(crate) fn wake_dmac(&mut self, p: u8, t: Cycle) {
        let t = bus_edge(t);
        let mfc = &mut self.spes[p as usize].mfc;
        if mfc.dmac_wake.is_some_and(|w| w <= t && w >= self.now) {
            return;
        }
        mfc.dmac_wake = Some(t);
        self.schedule(t, Event::Dmac(p));
    }

    /// The DMAC of SPE `p` creates at most one bus request (or fetches one
    /// list element).
    pub(crate) fn dmac(&mut self, p: u8) {
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
        let (chip, port) = (ramp.chip(), ramp.local().idx());
        if !self.chips[chip].bius[port].has_room() {
            unit.mfc.dmac_blocked = true;
            return;
        }
        // The SPU queue has priority over the proxy queue (seed 000).
        let new_allowed = now >= unit.mfc.next_command;
        let prefer_get = !unit.mfc.last_was_get;
        let (mut pick, mut later) = unit.mfc.queue.pick(now, prefer_get, new_allowed);
        let mut proxy = false;
        if pick.is_none() && !unit.mfc.proxy.is_empty() {
            let (pp, pl) = unit.mfc.proxy.pick(now, prefer_get, new_allowed);
            pick = pp;
            proxy = pick.is_some();
            later = later.into_iter().chain(pl).min();
        }
        let Some(slot) = pick else {
            let setup_over = (!new_allowed).then_some(unit.mfc.next_command);
            if let Some(t) = later.into_iter().chain(setup_over).min() {
                self.wake_dmac(p, t);
            }
            return;
        };
        let command_cycles = self.timing.command;
        let q = if proxy {
            &mut unit.mfc.proxy
        } else {
            &mut unit.mfc.queue
        };
        let e = q.get_mut(slot);
        if !e.started {
            // Selecting and translating a new command occupies the DMAC's
            // command set-up for `command` cycles (bounds the command rate).
            unit.mfc.next_command = now + command_cycles;
            e.started = true;
            e.started_at = now;
        }
        if e.needs_element() {
            self.fetch_list_element(p, slot);
            return;
        }
        if e.seg.size == 0 {
            // A zero-length transfer (or list element) moves nothing.
            let last = e.fully_unrolled();
            let retire = last && e.in_flight == 0;
            e.retiring |= retire;
            if last {
                q.unrolled(slot);
            }
            if retire {
                let at = now + self.timing.completion;
                self.schedule(at, Event::Retire(p, slot, proxy));
            }
            self.wake_dmac(p, now + Self::BUS);
            return;
        }
        let seg = e.seg;
        let seg_page = e.page;
        let remote = offset_space(seg.remote, seg.done);
        let ea = seg.ea + seg.done as u64;
        if let Some(tlb) = unit.mfc.tlb.as_mut() {
            // The MMU translates each page the command reaches; a miss holds
            // the command while the DMAC serves the others, and the walk's
            // result then serves it (the TLB may have dropped it meanwhile).
            let shift = match remote {
                Space::Memory(a) => self.numa.page_shift_of(a),
                _ => self.numa.page_shift(),
            };
            let page = (ea >> shift) + 1;
            if seg_page != page {
                let miss = tlb.translate(ea, shift, now);
                let q = if proxy {
                    &mut unit.mfc.proxy
                } else {
                    &mut unit.mfc.queue
                };
                let e = q.get_mut(slot);
                e.page = page;
                if let Some(miss) = miss {
                    e.ready_at = now + miss;
                    self.wake_dmac(p, now + Self::BUS);
                    return;
                }
            }
        }
        let q = if proxy {
            &mut unit.mfc.proxy
        } else {
            &mut unit.mfc.queue
        };
        let e = q.get_mut(slot);
        // Pages of main memory may be on either chip's memory: each request
        // goes to the memory of its own address.
        let target = match remote {
            Space::Memory(a) => self.topo.mic(self.numa.node_of(a)),
            _ => seg.target,
        };
        let n = ((seg.size - seg.done) as u64).min(LINE - ea % LINE) as u32;
        e.seg.done += n;
        e.in_flight += 1;
        let is_get = e.cmd.op.is_get();
        let op = BusOp {
            owner: Owner::Mfc {
                spe: p,
                slot,
                proxy,
            },
            kind: if is_get { OpKind::Read } else { OpKind::Write },
            requester: ramp,
            target,
            size: n,
            lsa: seg.lsa + seg.done,
            remote,
            queued_at: now,
            respond_at: Cycle::MAX,
            atomic: e.cmd.op.atomic(),
            failed: false,
            leg: Leg::Within,
        };
        if e.seg.exhausted() {
            if let Some(l) = e.list.as_mut() {
                // The element is out; a stall-and-notify element holds the list.
                l.stall_pending = l.stall_here && l.next < l.count;
            }
            if e.fully_unrolled() {
                q.unrolled(slot);
            }
        }
        unit.mfc.last_was_get = is_get;
        let unroll = self.timing.unroll;
        unit.mfc.dmac_free = now + unroll;
        let id = self.new_op(op);
        let biu = &mut self.chips[chip].bius[port];
        biu.push(id, !is_get && biu.puts_need_lines());
        let biu_full = !biu.has_room();
        self.wake_command_bus(chip, now);
        if biu_full {
            // The command bus will restart the DMAC when it takes a request.
            self.spes[p as usize].mfc.dmac_blocked = true;
        } else {
            self.wake_dmac(p, now + unroll);
        }
    }

    /// Fetches the next element of a DMA list from the local store and checks
    /// it, as the hardware does: the program may have rewritten it since the
    /// list was issued. A bad element ends the run with the error it would
    /// have raised at issue.
    fn fetch_list_element(&mut self, p: u8, slot: u8) {
        let now = self.now;
        let unit = &self.spes[p as usize];
        let e = unit.mfc.queue.get(slot);
        let Some(l) = e.list else { return };
        let elem = ListElement::read(&unit.ls, e.cmd.list, l.next);
        let ea = (e.cmd.ea & !0xFFFF_FFFF) | elem.eal as u64;
        let (target, remote) = match self.list_element_target(l.cursor, ea, elem.size) {
            Ok(x) => x,
            Err((kind, msg)) => {
                self.fault = Some(self.element_fault(p, slot, l.next, kind, msg));
                return;
            }
        };
        let e = self.spes[p as usize].mfc.queue.get_mut(slot);
        let Some(l) = e.list.as_mut() else { return };
        e.seg = Segment {
            lsa: l.cursor,
            ea,
            size: elem.size,
            done: 0,
            target,
            remote,
        };
        l.cursor += elem.size;
        l.stall_here = elem.stall_and_notify;
        // The first element costs a full fetch (Table 1); later ones were
        // fetched while their predecessor unrolled, so a list of small
        // elements is not bound by one fetch per element (002: lists give the
        // same bandwidth whatever the element size).
        let fetch = self.timing.list_element;
        let ready = if l.next == 0 {
            now + fetch
        } else {
            now.max(l.prefetched_at)
        };
        l.prefetched_at = ready + fetch;
        l.next += 1;
        e.ready_at = ready;
        let stall_now = elem.size == 0 && elem.stall_and_notify && l.next < l.count;
        let at = e.ready_at;
        if stall_now {
            // A zero-length element moves nothing but still stalls the list:
            // the flag applies whatever the element's size.
            self.stall_list(p, slot);
        }
        self.wake_dmac(p, at);
    }

    /// The error of list element `index`, found bad when the MFC fetched it.
    fn element_fault(
        &self,
        p: u8,
        slot: u8,
        index: u32,
        kind: MfcErrorKind,
        msg: String,
    ) -> SimError {
        let e = self.spes[p as usize].mfc.queue.get(slot);
        SimError::Mfc(MfcError {
            kind,
            spe: self.spes[p as usize].logical,
            cycle: self.now,
            command: e.cmd.to_string(),
            message: format!(
                "list element {index}, fetched by the MFC at cycle {}: {msg} (the element \
                 was rewritten after the list was issued at cycle {})",
                self.now, e.issued_at
            ),
        })
    }

    /// The current element of a list asked to stall: the list waits for its
    /// transfers, then notifies the program (now, if none is in flight).
    fn stall_list(&mut self, p: u8, slot: u8) {
        let mfc = &mut self.spes[p as usize].mfc;
        let e = mfc.queue.get_mut(slot);
        let in_flight = e.in_flight;
        let tag = e.cmd.tag;
        let Some(l) = e.list.as_mut() else { return };
        l.stall_here = false; // once: the acknowledged list goes on
        l.stall_pending = true;
        if in_flight == 0 && !l.stalled {
            l.stalled = true;
            mfc.list_stall |= 1 << tag;
            self.check_spu_waiter(p);
        }
    }

    /// `mfc_write_list_stall_ack(tag)`: the stalled lists of `tag` go on.
    pub(crate) fn list_stall_ack(&mut self, p: u8, tag: u32) {
        let q = &mut self.spes[p as usize].mfc.queue;
        let slots: Vec<u8> = q
            .entries()
            .filter(|(_, e)| e.cmd.tag == tag && e.stalled())
            .map(|(s, _)| s)
            .collect();
        for s in slots {
            if let Some(l) = q.get_mut(s).list.as_mut() {
                l.stalled = false;
                l.stall_pending = false;
            }
        }
        self.wake_dmac(p, self.now);
    }

    /// A command retires: its tag group (or atomic status) and queue entry are freed.
    pub(crate) fn retire(&mut self, p: u8, slot: u8, proxy: bool) {
        let mfc = &mut self.spes[p as usize].mfc;
        let q = if proxy {
            &mut mfc.proxy
        } else {
            &mut mfc.queue
        };
        let e = q.remove(slot);
        if let Some(lat) = self.dma_latencies.as_mut() {
            if !proxy && !e.cmd.op.is_sync() {
                lat[p as usize].push(DmaLatency {
                    queued: self.now - e.issued_at,
                    service: self.now - e.started_at,
                });
            }
        }
        if self.trace.is_some() {
            let logical = self.spes[p as usize].logical.unwrap_or(p as u32);
            let lane = slot + if proxy { 16 } else { 0 };
            self.record_with(Track::MfcSlot(logical, lane), e.issued_at, self.now, || {
                let who = if proxy { " (proxy)" } else { "" };
                // A list moves its elements' bytes, not the list's 8 per element:
                // they were placed one after the other from the command's LS address.
                let bytes = match e.list {
                    Some(l) => l.cursor.wrapping_sub(e.cmd.lsa) as u64,
                    None => e.cmd.transfer_size() as u64,
                };
                let name = format!("{} {bytes} B tag {}{who}", e.cmd.op.sdk_name(), e.cmd.tag);
                let mut args = vec![
                    ("bytes", bytes),
                    ("tag", e.cmd.tag as u64),
                    ("ea", e.cmd.ea),
                    ("ls", e.cmd.lsa as u64),
                    ("started", e.started_at),
                ];
                if e.list.is_some() {
                    args.push(("list_bytes", e.cmd.size as u64));
                }
                (name, args)
            });
        }
        let mfc = &mut self.spes[p as usize].mfc;
        match e.cmd.op.atomic() {
            Some(a) => {
                mfc.atomic_pending -= 1;
                let bit = match a {
                    Atomic::GetLLAR => MFC_GETLLAR_STATUS,
                    Atomic::PutLLUC => MFC_PUTLLUC_STATUS,
                    Atomic::PutLLC if e.failed => MFC_PUTLLC_STATUS,
                    Atomic::PutLLC => 0,
                };
                mfc.atomic_status = Some(mfc.atomic_status.unwrap_or(0) | bit);
            }
            None if proxy => mfc.proxy_tags.retire(e.cmd.tag),
            None => mfc.tags.retire(e.cmd.tag),
        }
        if proxy {
            self.wake_blocked();
        } else {
            self.check_spu_waiter(p);
        }
        self.retire_barriers(p);
        // Barriers and fences may have been waiting for this command.
        self.wake_dmac(p, self.now);
    }

    /// `mfc_barrier`/`mfc_sync`/`mfc_eieio` entries whose earlier commands
    /// are done retire.
    fn retire_barriers(&mut self, p: u8) {
        let completion = self.timing.completion;
        for proxy in [false, true] {
            let mfc = &self.spes[p as usize].mfc;
            let q = if proxy { &mfc.proxy } else { &mfc.queue };
            // A bitmask of slots, not a Vec: this runs at every retire.
            let mut ready = q
                .completable_barriers()
                .filter(|&s| !q.get(s).retiring)
                .fold(0u64, |m, s| m | 1 << s);
            while ready != 0 {
                let slot = ready.trailing_zeros() as u8;
                ready &= ready - 1;
                let mfc = &mut self.spes[p as usize].mfc;
                let q = if proxy {
                    &mut mfc.proxy
                } else {
                    &mut mfc.queue
                };
                q.get_mut(slot).retiring = true;
                self.schedule(self.now + completion, Event::Retire(p, slot, proxy));
            }
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
        other => other,
    }
}
