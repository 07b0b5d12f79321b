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
//! The handlers are the [`Mfc`]'s, over a narrow context ([`Dmac`]: the
//! cycle, the calendar, the timing; [`Unroll`] adds what unrolling reads of
//! the bus side: its BIU's room, where pages are). What they cannot do
//! themselves they hand back to the machine (`machine/dmac.rs` routes it): a
//! bus request to store and queue at the BIU ([`Unrolled::Request`]), a list
//! element to read from the local store and resolve ([`Unrolled::Element`]),
//! a program to tell (a `bool` "notify": its SPU may be waiting on what
//! changed), a retired entry to record.

use super::command::{Atomic, MfcCommand};
use super::list::ListElement;
use super::queue::{CommandQueue, Entry, ListProgress, Segment};
use super::Mfc;
use crate::bus::{BusOp, Leg, OpKind, Owner, Space};
use crate::calendar::Calendar;
use crate::config::{ListFetch, Timing};
use crate::eib::command_bus::Biu;
use crate::machine::Event;
use crate::numa::Numa;
use crate::program::{MFC_GETLLAR_STATUS, MFC_PUTLLC_STATUS, MFC_PUTLLUC_STATUS};
use crate::time::{bus_edge, Cycle, BUS_RATIO};
use crate::topology::{Ramp, Topology};

/// Largest bus request.
const LINE: u64 = 128;

/// What the DMAC reads and changes outside its MFC: the cycle, the calendar
/// (its own wake-ups, retirements) and the timing.
pub(crate) struct Dmac<'a> {
    pub now: Cycle,
    /// The physical SPE whose MFC this is (its events and bus requests name it).
    pub spe: u8,
    pub calendar: &'a mut Calendar<Event>,
    pub timing: &'a Timing,
}

/// What unrolling reads of the bus side: its BIU's queue (room for a
/// request), the NUMA placement and the topology (which memory controller a
/// page is behind, page sizes for the TLB), its own ramp.
pub(crate) struct Unroll<'a> {
    pub ramp: Ramp,
    pub biu: &'a Biu,
    pub numa: &'a Numa,
    pub topo: &'a Topology,
}

/// What one DMAC wake-up hands back to the machine.
pub(crate) enum Unrolled {
    /// Nothing (superseded, waiting, a zero-length transfer, its BIU full):
    /// whatever wake-up it needs is on the calendar or up to the command bus.
    Idle,
    /// The list command in this slot of the SPU queue must fetch its next
    /// element from the local store ([`Mfc::element_fetched`] takes it).
    Element(u8),
    /// A bus request for the BIU's queue; [`Mfc::handed_over`] says after
    /// whether the queue filled.
    Request(BusOp),
}

impl Mfc {
    /// Wakes the DMAC at the first bus edge at or after `t`, unless it is
    /// already due earlier.
    #[inline]
    pub(crate) fn wake(&mut self, cx: &mut Dmac<'_>, t: Cycle) {
        let t = bus_edge(t);
        if self.dmac_wake.is_some_and(|w| w <= t && w >= cx.now) {
            return;
        }
        self.dmac_wake = Some(t);
        cx.calendar.schedule(t, Event::Dmac(cx.spe));
    }

    /// A command enters its queue (the proxy queue with `proxy`): `target`
    /// and `remote` are where its effective address leads.
    pub(crate) fn enqueue(
        &mut self,
        cx: &mut Dmac<'_>,
        cmd: MfcCommand,
        target: Ramp,
        remote: Space,
        issued_at: Cycle,
        proxy: bool,
    ) {
        let ready_at = cx.now + cx.timing.to_eib;
        let list = cmd.op.is_list().then_some(ListProgress {
            count: cmd.size / 8,
            next: 0,
            cursor: cmd.lsa,
            stall_here: false,
            stall_pending: false,
            stalled: false,
            prefetched_at: 0,
        });
        let seg = if list.is_some() {
            Segment::empty()
        } else {
            Segment {
                lsa: cmd.lsa,
                ea: cmd.ea,
                size: cmd.transfer_size(),
                done: 0,
                target,
                remote,
            }
        };
        let entry = Entry {
            cmd,
            seq: 0,
            ready_at,
            seg,
            list,
            in_flight: 0,
            issued_at,
            started: false,
            started_at: 0,
            page: 0,
            retiring: false,
            failed: false,
        };
        if proxy {
            self.proxy.insert(entry);
        } else {
            self.queue.insert(entry);
        }
        if cmd.op.is_sync() {
            self.retire_barriers(cx);
        }
        self.wake(cx, ready_at);
    }

    /// A DMAC wake-up: at most one bus request created (or one list element
    /// asked for). Inlined into the machine's handler, the one caller.
    #[inline(always)]
    pub(crate) fn unroll(&mut self, cx: &mut Dmac<'_>, bus: Unroll<'_>) -> Unrolled {
        let now = cx.now;
        if self.dmac_wake != Some(now) {
            return Unrolled::Idle; // superseded by an earlier wake-up
        }
        self.dmac_wake = None;
        if now < self.dmac_free {
            let t = self.dmac_free;
            self.wake(cx, t);
            return Unrolled::Idle;
        }
        if !bus.biu.has_room() {
            // The command bus restarts it when it takes a request.
            self.dmac_blocked = true;
            return Unrolled::Idle;
        }
        // The SPU queue has priority over the proxy queue (Kistler et al. 2006).
        let new_allowed = now >= self.next_command;
        let prefer_get = !self.last_was_get;
        let (mut pick, mut later) = self.queue.pick(now, prefer_get, new_allowed);
        let mut proxy = false;
        if pick.is_none() && !self.proxy.is_empty() {
            let (pp, pl) = self.proxy.pick(now, prefer_get, new_allowed);
            pick = pp;
            proxy = pick.is_some();
            later = later.into_iter().chain(pl).min();
        }
        let Some(slot) = pick else {
            let setup_over = (!new_allowed).then_some(self.next_command);
            if let Some(t) = later.into_iter().chain(setup_over).min() {
                self.wake(cx, t);
            }
            return Unrolled::Idle;
        };
        let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
        let e = q.get_mut(slot);
        if !e.started {
            // Selecting and translating a new command occupies the DMAC's
            // command set-up for `command` cycles (bounds the command rate).
            self.next_command = now + cx.timing.command;
            e.started = true;
            e.started_at = now;
        }
        if e.needs_element() {
            return Unrolled::Element(slot);
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
                let at = now + cx.timing.completion;
                cx.calendar.schedule(at, Event::Retire(cx.spe, slot, proxy));
            }
            self.wake(cx, now + BUS_RATIO);
            return Unrolled::Idle;
        }
        let seg = e.seg;
        let seg_page = e.page;
        let remote = offset_space(seg.remote, seg.done);
        let ea = seg.ea + seg.done as u64;
        if let Some(tlb) = self.tlb.as_mut() {
            // The MMU translates each page the command reaches; a miss holds
            // the command while the DMAC serves the others, and the walk's
            // result then serves it (the TLB may have dropped it meanwhile).
            let shift = match remote {
                Space::Memory(a) => bus.numa.page_shift_of(a),
                _ => bus.numa.page_shift(),
            };
            let page = (ea >> shift) + 1;
            if seg_page != page {
                let miss = tlb.translate(ea, shift, now);
                let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
                let e = q.get_mut(slot);
                e.page = page;
                if let Some(miss) = miss {
                    e.ready_at = now + miss;
                    self.wake(cx, now + BUS_RATIO);
                    return Unrolled::Idle;
                }
            }
        }
        let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
        let e = q.get_mut(slot);
        // Pages of main memory may be on either chip's memory: each request
        // goes to the memory of its own address.
        let target = match remote {
            Space::Memory(a) => bus.topo.mic(bus.numa.node_of(a)),
            _ => seg.target,
        };
        let n = ((seg.size - seg.done) as u64).min(LINE - ea % LINE) as u32;
        e.seg.done += n;
        e.in_flight += 1;
        let is_get = e.cmd.op.is_get();
        let op = BusOp {
            owner: Owner::Mfc {
                spe: cx.spe,
                slot,
                proxy,
            },
            kind: if is_get { OpKind::Read } else { OpKind::Write },
            requester: bus.ramp,
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
        q.served(slot);
        self.last_was_get = is_get;
        self.dmac_free = now + cx.timing.unroll;
        Unrolled::Request(op)
    }

    /// The request of [`Unrolled::Request`] is in the BIU's queue: the DMAC
    /// goes on after its unroll time, or stops if the queue is now full (the
    /// command bus restarts it when it takes a request).
    #[inline(always)]
    pub(crate) fn handed_over(&mut self, cx: &mut Dmac<'_>, biu_full: bool) {
        if biu_full {
            self.dmac_blocked = true;
        } else {
            self.wake(cx, cx.now + cx.timing.unroll);
        }
    }

    /// The command bus took a request from this MFC's BIU. Returns whether
    /// the DMAC, stopped for the BIU's room, goes on in this same bus cycle
    /// (inline, no calendar round trip: the caller runs it); otherwise it is
    /// woken as usual if it was stopped.
    #[inline(always)]
    pub(crate) fn biu_room(&mut self, cx: &mut Dmac<'_>) -> bool {
        if !std::mem::take(&mut self.dmac_blocked) {
            return false;
        }
        if self.dmac_wake.is_none() && self.dmac_free <= cx.now {
            self.dmac_wake = Some(cx.now);
            return true;
        }
        self.wake(cx, cx.now);
        false
    }

    /// The element asked for by [`Unrolled::Element`], read from the local
    /// store at `ea` (its full address) and resolved to `target`, `remote`,
    /// becomes the list's current segment. Returns when the DMAC may go on
    /// (the caller wakes it, after telling the program if asked) and whether
    /// the program must be told (a zero-length element that stalls the list
    /// with nothing in flight).
    pub(crate) fn element_fetched(
        &mut self,
        cx: &mut Dmac<'_>,
        slot: u8,
        elem: ListElement,
        ea: u64,
        target: Ramp,
        remote: Space,
    ) -> (Cycle, bool) {
        let now = cx.now;
        let e = self.queue.get_mut(slot);
        let Some(l) = e.list.as_mut() else {
            unreachable!("only a list fetches elements")
        };
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
        // The first element costs a full fetch (Table 1). By default later
        // ones were fetched while their predecessor unrolled, so a list of
        // small elements is not bound by one fetch per element (002: lists
        // give the same bandwidth whatever the element size); the variants
        // fetch each when it is needed, or reselect each like a new command.
        let fetch = cx.timing.list_element;
        let mode = cx.timing.list_fetch;
        let mut ready = if l.next == 0 || mode == ListFetch::Each {
            now + fetch
        } else {
            now.max(l.prefetched_at)
        };
        if mode == ListFetch::Reselect && l.next > 0 {
            ready = ready.max(self.next_command);
            self.next_command = ready + cx.timing.command;
        }
        l.prefetched_at = ready + fetch;
        l.next += 1;
        e.ready_at = ready;
        let stall_now = elem.size == 0 && elem.stall_and_notify && l.next < l.count;
        // A zero-length element moves nothing but still stalls the list:
        // the flag applies whatever the element's size.
        let notify = stall_now && self.stall_list(slot);
        (ready, notify)
    }

    /// The current element of a list asked to stall: the list waits for its
    /// transfers, then notifies the program (now, if none is in flight:
    /// returns whether to tell it).
    fn stall_list(&mut self, slot: u8) -> bool {
        let e = self.queue.get_mut(slot);
        let in_flight = e.in_flight;
        let tag = e.cmd.tag;
        let Some(l) = e.list.as_mut() else {
            return false;
        };
        l.stall_here = false; // once: the acknowledged list goes on
        l.stall_pending = true;
        if in_flight == 0 && !l.stalled {
            l.stalled = true;
            self.list_stall |= 1 << tag;
            return true;
        }
        false
    }

    /// `mfc_write_list_stall_ack(tag)`: the stalled lists of `tag` go on.
    pub(crate) fn list_stall_ack(&mut self, cx: &mut Dmac<'_>, tag: u32) {
        let q = &mut self.queue;
        // A bitmask of slots, not a Vec (as in `retire_barriers`).
        let mut stalled = q
            .entries()
            .filter(|(_, e)| e.cmd.tag == tag && e.stalled())
            .fold(0u64, |m, (s, _)| m | 1 << s);
        while stalled != 0 {
            let slot = stalled.trailing_zeros() as u8;
            stalled &= stalled - 1;
            if let Some(l) = q.get_mut(slot).list.as_mut() {
                l.stalled = false;
                l.stall_pending = false;
            }
        }
        self.wake(cx, cx.now);
    }

    /// A bus request of the command in `slot` is complete (`failed`: a
    /// putllc that lost its reservation). Its last one schedules the
    /// command's retirement; a stall-and-notify element whose transfers are
    /// all done stalls its list. Returns whether to tell the program.
    #[inline(always)]
    pub(crate) fn request_done(
        &mut self,
        cx: &mut Dmac<'_>,
        slot: u8,
        proxy: bool,
        failed: bool,
    ) -> bool {
        let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
        let e = q.get_mut(slot);
        e.in_flight -= 1;
        e.failed |= failed;
        if e.in_flight == 0 {
            if e.fully_unrolled() {
                e.retiring = true;
                let at = cx.now + cx.timing.completion;
                cx.calendar.schedule(at, Event::Retire(cx.spe, slot, proxy));
            } else if let Some(l) = e.list.as_mut().filter(|l| l.stall_pending && !l.stalled) {
                // The stall-and-notify element's transfers are done: notify.
                l.stalled = true;
                self.list_stall |= 1 << e.cmd.tag;
                return true;
            }
        }
        false
    }

    /// A command retires: its tag group (or atomic status) is updated and its
    /// queue entry freed; returns the entry (for the machine's records).
    /// Then, once the program is told, [`Mfc::retired`].
    pub(crate) fn retire(&mut self, slot: u8, proxy: bool) -> Entry {
        let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
        let e = q.remove(slot);
        match e.cmd.op.atomic() {
            Some(a) => {
                self.atomic_pending -= 1;
                let bit = match a {
                    Atomic::GetLLAR => MFC_GETLLAR_STATUS,
                    Atomic::PutLLUC => MFC_PUTLLUC_STATUS,
                    Atomic::PutLLC if e.failed => MFC_PUTLLC_STATUS,
                    Atomic::PutLLC => 0,
                };
                self.atomic_status = Some(self.atomic_status.unwrap_or(0) | bit);
            }
            None if proxy => self.proxy_tags.retire(e.cmd.tag),
            None => self.tags.retire(e.cmd.tag),
        }
        e
    }

    /// After a retirement: barriers and fences may have been waiting for it.
    pub(crate) fn retired(&mut self, cx: &mut Dmac<'_>) {
        self.retire_barriers(cx);
        self.wake(cx, cx.now);
    }

    /// `mfc_barrier`/`mfc_sync`/`mfc_eieio` entries whose earlier commands
    /// are done retire.
    fn retire_barriers(&mut self, cx: &mut Dmac<'_>) {
        let at = cx.now + cx.timing.completion;
        for proxy in [false, true] {
            let q = queue_of(&mut self.queue, &mut self.proxy, proxy);
            // A bitmask of slots, not a Vec: this runs at every retire.
            let mut ready = q
                .completable_barriers()
                .filter(|&s| !q.get(s).retiring)
                .fold(0u64, |m, s| m | 1 << s);
            while ready != 0 {
                let slot = ready.trailing_zeros() as u8;
                ready &= ready - 1;
                q.get_mut(slot).retiring = true;
                cx.calendar.schedule(at, Event::Retire(cx.spe, slot, proxy));
            }
        }
    }
}

/// The SPU queue, or with `proxy` the proxy queue: the two by field, so that
/// the MFC's other fields stay free to change while the queue is borrowed.
#[inline(always)]
fn queue_of<'a>(
    spu: &'a mut CommandQueue,
    proxy_queue: &'a mut CommandQueue,
    proxy: bool,
) -> &'a mut CommandQueue {
    if proxy {
        proxy_queue
    } else {
        spu
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

#[cfg(test)]
mod tests {
    //! The DMAC's handlers driven on their own, with no machine: the calendar,
    //! the timing, a BIU and the placement are all they need.
    use super::*;
    use crate::config::MachineConfig;
    use crate::mfc::command::Opcode;

    struct Bench {
        mfc: Mfc,
        calendar: Calendar<Event>,
        timing: Timing,
        biu: Biu,
        numa: Numa,
        topo: Topology,
        now: Cycle,
    }

    impl Bench {
        fn new() -> Bench {
            let cfg = MachineConfig::load("qs20-1chip", &[]).unwrap();
            Bench {
                mfc: Mfc::new(16, 8, 0, None),
                calendar: Calendar::new(),
                timing: cfg.timing(),
                biu: Biu::new(4, 16, None),
                numa: Numa::new(1, cfg.memory_bytes(), cfg.numa.page_kb, cfg.numa_policy()),
                topo: Topology::new(&cfg),
                now: 0,
            }
        }

        fn cx(&mut self) -> (&mut Mfc, Dmac<'_>) {
            let cx = Dmac {
                now: self.now,
                spe: 0,
                calendar: &mut self.calendar,
                timing: &self.timing,
            };
            (&mut self.mfc, cx)
        }

        /// The SPU issues `op` of `size` bytes at memory address `ea`, tag 5.
        fn issue(&mut self, op: Opcode, ea: u64, size: u32) {
            self.mfc.queue.reserve();
            self.mfc.tags.add(5);
            let cmd = MfcCommand::single(op, 0x1000, ea, size, 5);
            let target = self.topo.mic(0);
            let (mfc, mut cx) = self.cx();
            mfc.enqueue(&mut cx, cmd, target, Space::Memory(ea), 0, false);
        }

        /// The next event at or after now (the calendar moved to it).
        fn next_event(&mut self) -> Event {
            if let Some(e) = self.calendar.pop_due() {
                return e;
            }
            self.now = self.calendar.next_due();
            self.calendar.advance_to(self.now);
            self.calendar.pop_due().expect("an event is due")
        }

        /// One DMAC wake-up.
        fn unroll(&mut self) -> Unrolled {
            let ramp = self.topo.spe(0);
            let Bench {
                mfc,
                calendar,
                timing,
                biu,
                numa,
                topo,
                now,
            } = self;
            let mut cx = Dmac {
                now: *now,
                spe: 0,
                calendar,
                timing,
            };
            let bus = Unroll {
                ramp,
                biu,
                numa,
                topo,
            };
            mfc.unroll(&mut cx, bus)
        }

        /// DMAC wake-ups until it hands a bus request over (queued at the BIU).
        fn next_request(&mut self) -> BusOp {
            loop {
                assert_eq!(self.next_event(), Event::Dmac(0));
                if let Unrolled::Request(op) = self.unroll() {
                    let (mfc, mut cx) = self.cx();
                    mfc.handed_over(&mut cx, false);
                    return op;
                }
            }
        }
    }

    #[test]
    fn a_get_unrolls_into_lines_one_per_unroll_time_then_retires() {
        let mut b = Bench::new();
        b.issue(Opcode::Get, 0x10_0040, 512);
        let mut got = Vec::new();
        for _ in 0..5 {
            let op = b.next_request();
            got.push((b.now, op.size, op.remote, op.lsa));
        }
        // 0x40 to the line's end, three whole lines, 0x40 left; the first
        // after `to_eib`, each next `unroll` later (on bus edges).
        let t0 = bus_edge(b.timing.to_eib);
        let unroll = bus_edge(b.timing.unroll);
        let sizes: Vec<u32> = got.iter().map(|g| g.1).collect();
        assert_eq!(sizes, [64, 128, 128, 128, 64]);
        assert_eq!(got[0].0, t0);
        assert!(got.windows(2).all(|w| w[1].0 - w[0].0 == unroll));
        assert_eq!(got[1].2, Space::Memory(0x10_0080));
        assert_eq!(got[4].3, 0x1000 + 448);
        // Every request done: the last schedules the retirement.
        for _ in 0..5 {
            let (mfc, mut cx) = b.cx();
            assert!(!mfc.request_done(&mut cx, 0, false, false));
        }
        assert_eq!(b.mfc.tags.status(1 << 5), 0, "not retired yet");
        let at = b.now + b.timing.completion;
        // (past the DMAC's own look after its last request, which finds nothing)
        let retire = loop {
            match b.next_event() {
                Event::Dmac(0) => continue,
                e => break e,
            }
        };
        assert_eq!(retire, Event::Retire(0, 0, false));
        assert_eq!(b.now, at);
        let e = b.mfc.retire(0, false);
        assert_eq!(e.cmd.op, Opcode::Get);
        assert_eq!(b.mfc.tags.status(1 << 5), 1 << 5);
    }

    #[test]
    fn a_full_biu_stops_the_dmac_until_the_command_bus_takes_a_request() {
        let mut b = Bench::new();
        b.biu = Biu::new(0, 16, None); // no room at all
        b.issue(Opcode::Put, 0x10_0000, 128);
        assert_eq!(b.next_event(), Event::Dmac(0));
        assert!(matches!(b.unroll(), Unrolled::Idle));
        assert!(b.mfc.dmac_blocked);
        assert_eq!(b.calendar.pop_due(), None);
        assert!(b.calendar.is_empty(), "no wake-up of its own");
        // The command bus took a request: the DMAC goes on at once.
        let now = b.now;
        let (mfc, mut cx) = b.cx();
        assert!(mfc.biu_room(&mut cx));
        assert_eq!(mfc.dmac_wake, Some(now));
    }
}
