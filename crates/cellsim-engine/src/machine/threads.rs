//! Programs on the chip: their requests, blocking and waking.
//!
//! A thread runs until it makes a request; the request costs simulated time
//! (a channel write, a DMA issue, a computation) or blocks (a full command
//! queue, a tag-status read whose groups are busy); the thread runs again when
//! it is done. Native threads are polled inline; external ones are handed back
//! to the caller of [`Machine::advance`].

use super::{Event, Machine};
use crate::bus::Space;
use crate::error::{Blocked, MfcError, MfcErrorKind, SimError};
use crate::memory_map::Target;
use crate::mfc::command::{MfcCommand, Opcode};
use crate::mfc::tags::TagUpdate;
use crate::program::{Port, ProgramFuture, Request};
use crate::time::Cycle;
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

/// A command between its issue and its entry into the queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) cmd: MfcCommand,
    pub(crate) target: Ramp,
    pub(crate) remote: Space,
    pub(crate) issued_at: Cycle,
}

pub(crate) enum Body {
    Native { fut: ProgramFuture, port: Rc<Port> },
    External,
}

pub(crate) struct Thread {
    pub(crate) spe: Option<SpeSlot>,
    body: Body,
    pub(crate) state: ThreadState,
    reply: u64,
    pub(crate) tag_mask: u32,
    pub(crate) tag_wait: Option<TagUpdate>,
    dec_value: u32,
    dec_at: Cycle,
    pub(crate) pending: Option<Pending>,
}

impl Thread {
    pub(crate) fn native(logical: u32, physical: u8, fut: ProgramFuture, port: Rc<Port>) -> Thread {
        Thread::new(
            Some(SpeSlot { logical, physical }),
            Body::Native { fut, port },
        )
    }

    pub(crate) fn external(logical: u32, physical: u8) -> Thread {
        Thread::new(Some(SpeSlot { logical, physical }), Body::External)
    }

    fn new(spe: Option<SpeSlot>, body: Body) -> Thread {
        Thread {
            spe,
            body,
            state: ThreadState::Active,
            reply: 0,
            tag_mask: 0,
            tag_wait: None,
            dec_value: u32::MAX,
            dec_at: 0,
            pending: None,
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

    pub(crate) fn info(&self, id: ThreadId) -> ThreadInfo {
        ThreadInfo {
            id,
            spe: self.spe.map(|s| s.logical),
            physical: self.spe.map(|s| s.physical),
            state: self.state,
        }
    }

    fn who(&self) -> String {
        match self.spe {
            Some(s) => format!("SPE {} (physical {})", s.logical, s.physical),
            None => "PPE".into(),
        }
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
        let req = match polled {
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                return Err(SimError::Usage(format!(
                    "the native program on {} panicked: {msg}",
                    th.who()
                )));
            }
            Ok(Poll::Ready(code)) => Request::Exit(code),
            Ok(Poll::Pending) => port.request.take().ok_or_else(|| {
                SimError::Usage(format!(
                    "the native program on {} awaited something that is not an SPU call",
                    th.who()
                ))
            })?,
        };
        self.submit_request(tid, req)
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
            return Err(SimError::Usage(format!("{} has already exited", th.who())));
        }
        match req {
            Request::Compute(c) => self.schedule(now + c, Event::Wake(tid)),
            Request::WriteTagMask(m) => {
                th.tag_mask = m;
                self.schedule(now + channel, Event::Wake(tid));
            }
            Request::ReadDecrementer => {
                let ticks = ((now - th.dec_at) as f64 / self.timing.cycles_per_tick) as u64;
                th.reply = th.dec_value.wrapping_sub(ticks as u32) as u64;
                self.schedule(now + channel, Event::Wake(tid));
            }
            Request::WriteDecrementer(v) => {
                th.dec_value = v;
                th.dec_at = now;
                self.schedule(now + channel, Event::Wake(tid));
            }
            Request::ReadTagStatus(mode) => self.read_tag_status(tid, mode)?,
            Request::Mfc(cmd) => self.issue(tid, cmd)?,
            Request::Exit(code) => {
                th.state = ThreadState::Finished { code, at: now };
            }
        }
        Ok(())
    }

    fn read_tag_status(&mut self, tid: ThreadId, mode: TagUpdate) -> Result<(), SimError> {
        let now = self.now;
        let channel = self.timing.channel;
        let th = &self.threads[tid];
        let spe = self.spu_of(tid)?;
        let mask = th.tag_mask;
        if mode != TagUpdate::Immediate && mask == 0 {
            return Err(self.mfc_error(
                tid,
                MfcErrorKind::Channel,
                Request::ReadTagStatus(mode).describe(mask),
                "the tag mask is empty, so this blocking read could never complete (call mfc_write_tag_mask first)".into(),
            ));
        }
        let tags = &self.spes[spe as usize].mfc.tags;
        if tags.satisfied(mask, mode) {
            let status = tags.status(mask);
            self.threads[tid].reply = status as u64;
            self.schedule(now + channel, Event::Wake(tid));
        } else {
            let th = &mut self.threads[tid];
            th.tag_wait = Some(mode);
            th.state = ThreadState::Blocked {
                request: Request::ReadTagStatus(mode),
                since: now,
            };
        }
        Ok(())
    }

    /// The SPU thread of `spe` may be waiting on its tag groups: wake it if
    /// its condition now holds.
    pub(super) fn check_tag_waiter(&mut self, p: u8) {
        let Some(tid) = self.spes[p as usize].thread else {
            return;
        };
        let th = &self.threads[tid];
        let Some(mode) = th.tag_wait else { return };
        let tags = &self.spes[p as usize].mfc.tags;
        if tags.satisfied(th.tag_mask, mode) {
            let status = tags.status(th.tag_mask);
            let th = &mut self.threads[tid];
            th.reply = status as u64;
            th.tag_wait = None;
            th.state = ThreadState::Active;
            self.ready.push_back(tid);
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
        if let Err((kind, msg)) = cmd.check(self.timing.ls_bytes) {
            return Err(self.mfc_error(tid, kind, cmd.to_string(), msg));
        }
        let (target, remote) = if cmd.op == Opcode::Barrier {
            (self.topo.mic(), Space::None)
        } else {
            self.resolve(tid, &cmd)?
        };
        self.counters.dma_commands += 1;
        let unit = &mut self.spes[p as usize];
        unit.mfc.tags.add(cmd.tag);
        let th = &mut self.threads[tid];
        th.pending = Some(Pending {
            cmd,
            target,
            remote,
            issued_at: now,
        });
        if unit.mfc.queue.free() > 0 {
            unit.mfc.queue.reserve();
            let issue = self.timing.issue;
            self.schedule(now + issue, Event::Enqueue(tid));
        } else {
            th.state = ThreadState::Blocked {
                request: Request::Mfc(cmd),
                since: now,
            };
        }
        Ok(())
    }

    /// Where a command's effective address leads.
    fn resolve(&self, tid: ThreadId, cmd: &MfcCommand) -> Result<(Ramp, Space), SimError> {
        match self.map.resolve(cmd.ea, cmd.size as u64) {
            Some(Target::Memory(off)) => Ok((self.topo.mic(), Space::Memory(off))),
            Some(Target::Ls { spe, offset }) => {
                let p = self.physical(spe)?;
                Ok((self.topo.spe(p), Space::Ls { spe: p, offset }))
            }
            Some(Target::ProblemState { .. }) => Err(self.mfc_error(
                tid,
                MfcErrorKind::Unmapped,
                cmd.to_string(),
                format!("ea 0x{:x} is a problem-state register: use the mailbox and signal calls", cmd.ea),
            )),
            None => Err(self.mfc_error(
                tid,
                MfcErrorKind::Unmapped,
                cmd.to_string(),
                format!(
                    "ea range 0x{:x}..0x{:x} is not mapped: main memory is 0..0x{:x}, local stores start at 0x{:x}",
                    cmd.ea,
                    cmd.ea.wrapping_add(cmd.size as u64),
                    self.map.memory_bytes,
                    crate::memory_map::LS_MAP_BASE
                ),
            )),
        }
    }

    /// A queue entry freed on SPE `p`: a thread stalled on a full queue
    /// finishes its command write.
    pub(super) fn check_queue_waiter(&mut self, p: u8) {
        let Some(tid) = self.spes[p as usize].thread else {
            return;
        };
        let th = &mut self.threads[tid];
        if !matches!(
            th.state,
            ThreadState::Blocked {
                request: Request::Mfc(_),
                ..
            }
        ) {
            return;
        }
        th.state = ThreadState::Active;
        self.spes[p as usize].mfc.queue.reserve();
        let at = self.now + self.timing.channel;
        self.schedule(at, Event::Enqueue(tid));
    }

    /// Everyone blocked, for the deadlock report.
    pub(super) fn blocked_report(&self) -> Vec<Blocked> {
        self.threads
            .iter()
            .filter_map(|t| match t.state {
                ThreadState::Blocked { request, since } => Some(Blocked {
                    who: t.who(),
                    waits_on: request.describe(t.tag_mask),
                    since,
                }),
                ThreadState::Active => Some(Blocked {
                    who: t.who(),
                    waits_on: "(running)".into(),
                    since: self.now,
                }),
                ThreadState::Finished { .. } => None,
            })
            .collect()
    }
}
