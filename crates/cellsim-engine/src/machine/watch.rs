//! Runs that may never end, seen from the host.
//!
//! A program that polls (`while spu_stat_in_mbox() == 0 {}`) is never
//! blocked, so deadlock detection cannot see it, and the simulated-time limit
//! may be hours of host time away. Two things help: a [`Watchdog`] that the
//! event loop calls every so many steps (the Python binding checks Ctrl-C
//! and a host-time limit there), and a record of each thread's last call and
//! of the poll it repeats, so that a run stopped by either limit says what
//! every program was doing (a livelock report).

use super::threads::{Thread, ThreadState};
use super::Machine;
use crate::error::{Activity, SimError};
use crate::mfc::command::Opcode;
use crate::mfc::tags::TagUpdate;
use crate::program::Request;
use crate::time::Cycle;

/// Steps of the event loop between two watchdog checks: rare enough to cost
/// nothing measurable, often enough (well under a millisecond of host time)
/// for Ctrl-C to feel immediate.
pub const WATCH_EVERY: u32 = 4096;

/// A host-side check run by the event loop every [`WATCH_EVERY`] steps; an
/// error stops the run (the error's text says why).
pub type Watchdog = Box<dyn FnMut() -> Result<(), String>>;

/// A poll a thread keeps repeating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Poll {
    request: Request,
    count: u64,
    since: Cycle,
}

/// What a thread last asked for, for the livelock report.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LastCalls {
    last: Option<(Request, Cycle)>,
    poll: Option<Poll>,
}

impl LastCalls {
    /// Moves the cycles of calls made since `from` `dt` later (a jump).
    pub(crate) fn shift_since(&mut self, from: Cycle, dt: Cycle) {
        if let Some((_, t)) = self.last.as_mut() {
            if *t >= from {
                *t += dt;
            }
        }
        if let Some(p) = self.poll.as_mut() {
            if p.since >= from {
                p.since += dt;
            }
        }
    }

    /// Notes a request made at `now`.
    #[inline]
    pub(crate) fn note(&mut self, req: Request, now: Cycle) {
        self.last = Some((req, now));
        if !is_poll(&req) {
            return;
        }
        match self.poll.as_mut() {
            Some(p) if p.request == req => p.count += 1,
            _ => {
                self.poll = Some(Poll {
                    request: req,
                    count: 1,
                    since: now,
                })
            }
        }
    }
}

/// Requests that read state without waiting for it: a program that loops on
/// one of them is polling.
fn is_poll(req: &Request) -> bool {
    match req {
        Request::ChannelCount(_)
        | Request::ReadDecrementer
        | Request::ReadTagStatus(TagUpdate::Immediate)
        | Request::PpeMboxStatus { .. }
        | Request::PpeLoad { .. }
        | Request::PpeLwarx { .. }
        | Request::PpeReadMbox { wait: false, .. }
        | Request::PpeWriteMbox { wait: false, .. } => true,
        Request::ProxyTagStatus { mode, .. } => *mode == TagUpdate::Immediate,
        Request::Mfc(c) => c.op == Opcode::GetLLAR,
        _ => false,
    }
}

impl Machine {
    /// Installs a host-side check that the event loop runs every
    /// [`WATCH_EVERY`] steps (see [`Watchdog`]).
    pub fn set_watchdog(&mut self, watchdog: Watchdog) {
        self.watchdog = Some(watchdog);
    }

    /// Counts one step of the event loop and, every [`WATCH_EVERY`] steps,
    /// runs the watchdog.
    #[inline]
    pub(super) fn watch(&mut self) -> Result<(), SimError> {
        self.watch_countdown -= 1;
        if self.watch_countdown > 0 {
            return Ok(());
        }
        self.watch_countdown = WATCH_EVERY;
        let Some(check) = self.watchdog.as_mut() else {
            return Ok(());
        };
        check().map_err(|reason| SimError::Stopped {
            cycle: self.now,
            reason,
            activity: self.activity_report(),
        })
    }

    /// What every unfinished thread is doing, for a run that did not end.
    pub fn activity_report(&self) -> Vec<Activity> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_finished())
            .map(|(i, t)| Activity {
                who: t.who(i),
                doing: doing(t),
            })
            .collect()
    }
}

/// One thread's line of the livelock report.
fn doing(t: &Thread) -> String {
    let mask = t.tag_mask;
    let calls = &t.calls;
    let last = match calls.last {
        Some((req, at)) => format!("last call {} at cycle {at}", req.describe(mask)),
        None => "has made no call yet".into(),
    };
    match (t.state, calls.poll) {
        (ThreadState::Blocked { request, since }, _) => {
            format!("blocked in {} since cycle {since}", request.describe(mask))
        }
        (_, Some(p)) if p.count > 1 => {
            let polling = format!(
                "polling {} ({} times since cycle {})",
                p.request.describe(mask),
                p.count,
                p.since
            );
            match calls.last {
                Some((req, at)) if req == p.request => format!("{polling}, last at cycle {at}"),
                _ => format!("{polling}; {last}"),
            }
        }
        _ => last,
    }
}
