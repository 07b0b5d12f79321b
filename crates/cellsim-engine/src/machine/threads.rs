//! Programs on the chip: their requests, blocking and waking.
//!
//! A thread runs until it makes a request; the request costs simulated time
//! (a channel access, a DMA issue, a computation) or blocks (a full command
//! queue, a tag-status read whose groups are busy, an empty mailbox); the
//! thread runs again when it is done. Native threads are polled inline;
//! external ones are handed back to the caller of [`Machine::advance`].
//!
//! A blocked thread records what it [`Wait`]s for; whenever the state it
//! depends on changes, [`Machine::try_wake`] re-checks it and completes the
//! request (popping the mailbox, reading the signal...). SPU requests are
//! here; the PPE's are in `ppe.rs`.

use super::events::SpuEvents;
use super::watch::LastCalls;
use super::{Event, Machine};
use crate::bus::Space;
use crate::error::{Blocked, MfcError, MfcErrorKind, SimError};
use crate::ls_loop::PortShare;
use crate::mailbox::Outbound;
use crate::memory_map::{ps, Target};
use crate::mfc::command::MfcCommand;
use crate::mfc::list::{check_element, ListElement};
use crate::mfc::tags::TagUpdate;
use crate::part::Part;
use crate::poll::PollLoop;
use crate::program::{Channel, Port, ProgramFuture, Request};
use crate::script::Script;
use crate::steady::Shape;
use crate::time::{later, overflow_message, Cycle};
use crate::topology::Ramp;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Index of a thread.
pub type ThreadId = usize;

/// Where an SPU thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeSlot {
    /// Logical SPE number.
    pub logical: u32,
    /// Physical SPE number.
    pub physical: u8,
}

/// What a thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// Running, or waiting for a request that completes at a known time.
    Active,
    /// Blocked in a request until something else happens.
    Blocked {
        /// The request.
        request: Request,
        /// Since when.
        since: Cycle,
    },
    /// Done.
    Finished {
        /// Exit value.
        code: u32,
        /// Cycle it ended.
        at: Cycle,
    },
}

/// A thread as reported to users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Thread id.
    pub id: ThreadId,
    /// Logical SPE (None for PPE threads).
    pub spe: Option<u32>,
    /// Physical SPE.
    pub physical: Option<u8>,
    /// State.
    pub state: ThreadState,
}

/// What a blocked thread waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// SPU: tag groups of its mask (`mfc_read_tag_status_any/all`).
    Tags(TagUpdate),
    /// SPU: a free command-queue entry for its pending command.
    QueueSlot,
    /// SPU: a blocking channel read or write (the value for writes).
    Channel(Channel, u32),
    /// Any thread: another thread's end.
    Join(ThreadId),
    /// PPE: libspe2 events (`spe_event_wait`, a `Request::PpeEventWait`).
    PpeEvents(Request),
    /// PPE: a message in an SPE's outbound mailbox.
    OutMbox(u8, Outbound),
    /// PPE: room in an SPE's inbound mailbox for this value.
    InMboxRoom(u8, u32),
    /// PPE: a free entry in an SPE's proxy queue for its pending command.
    ProxySlot(u8),
    /// PPE: proxy tag groups of an SPE.
    ProxyTags(u8, u32, TagUpdate),
    /// PPE: a load through the memory map, answered by its bus request.
    Bus,
    /// A job in a core: PPE accesses through the caches, or an SPU loop over
    /// its local store (the core wakes the thread when it is done).
    Core,
}

/// Writes what a thread waits for.
fn wait_shape(s: &mut Shape, w: Option<Wait>) {
    let tag = |m: TagUpdate| m as u64;
    let (kind, a, b) = match w {
        None => (0, 0, 0),
        Some(Wait::Tags(m)) => (1, tag(m), 0),
        Some(Wait::QueueSlot) => (2, 0, 0),
        Some(Wait::Channel(c, v)) => (3, c.number() as u64, v as u64),
        Some(Wait::Join(t)) => (4, t as u64, 0),
        Some(Wait::OutMbox(p, o)) => (5, p as u64, o as u64),
        Some(Wait::InMboxRoom(p, v)) => (6, p as u64, v as u64),
        Some(Wait::ProxySlot(p)) => (7, p as u64, 0),
        Some(Wait::ProxyTags(p, mask, m)) => (8, (p as u64) << 32 | mask as u64, tag(m)),
        Some(Wait::Bus) => (9, 0, 0),
        Some(Wait::Core) => (10, 0, 0),
        Some(Wait::PpeEvents(r)) => match r {
            Request::PpeEventWait { masks, wait } => (11, masks, wait as u64),
            _ => (11, 0, 0),
        },
    };
    s.raw(kind);
    s.raw(a);
    s.raw(b);
}

/// A command between its issue and its entry into a queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) cmd: MfcCommand,
    pub(crate) target: Ramp,
    pub(crate) remote: Space,
    pub(crate) issued_at: Cycle,
    /// Physical SPE whose queue it goes to.
    pub(crate) spe: u8,
    /// It goes to the proxy queue.
    pub(crate) proxy: bool,
}

pub(crate) enum Body {
    Native { fut: ProgramFuture, port: Rc<Port> },
    External,
}

pub(crate) struct Thread {
    pub(crate) spe: Option<SpeSlot>,
    body: Body,
    pub(crate) state: ThreadState,
    pub(crate) reply: u64,
    pub(crate) tag_mask: u32,
    pub(crate) wait: Option<Wait>,
    dec_value: u32,
    dec_at: Cycle,
    pub(crate) pending: Option<Pending>,
    /// PPE: non-cacheable stores issued and not complete.
    pub(crate) stores_in_flight: u32,
    /// PPE: a non-cacheable load waiting for those stores (they complete in order).
    pub(crate) deferred_load: Option<(Ramp, Space, u8)>,
    /// Its last call and the poll it repeats, for the livelock report.
    pub(crate) calls: LastCalls,
    /// SPU: its event facility (`events.rs`).
    pub(crate) events: SpuEvents,
    /// A command loop it declared: the engine issues its commands.
    pub(crate) script: Option<Script>,
    /// A polling loop it declared: the engine makes its requests (boxed:
    /// threads stay small for the hot loop).
    pub(crate) poll: Option<Box<PollLoop>>,
    /// Polls made by the engine for its declared polling loops that ended.
    pub(crate) declared_polls: u64,
    /// The computation it runs, when that shares the local-store port with DMA.
    pub(crate) ls_compute: Option<PortShare>,
}

impl Thread {
    pub(crate) fn native(spe: Option<SpeSlot>, fut: ProgramFuture, port: Rc<Port>) -> Thread {
        Thread::new(spe, Body::Native { fut, port })
    }

    pub(crate) fn external(spe: Option<SpeSlot>) -> Thread {
        Thread::new(spe, Body::External)
    }

    fn new(spe: Option<SpeSlot>, body: Body) -> Thread {
        Thread {
            spe,
            body,
            state: ThreadState::Active,
            reply: 0,
            tag_mask: 0,
            wait: None,
            dec_value: u32::MAX,
            dec_at: 0,
            pending: None,
            stores_in_flight: 0,
            deferred_load: None,
            calls: LastCalls::default(),
            events: SpuEvents::default(),
            script: None,
            poll: None,
            declared_polls: 0,
            ls_compute: None,
        }
    }

    pub(crate) fn is_native(&self) -> bool {
        matches!(self.body, Body::Native { .. })
    }

    pub(crate) fn is_finished(&self) -> bool {
        matches!(self.state, ThreadState::Finished { .. })
    }

    pub(crate) fn take_reply(&mut self) -> u64 {
        std::mem::take(&mut self.reply)
    }

    pub(crate) fn reset_decrementer(&mut self, now: Cycle) {
        self.dec_value = u32::MAX;
        self.dec_at = now;
    }

    /// The decrementer's last written value and when it was written.
    pub(crate) fn decrementer_state(&self) -> (u32, Cycle) {
        (self.dec_value, self.dec_at)
    }

    pub(crate) fn block_on(&mut self, wait: Wait, request: Request, now: Cycle) {
        self.block(wait, request, now);
    }

    pub(crate) fn info(&self, id: ThreadId) -> ThreadInfo {
        ThreadInfo {
            id,
            spe: self.spe.map(|s| s.logical),
            physical: self.spe.map(|s| s.physical),
            state: self.state,
        }
    }

    pub(crate) fn who(&self, id: ThreadId) -> String {
        match self.spe {
            Some(s) => format!("SPE {} (physical {})", s.logical, s.physical),
            None => format!("PPE thread {id}"),
        }
    }

    fn block(&mut self, wait: Wait, request: Request, now: Cycle) {
        self.wait = Some(wait);
        self.state = ThreadState::Blocked {
            request,
            since: now,
        };
    }
}

/// Contract: what decides a thread's next step is its state, what it waits
/// for, its pending command, its reply, tag mask, PPE stores in flight and
/// deferred load, and its declared loop's position. A thread that will run
/// its program's code next is outside shapes (its wake-up ends a steady
/// state), so its code's own state need not be here. Left out: the cycles of
/// issue and blocking (history, moved by `shift` when they fall in the
/// period), the commands its declared loop has left (the jump bounds its
/// periods by them), its decrementer and call records.
impl Part for Thread {
    fn next_wake(&self) -> Option<Cycle> {
        None // a thread runs when the calendar wakes it
    }

    fn shape(&self, s: &mut Shape) {
        match self.state {
            ThreadState::Active => s.raw(0),
            ThreadState::Blocked { .. } => s.raw(1),
            ThreadState::Finished { code, .. } => s.raw(2 << 32 | code as u64),
        }
        wait_shape(s, self.wait);
        match &self.pending {
            Some(p) => {
                crate::script::command_shape(s, &p.cmd);
                s.raw(p.target.0 as u64);
                crate::steady::space(s, p.remote, true);
                s.raw((p.spe as u64) << 1 | p.proxy as u64);
            }
            None => s.raw(u64::MAX),
        }
        s.raw(self.reply);
        s.raw(self.tag_mask as u64);
        s.raw(self.stores_in_flight as u64);
        s.raw(self.deferred_load.is_some() as u64);
        match &self.script {
            Some(x) => x.shape(s),
            None => s.raw(u64::MAX),
        }
    }

    /// Moves the cycles of what happened since `from` `dt` later.
    fn shift(&mut self, from: Cycle, dt: Cycle) {
        if let ThreadState::Blocked { since, .. } = &mut self.state {
            if *since >= from {
                *since += dt;
            }
        }
        if let Some(p) = self.pending.as_mut() {
            if p.issued_at >= from {
                p.issued_at += dt;
            }
        }
        self.calls.shift_since(from, dt);
    }
}

impl Machine {
    /// Polls a native program once and submits the request it makes.
    pub(super) fn poll_native(&mut self, tid: ThreadId) -> Result<(), SimError> {
        let th = &mut self.threads[tid];
        let reply = th.take_reply();
        let Body::Native { fut, port } = &mut th.body else {
            unreachable!("poll_native on an external thread")
        };
        port.reply.set(reply);
        let mut cx = Context::from_waker(Waker::noop());
        let polled = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
        // A race the DMA checker saw during this poll stops the run (checker
        // off: one test of an empty option).
        if polled.is_ok() {
            if let Some(h) = port
                .check
                .as_ref()
                .and_then(|c| c.borrow_mut().hazard.take())
            {
                let spe = self.threads[tid].spe.map_or(0, |s| s.logical);
                return Err(SimError::DmaHazard {
                    spe,
                    hazard: Box::new(h),
                });
            }
        }
        let req = match polled {
            Err(panic) => {
                // Names are built only on these error paths: polling is hot.
                let who = self.threads[tid].who(tid);
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                return Err(SimError::Usage(format!(
                    "the native program on {who} panicked: {msg}"
                )));
            }
            Ok(Poll::Ready(code)) => Request::Exit(code),
            Ok(Poll::Pending) => match port.request.take() {
                Some(req) => {
                    let script = port.script.take();
                    let poll = port.poll.borrow_mut().take();
                    let th = &mut self.threads[tid];
                    if let Some(script) = script {
                        th.script = (script.left > 0).then_some(script);
                    }
                    if poll.is_some() {
                        th.poll = poll;
                    }
                    req
                }
                None => {
                    let th = &self.threads[tid];
                    let side = if th.spe.is_some() { "an SPU" } else { "a PPE" };
                    return Err(SimError::Usage(format!(
                        "the native program on {} awaited something that is not {side} call",
                        th.who(tid)
                    )));
                }
            },
        };
        self.submit_request(tid, req)
    }

    /// The next command of the loop `tid` declared, if it is in one: the
    /// request its program would make now.
    #[inline]
    pub(super) fn scripted(&mut self, tid: ThreadId) -> Option<Request> {
        let th = &mut self.threads[tid];
        let script = th.script.as_mut()?;
        let cmd = script
            .take()
            .expect("a script in a thread has commands left");
        if script.left == 0 {
            th.script = None;
        }
        th.take_reply();
        Some(Request::Mfc(cmd))
    }

    /// The next request of the polling loop `tid` declared, if it is in one
    /// and its rows are as they were; when a row has changed, the loop ends
    /// and the row's index is the reply its program gets (`None`).
    #[inline]
    pub(super) fn polling(&mut self, tid: ThreadId) -> Option<Request> {
        let th = &mut self.threads[tid];
        let p = th.poll.as_mut()?;
        match p.next() {
            Ok(req) => {
                th.take_reply();
                Some(req)
            }
            Err(row) => {
                th.declared_polls += p.polls;
                th.poll = None;
                th.reply = row as u64;
                None
            }
        }
    }

    /// Polls the engine made for declared polling loops that have ended
    /// (`Spu::mfc_poll`): each a program wake-up saved, bus traffic the same.
    pub fn declared_polls(&self) -> u64 {
        self.threads.iter().map(|t| t.declared_polls).sum()
    }

    /// Handles a thread's request at the current cycle.
    pub(super) fn submit_request(&mut self, tid: ThreadId, req: Request) -> Result<(), SimError> {
        let now = self.now;
        let channel = self.timing.channel;
        let th = self
            .threads
            .get_mut(tid)
            .ok_or_else(|| SimError::Usage(format!("no thread {tid}")))?;
        if th.is_finished() {
            return Err(SimError::Usage(format!(
                "{} has already exited",
                th.who(tid)
            )));
        }
        th.calls.note(req, now);
        let on_spu = th.spe.is_some();
        match req {
            Request::ComputeLs { cycles, accesses } if on_spu && accesses > 0 && cycles > 0 => {
                self.compute_sharing_port(tid, cycles, accesses)?
            }
            Request::Compute(c) | Request::ComputeLs { cycles: c, .. } => {
                let end = later(now, c).ok_or_else(|| {
                    SimError::Usage(overflow_message(&format!("compute({c})"), now))
                })?;
                if self.trace.is_some() {
                    let track = self.thread_track(tid);
                    self.record(track, now, end, || "compute".into());
                }
                self.schedule(end, Event::wake(tid))
            }
            Request::Join(other) => self.join(tid, other)?,
            Request::Exit(code) => {
                th.state = ThreadState::Finished { code, at: now };
                self.events_exit(tid);
                self.wake_blocked();
            }
            _ if !on_spu => self.submit_ppe(tid, req)?,
            Request::WriteTagMask(m) => {
                th.tag_mask = m;
                self.schedule(now + channel, Event::wake(tid));
            }
            Request::ReadTagMask => {
                th.reply = th.tag_mask as u64;
                self.schedule(now + channel, Event::wake(tid));
            }
            Request::ReadDecrementer => {
                self.threads[tid].reply = self.decrementer(tid) as u64;
                self.schedule(now + channel, Event::wake(tid));
            }
            Request::WriteDecrementer(v) => {
                th.dec_value = v;
                th.dec_at = now;
                self.schedule(now + channel, Event::wake(tid));
            }
            Request::ReadTagStatus(mode) => {
                // The read consumes the update requested with MFC_WrTagUpdate.
                th.events.tag_update = None;
                self.read_tag_status(tid, mode)?
            }
            Request::WriteChannel(Channel::WriteTagUpdate, v) => {
                self.event_channel_write(tid, Channel::WriteTagUpdate, v);
                // Charged with the tag-status read it requests: the program goes on at once.
                self.ready.push_front(tid);
            }
            Request::Mfc(cmd) => self.issue(tid, cmd)?,
            Request::ReadChannel(c) => self.read_channel(tid, c)?,
            Request::WriteChannel(c, v) => self.write_channel(tid, c, v)?,
            Request::LsLoop(l) => self.ls_loop(tid, l)?,
            Request::ChannelCount(c) => {
                let p = self.spu_of(tid)?;
                self.events_tick();
                self.threads[tid].reply = match c {
                    Channel::ReadEventStatus => self.event_status(tid).is_some() as u64,
                    _ => self.channel_count(p, c) as u64,
                };
                self.schedule(now + channel, Event::wake(tid));
            }
            _ => {
                return Err(SimError::Usage(format!(
                    "{} is a PPE call; an SPE program cannot make it",
                    req.describe(0)
                )))
            }
        }
        self.events_tick();
        Ok(())
    }

    fn join(&mut self, tid: ThreadId, other: ThreadId) -> Result<(), SimError> {
        if other >= self.threads.len() || other == tid {
            return Err(SimError::Usage(format!(
                "thread {tid} cannot join thread {other}"
            )));
        }
        let now = self.now;
        self.threads[tid].block(Wait::Join(other), Request::Join(other), now);
        self.try_wake(tid);
        Ok(())
    }

    fn read_tag_status(&mut self, tid: ThreadId, mode: TagUpdate) -> Result<(), SimError> {
        let now = self.now;
        let mask = self.threads[tid].tag_mask;
        if mode != TagUpdate::Immediate && mask == 0 {
            return Err(self.mfc_error(
                tid,
                MfcErrorKind::Channel,
                Request::ReadTagStatus(mode).describe(mask),
                "the tag mask is empty, so this blocking read could never complete (call mfc_write_tag_mask first)"
                    .into(),
            ));
        }
        self.threads[tid].block(Wait::Tags(mode), Request::ReadTagStatus(mode), now);
        if !self.try_wake(tid) {
            return Ok(());
        }
        // Completed at once: the channel read still takes its cycles.
        self.ready.pop_back();
        self.schedule(now + self.timing.channel, Event::wake(tid));
        Ok(())
    }

    /// The SPU thread of `p` may be waiting on its tag groups or queue: wake it
    /// if its condition now holds (the hot path of every DMA completion).
    pub(crate) fn check_spu_waiter(&mut self, p: u8) {
        if let Some(tid) = self.spes[p as usize].thread {
            if self.threads[tid].wait.is_some() {
                self.try_wake(tid);
            }
        }
    }

    /// Re-checks every blocked thread, in thread order.
    #[inline(never)] // rare in the step loop (see `Machine::ppe_request_done`)
    pub(crate) fn wake_blocked(&mut self) {
        for tid in 0..self.threads.len() {
            if self.threads[tid].wait.is_some() {
                self.try_wake(tid);
            }
        }
    }

    /// If what `tid` waits for has happened, completes its request and makes
    /// it ready. Returns whether it woke.
    pub(super) fn try_wake(&mut self, tid: ThreadId) -> bool {
        let Some(wait) = self.threads[tid].wait else {
            return false;
        };
        let spu = self.threads[tid].spe.map(|s| s.physical);
        let reply: Option<u64> = match wait {
            Wait::Tags(mode) => {
                let p = spu.expect("SPU wait");
                let mask = self.threads[tid].tag_mask;
                let tags = &self.spes[p as usize].mfc.tags;
                tags.satisfied(mask, mode).then(|| tags.status(mask) as u64)
            }
            Wait::QueueSlot => {
                let p = spu.expect("SPU wait");
                let q = &mut self.spes[p as usize].mfc.queue;
                if q.free() == 0 {
                    return false;
                }
                q.reserve();
                // The stalled command write completes now; the program goes on after it.
                self.threads[tid].wait = None;
                self.threads[tid].state = ThreadState::Active;
                let at = self.now + self.timing.channel;
                self.schedule(at, Event::enqueue(tid));
                return true;
            }
            Wait::Channel(Channel::ReadEventStatus, _) => self.event_status(tid),
            Wait::Channel(c, v) => self.channel_ready(spu.expect("SPU wait"), c, v),
            Wait::PpeEvents(req) => {
                let got = self.ppe_events(&self.ppe_event_list(req));
                (got != 0).then_some(got)
            }
            Wait::Join(other) => match self.threads[other].state {
                ThreadState::Finished { code, .. } => Some(code as u64),
                _ => None,
            },
            Wait::OutMbox(p, which) => {
                if !self.spes[p as usize].mbox.outbound_available(which) {
                    return false;
                }
                self.spes[p as usize].mbox.claim_outbound(which);
                self.threads[tid].wait = Some(Wait::Bus);
                self.ppe_mmio_read(tid, p, outbound_reg(which));
                return true;
            }
            Wait::InMboxRoom(p, v) => {
                if self.spes[p as usize].mbox.inbound_space() == 0 {
                    return false;
                }
                self.ppe_mmio_write(tid, p, ps::SPU_IN_MBOX, v);
                Some(1)
            }
            Wait::ProxySlot(p) => {
                let q = &mut self.spes[p as usize].mfc.proxy;
                if q.free() == 0 {
                    return false;
                }
                q.reserve();
                self.threads[tid].wait = None;
                self.threads[tid].state = ThreadState::Active;
                let at = self.now + self.timing.mmio_access;
                self.schedule(at, Event::enqueue(tid));
                return true;
            }
            Wait::ProxyTags(p, mask, mode) => {
                let tags = &self.spes[p as usize].mfc.proxy_tags;
                tags.satisfied(mask, mode).then(|| tags.status(mask) as u64)
            }
            Wait::Bus | Wait::Core => None,
        };
        let Some(reply) = reply else { return false };
        if let (true, ThreadState::Blocked { request, since }) =
            (self.trace.is_some(), self.threads[tid].state)
        {
            if since < self.now {
                let mask = self.threads[tid].tag_mask;
                let track = self.thread_track(tid);
                self.record(track, since, self.now, || {
                    format!("wait: {}", request.describe(mask))
                });
            }
        }
        let th = &mut self.threads[tid];
        th.reply = reply;
        th.wait = None;
        th.state = ThreadState::Active;
        self.ready.push_back(tid);
        true
    }

    /// Whether a blocking SPU channel access can complete now; performs it if so.
    fn channel_ready(&mut self, p: u8, c: Channel, v: u32) -> Option<u64> {
        let unit = &mut self.spes[p as usize];
        let out = match c {
            Channel::InMbox => unit.mbox.read_inbound().map(u64::from),
            Channel::OutMbox => unit.mbox.write_outbound(Outbound::Plain, v).then_some(0),
            Channel::OutIntrMbox => unit
                .mbox
                .write_outbound(Outbound::Interrupt, v)
                .then_some(0),
            Channel::Signal1 => unit.signals.read(0).map(u64::from),
            Channel::Signal2 => unit.signals.read(1).map(u64::from),
            Channel::AtomicStatus => unit.mfc.atomic_status.take().map(u64::from),
            Channel::ListStallStatus => {
                (unit.mfc.list_stall != 0).then(|| std::mem::take(&mut unit.mfc.list_stall) as u64)
            }
            Channel::ListStallAck => Some(0),
            Channel::ReadEventStatus
            | Channel::WriteEventMask
            | Channel::WriteEventAck
            | Channel::ReadEventMask
            | Channel::WriteTagUpdate => unreachable!("event channels are handled in events.rs"),
        };
        if out.is_some() && matches!(c, Channel::InMbox | Channel::OutMbox | Channel::OutIntrMbox) {
            // PPE threads may wait for this mailbox's room or message.
            self.mbox_changed = true;
        }
        out
    }

    fn read_channel(&mut self, tid: ThreadId, c: Channel) -> Result<(), SimError> {
        let p = self.spu_of(tid)?;
        match c {
            Channel::ReadEventMask => {
                self.threads[tid].reply = self.threads[tid].events.mask as u64;
                self.schedule(self.now + self.timing.channel, Event::wake(tid));
                return Ok(());
            }
            Channel::ReadEventStatus if self.threads[tid].events.mask != 0 => self.events_tick(),
            Channel::ReadEventStatus => {
                return Err(self.mfc_error(
                    tid,
                    MfcErrorKind::Channel,
                    Request::ReadChannel(c).describe(0),
                    "the event mask is empty, so this blocking read could never complete (call spu_write_event_mask first)"
                        .into(),
                ));
            }
            Channel::WriteEventMask | Channel::WriteEventAck | Channel::WriteTagUpdate => {
                return Err(self.mfc_error(
                    tid,
                    MfcErrorKind::Channel,
                    format!("spu_readch({})", c.number()),
                    format!("channel {} is write-only", c.number()),
                ));
            }
            _ => {}
        }
        if c == Channel::AtomicStatus {
            let mfc = &self.spes[p as usize].mfc;
            if mfc.atomic_status.is_none() && mfc.atomic_pending == 0 {
                return Err(self.mfc_error(
                    tid,
                    MfcErrorKind::Channel,
                    Request::ReadChannel(c).describe(0),
                    "no atomic command (getllar, putllc, putlluc) is outstanding, so this read could never complete"
                        .into(),
                ));
            }
        }
        self.channel_access(tid, Request::ReadChannel(c), c, 0);
        Ok(())
    }

    fn write_channel(&mut self, tid: ThreadId, c: Channel, v: u32) -> Result<(), SimError> {
        match c {
            Channel::ListStallAck => {
                let p = self.threads[tid].spe.expect("SPU thread").physical;
                self.list_stall_ack(p, v);
            }
            Channel::WriteEventMask | Channel::WriteEventAck => {
                self.event_channel_write(tid, c, v);
                self.schedule(self.now + self.timing.channel, Event::wake(tid));
                return Ok(());
            }
            Channel::ReadEventStatus | Channel::ReadEventMask => {
                return Err(self.mfc_error(
                    tid,
                    MfcErrorKind::Channel,
                    format!("spu_writech({}, {v})", c.number()),
                    format!("channel {} is read-only", c.number()),
                ));
            }
            _ => {}
        }
        self.channel_access(tid, Request::WriteChannel(c, v), c, v);
        Ok(())
    }

    /// A channel access: completes after one channel cycle time, or blocks.
    fn channel_access(&mut self, tid: ThreadId, req: Request, c: Channel, v: u32) {
        let now = self.now;
        self.threads[tid].block(Wait::Channel(c, v), req, now);
        if self.try_wake(tid) {
            self.ready.pop_back();
            self.schedule(now + self.timing.channel, Event::wake(tid));
        }
        if std::mem::take(&mut self.mbox_changed) {
            self.wake_blocked();
        }
    }

    fn channel_count(&self, p: u8, c: Channel) -> u32 {
        let unit = &self.spes[p as usize];
        match c {
            Channel::InMbox => unit.mbox.inbound_count(),
            Channel::OutMbox => !unit.mbox.outbound_full(Outbound::Plain) as u32,
            Channel::OutIntrMbox => !unit.mbox.outbound_full(Outbound::Interrupt) as u32,
            Channel::Signal1 => unit.signals.count(0),
            Channel::Signal2 => unit.signals.count(1),
            Channel::AtomicStatus => unit.mfc.atomic_status.is_some() as u32,
            Channel::ListStallStatus => (unit.mfc.list_stall != 0) as u32,
            Channel::ListStallAck => 1,
            Channel::ReadEventStatus => 0,
            Channel::WriteEventMask
            | Channel::WriteEventAck
            | Channel::ReadEventMask
            | Channel::WriteTagUpdate => 1,
        }
    }

    fn spu_of(&self, tid: ThreadId) -> Result<u8, SimError> {
        self.threads[tid].spe.map(|s| s.physical).ok_or_else(|| {
            SimError::Usage("only SPU programs have an MFC command queue and tag groups".into())
        })
    }

    pub(super) fn mfc_error(
        &self,
        tid: ThreadId,
        kind: MfcErrorKind,
        command: String,
        message: String,
    ) -> SimError {
        SimError::Mfc(MfcError {
            kind,
            spe: self.threads[tid].spe.map(|s| s.logical),
            cycle: self.now,
            command,
            message,
        })
    }

    /// Validates an MFC command and starts its issue (the channel writes).
    fn issue(&mut self, tid: ThreadId, cmd: MfcCommand) -> Result<(), SimError> {
        let now = self.now;
        let p = self.spu_of(tid)?;
        let (target, remote) = self.validate(tid, p, &cmd)?;
        self.check_reservation_use(tid, p, &cmd)?;
        self.counters.dma_commands += 1;
        let unit = &mut self.spes[p as usize];
        count_issue(&mut unit.mfc, &cmd, false);
        let th = &mut self.threads[tid];
        th.pending = Some(Pending {
            cmd,
            target,
            remote,
            issued_at: now,
            spe: p,
            proxy: false,
        });
        if unit.mfc.queue.free() > 0 {
            unit.mfc.queue.reserve();
            self.schedule(now + self.timing.issue, Event::enqueue(tid));
        } else {
            th.block(Wait::QueueSlot, Request::Mfc(cmd), now);
        }
        Ok(())
    }

    /// A putllc must follow a getllar of its line: one without is a program
    /// bug (it could never succeed), unlike a putllc whose reservation was lost.
    fn check_reservation_use(
        &mut self,
        tid: ThreadId,
        p: u8,
        cmd: &MfcCommand,
    ) -> Result<(), SimError> {
        use crate::mfc::command::Atomic;
        let line = cmd.ea / crate::atomic::LINE;
        let mfc = &mut self.spes[p as usize].mfc;
        match cmd.op.atomic() {
            Some(Atomic::GetLLAR) => mfc.reserved_line = Some(line),
            Some(Atomic::PutLLC) if mfc.reserved_line != Some(line) => {
                return Err(self.mfc_error(
                    tid,
                    MfcErrorKind::Atomic,
                    cmd.to_string(),
                    format!(
                        "putllc to the lock line at 0x{:x} without a reservation on it: issue mfc_getllar on the line first",
                        line * crate::atomic::LINE
                    ),
                ));
            }
            Some(Atomic::PutLLC) => mfc.reserved_line = None,
            _ => {}
        }
        Ok(())
    }

    /// Checks a command against the architecture's rules and the address map;
    /// returns where its effective address leads (for lists: nowhere yet).
    pub(super) fn validate(
        &self,
        tid: ThreadId,
        p: u8,
        cmd: &MfcCommand,
    ) -> Result<(Ramp, Space), SimError> {
        if let Err((kind, msg)) = cmd.check(self.timing.ls_bytes) {
            return Err(self.mfc_error(tid, kind, cmd.to_string(), msg));
        }
        if cmd.op.is_sync() {
            return Ok((self.topo.mic(0), Space::None));
        }
        if cmd.op.is_list() {
            let ls = &self.spes[p as usize].ls;
            let mut cursor = cmd.lsa;
            for i in 0..cmd.size / 8 {
                let e = ListElement::read(ls, cmd.list, i);
                let ea = (cmd.ea & !0xFFFF_FFFF) | e.eal as u64;
                if let Err((kind, msg)) = self.list_element_target(cursor, ea, e.size) {
                    return Err(self.mfc_error(
                        tid,
                        kind,
                        cmd.to_string(),
                        format!("list element {i}: {msg}"),
                    ));
                }
                cursor += e.size;
            }
            return Ok((self.topo.mic(0), Space::None));
        }
        let (ramp, space) = self
            .resolve(cmd.ea, cmd.transfer_size())
            .map_err(|msg| self.mfc_error(tid, MfcErrorKind::Unmapped, cmd.to_string(), msg))?;
        if cmd.op.is_sndsig()
            && !matches!(space, Space::Ps { reg, .. } if reg == ps::SIG_NOTIFY_1 || reg == ps::SIG_NOTIFY_2)
        {
            return Err(self.mfc_error(
                tid,
                MfcErrorKind::Unmapped,
                cmd.to_string(),
                format!("ea 0x{:x} is not a signal-notification register", cmd.ea),
            ));
        }
        // Atomic commands move a 128-byte line, so they never pass this rule.
        register_rule(space, cmd.transfer_size())
            .map_err(|(kind, msg)| self.mfc_error(tid, kind, cmd.to_string(), msg))?;
        if cmd.op.atomic().is_some() && !matches!(space, Space::Memory(_)) {
            return Err(self.mfc_error(
                tid,
                MfcErrorKind::Atomic,
                cmd.to_string(),
                "atomic commands work on lock lines in main memory".into(),
            ));
        }
        Ok((ramp, space))
    }

    /// Checks one DMA-list element whose data is at local-store address
    /// `cursor` (at issue, and again when the MFC fetches it, since the
    /// program may have rewritten it meanwhile) and returns where it leads.
    pub(crate) fn list_element_target(
        &self,
        cursor: u32,
        ea: u64,
        size: u32,
    ) -> Result<(Ramp, Space), (MfcErrorKind, String)> {
        check_element(cursor, ea, size, self.timing.ls_bytes)?;
        let (ramp, space) = self
            .resolve(ea, size)
            .map_err(|msg| (MfcErrorKind::Unmapped, msg))?;
        register_rule(space, size)?;
        Ok((ramp, space))
    }

    /// Where `[ea, ea + size)` leads: the element owning it and the remote end.
    pub(super) fn resolve(&self, ea: u64, size: u32) -> Result<(Ramp, Space), String> {
        match self.map.resolve(ea, size as u64) {
            Some(Target::Memory(off)) => Ok((self.topo.mic(self.bank(off)), Space::Memory(off))),
            Some(Target::Ls { spe, offset }) => {
                let p = self.physical(spe).map_err(|e| e.to_string())?;
                Ok((self.topo.spe(p), Space::Ls { spe: p, offset }))
            }
            Some(Target::ProblemState { spe, offset }) => {
                let p = self.physical(spe).map_err(|e| e.to_string())?;
                match offset {
                    ps::SPU_IN_MBOX
                    | ps::SPU_OUT_MBOX
                    | ps::SPU_OUT_INTR_MBOX
                    | ps::SPU_MBOX_STAT
                    | ps::SIG_NOTIFY_1
                    | ps::SIG_NOTIFY_2 => {
                        Ok((self.topo.spe(p), Space::Ps { spe: p, reg: offset }))
                    }
                    _ => Err(format!("problem-state offset 0x{offset:x} of SPE {spe} is not a register this model has")),
                }
            }
            None => Err(format!(
                "ea range 0x{:x}..0x{:x} is not mapped: main memory is 0..0x{:x}, local stores start at 0x{:x}",
                ea,
                ea.wrapping_add(size as u64),
                self.map.memory_bytes,
                crate::memory_map::LS_MAP_BASE
            )),
        }
    }

    /// Everyone blocked, for the deadlock report.
    pub(super) fn blocked_report(&self) -> Vec<Blocked> {
        self.threads
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.state {
                ThreadState::Blocked { request, since } => Some(Blocked {
                    who: t.who(i),
                    waits_on: request.describe(t.tag_mask),
                    since,
                }),
                ThreadState::Active => Some(Blocked {
                    who: t.who(i),
                    waits_on:
                        "nothing: it has not made its next request (an external program not driven)"
                            .into(),
                    since: self.now,
                }),
                ThreadState::Finished { .. } => None,
            })
            .collect()
    }
}

/// The architecture's rule for problem-state registers (mailboxes and
/// signals) reached through the memory map.
const REGISTER_RULE: &str = "problem-state registers are accessed 4 bytes at a time";

/// A transfer to or from a problem-state register must be 4 bytes.
fn register_rule(space: Space, size: u32) -> Result<(), (MfcErrorKind, String)> {
    match space {
        Space::Ps { .. } if size != 4 => Err((MfcErrorKind::Size, REGISTER_RULE.into())),
        _ => Ok(()),
    }
}

/// The problem-state register of an outbound mailbox.
pub(super) fn outbound_reg(which: Outbound) -> u32 {
    match which {
        Outbound::Plain => ps::SPU_OUT_MBOX,
        Outbound::Interrupt => ps::SPU_OUT_INTR_MBOX,
    }
}

/// Counts a command where its completion will be seen: a tag group, or the
/// atomic unit.
pub(super) fn count_issue(mfc: &mut crate::mfc::Mfc, cmd: &MfcCommand, proxy: bool) {
    if cmd.op.atomic().is_some() {
        mfc.atomic_pending += 1;
    } else if proxy {
        mfc.proxy_tags.add(cmd.tag);
    } else {
        mfc.tags.add(cmd.tag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::shape_words;

    fn blocked(since: Cycle, mask: u32) -> Thread {
        let mut t = Thread::external(None);
        t.tag_mask = mask;
        t.state = ThreadState::Blocked {
            request: Request::ReadTagMask,
            since,
        };
        t
    }

    /// The shape rule (see [`crate::part`]) for a thread (threads hold a
    /// program and are not copied: the states are built twice). What it
    /// waits for decides its next step; when it started waiting is history
    /// (left out, moved by `shift` only when it falls in the jumped period).
    #[test]
    fn shape_rule() {
        let now = 900;
        let a = blocked(100, 1);
        assert_eq!(shape_words(&a, now), shape_words(&blocked(500, 1), now));
        assert_ne!(shape_words(&a, now), shape_words(&blocked(100, 3), now));
        let mut b = blocked(100, 1);
        b.declared_polls += 4; // a counter of the report
        assert_eq!(shape_words(&a, now), shape_words(&b, now));
        // History before the period stays; within it, it moves with the jump.
        let (mut old, mut new) = (blocked(100, 1), blocked(700, 1));
        old.shift(600, 50);
        new.shift(600, 50);
        let since = |t: &Thread| match t.state {
            ThreadState::Blocked { since, .. } => since,
            _ => unreachable!(),
        };
        assert_eq!((since(&old), since(&new)), (100, 750));
    }
}
