//! The SPU event facility (SPU_RdEventStat, SPU_WrEventMask, SPU_WrEventAck,
//! SPU_RdEventMask) and the PPE's libspe2 event wait.
//!
//! Bit positions are the CBEA's (the `MFC_*_EVENT` constants of
//! `spu_mfcio.h`). An event is recorded in the pending status when its
//! condition becomes true — an edge: the inbound mailbox going from empty to
//! not empty, the outbound mailbox from full to free, a signal register from
//! clear to set, a requested tag-status update from unmet to met, the
//! decrementer from positive to negative, a list stalling, the command
//! queue from full to free, a lock-line reservation being lost to another
//! writer. SPU_RdEventStat returns pending AND mask, blocking while that is
//! zero; SPU_WrEventAck clears the bits written. Pending bits are recorded
//! whatever the mask, so an event that came before its mask bit was set is
//! not lost.
//!
//! An SPE's events are tracked from its program's first SPU_WrEventMask to
//! its end ("armed"); what arrived before that write (a message, a signal,
//! a stalled list, a met tag update) is pending from it, as if tracked
//! since the program began. A program that never uses events pays nothing, and
//! while any SPE is armed the exact fast-forward takes no shape (it could
//! not replay the edges).
//!
//! Conditions are compared after every step of simulated time and every
//! request, so an edge is seen at the cycle it happens; the decrementer,
//! which crosses zero between events, gets its own wake-up
//! ([`Machine::next_time`] looks at [`Events::dec_wake`]).

use super::threads::{ThreadId, Wait};
use super::{Event, Machine};
use crate::mailbox::Outbound;
use crate::mfc::tags::TagUpdate;
use crate::program::{
    Channel, Request, MFC_COMMAND_QUEUE_AVAILABLE_EVENT as COMMAND_QUEUE_AVAILABLE,
    MFC_DECREMENTER_EVENT as DECREMENTER, MFC_IN_MBOX_AVAILABLE_EVENT as IN_MBOX_AVAILABLE,
    MFC_LIST_STALL_NOTIFY_EVENT as LIST_STALL_NOTIFY, MFC_LLR_LOST_EVENT as LLR_LOST,
    MFC_OUT_INTR_MBOX_AVAILABLE_EVENT as OUT_INTR_MBOX_AVAILABLE,
    MFC_OUT_MBOX_AVAILABLE_EVENT as OUT_MBOX_AVAILABLE,
    MFC_SIGNAL_NOTIFY_1_EVENT as SIGNAL_NOTIFY_1, MFC_SIGNAL_NOTIFY_2_EVENT as SIGNAL_NOTIFY_2,
    MFC_TAG_STATUS_UPDATE_EVENT as TAG_STATUS_UPDATE, SPE_EVENT_IN_MBOX, SPE_EVENT_OUT_INTR_MBOX,
    SPE_EVENT_SPE_STOPPED,
};
use crate::time::Cycle;

/// Conditions that hold when a program starts: no edge until they fall and rise again.
const FREE_FROM_THE_START: u32 =
    OUT_MBOX_AVAILABLE | OUT_INTR_MBOX_AVAILABLE | COMMAND_QUEUE_AVAILABLE | DECREMENTER;

/// One SPU program's event state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SpuEvents {
    /// It wrote SPU_WrEventMask at least once: its edges are tracked.
    pub(crate) armed: bool,
    pub(crate) mask: u32,
    pub(crate) pending: u32,
    /// The conditions as last seen (for edges).
    levels: u32,
    /// The tag-status update requested with MFC_WrTagUpdate and not yet read.
    pub(crate) tag_update: Option<TagUpdate>,
}

/// Machine-wide event bookkeeping.
#[derive(Debug)]
pub(crate) struct Events {
    /// SPU programs armed and not finished.
    pub(crate) armed: u32,
    /// The earliest cycle a waiting SPU's decrementer crosses zero
    /// (`Cycle::MAX`: none).
    pub(crate) dec_wake: Cycle,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            armed: 0,
            dec_wake: Cycle::MAX,
        }
    }
}

impl Machine {
    /// SPU_WrEventMask, SPU_WrEventAck, SPU_RdEventMask and MFC_WrTagUpdate:
    /// done at once (the caller charges the channel access).
    pub(super) fn event_channel_write(&mut self, tid: ThreadId, c: Channel, v: u32) {
        self.events_tick();
        let th = &mut self.threads[tid];
        match c {
            Channel::WriteEventMask => {
                if !th.events.armed {
                    th.events.armed = true;
                    self.events.armed += 1;
                    let p = th.spe.expect("SPU thread").physical;
                    self.reservations.take_lost(p);
                    // What arrived before (a message, a signal, a stall, a met
                    // update) is pending, as if tracked since the program began;
                    // a free mailbox or queue and a negative decrementer were so
                    // from the start and are no event.
                    let levels = self.event_levels(tid) & FREE_FROM_THE_START;
                    self.threads[tid].events.levels = levels;
                }
                self.threads[tid].events.mask = v;
            }
            Channel::WriteEventAck => th.events.pending &= !v,
            Channel::WriteTagUpdate => {
                th.events.tag_update = match v {
                    1 => Some(TagUpdate::Any),
                    2 => Some(TagUpdate::All),
                    _ => Some(TagUpdate::Immediate),
                }
            }
            _ => unreachable!("not an event channel write"),
        }
        self.events_tick();
    }

    /// SPU_RdEventStat can complete: pending AND mask, if not zero.
    pub(super) fn event_status(&self, tid: ThreadId) -> Option<u64> {
        let e = &self.threads[tid].events;
        let s = e.pending & e.mask;
        (s != 0).then_some(s as u64)
    }

    /// The conditions of the events of SPU thread `tid`, now.
    fn event_levels(&self, tid: ThreadId) -> u32 {
        let th = &self.threads[tid];
        let p = th.spe.expect("SPU thread").physical;
        let unit = &self.spes[p as usize];
        let mut l = 0;
        if let Some(mode) = th.events.tag_update {
            if unit.mfc.tags.satisfied(th.tag_mask, mode) {
                l |= TAG_STATUS_UPDATE;
            }
        }
        let bits = [
            (unit.mfc.list_stall != 0, LIST_STALL_NOTIFY),
            (unit.mfc.queue.free() > 0, COMMAND_QUEUE_AVAILABLE),
            (unit.mbox.inbound_count() > 0, IN_MBOX_AVAILABLE),
            (
                !unit.mbox.outbound_full(Outbound::Plain),
                OUT_MBOX_AVAILABLE,
            ),
            (
                !unit.mbox.outbound_full(Outbound::Interrupt),
                OUT_INTR_MBOX_AVAILABLE,
            ),
            (unit.signals.count(0) > 0, SIGNAL_NOTIFY_1),
            (unit.signals.count(1) > 0, SIGNAL_NOTIFY_2),
            (self.decrementer(tid) & 0x8000_0000 != 0, DECREMENTER),
        ];
        for (on, bit) in bits {
            if on {
                l |= bit;
            }
        }
        l
    }

    /// The value SPU thread `tid`'s decrementer reads now.
    pub(super) fn decrementer(&self, tid: ThreadId) -> u32 {
        let (value, at) = self.threads[tid].decrementer_state();
        let ticks = ((self.now - at) as f64 / self.timing.cycles_per_tick) as u64;
        value.wrapping_sub(ticks as u32)
    }

    /// The first cycle at which `tid`'s decrementer reads negative, if it is
    /// not negative now.
    fn decrementer_crossing(&self, tid: ThreadId) -> Option<Cycle> {
        let (value, at) = self.threads[tid].decrementer_state();
        if self.decrementer(tid) & 0x8000_0000 != 0 {
            return None;
        }
        let ticks = value as f64 + 1.0;
        let mut c = at + (ticks * self.timing.cycles_per_tick).ceil() as Cycle;
        // The read's rounding decides: step to the first cycle it reads negative.
        while (((c - at) as f64 / self.timing.cycles_per_tick) as u64) < value as u64 + 1 {
            c += 1;
        }
        Some(c.max(self.now + 1))
    }

    /// Records the edges of every armed SPU program and wakes those whose
    /// SPU_RdEventStat can now complete.
    /// Inlined so that the usual case, no SPU tracking events, costs one
    /// compare per time step instead of a call.
    #[inline(always)]
    pub(super) fn events_tick(&mut self) {
        if self.events.armed != 0 {
            self.events_tick_armed();
        }
    }

    fn events_tick_armed(&mut self) {
        let mut dec_wake: Option<Cycle> = None;
        for tid in 0..self.threads.len() {
            let th = &self.threads[tid];
            if !th.events.armed || th.is_finished() {
                continue;
            }
            let p = th.spe.expect("SPU thread").physical;
            let levels = self.event_levels(tid);
            let lost = if self.reservations.take_lost(p) {
                LLR_LOST
            } else {
                0
            };
            let e = &mut self.threads[tid].events;
            e.pending |= (levels & !e.levels) | lost;
            e.levels = levels;
            let waiting =
                self.threads[tid].wait == Some(Wait::Channel(Channel::ReadEventStatus, 0));
            if !waiting {
                continue;
            }
            if !self.try_wake(tid) && self.threads[tid].events.mask & DECREMENTER != 0 {
                if let Some(c) = self.decrementer_crossing(tid) {
                    dec_wake = Some(dec_wake.map_or(c, |w| w.min(c)));
                }
            }
        }
        self.events.dec_wake = dec_wake.unwrap_or(Cycle::MAX);
    }

    /// An SPU program ended: it no longer holds the fast-forward back.
    pub(super) fn events_exit(&mut self, tid: ThreadId) {
        let e = &mut self.threads[tid].events;
        if std::mem::take(&mut e.armed) {
            self.events.armed -= 1;
            if self.events.armed == 0 {
                self.events.dec_wake = Cycle::MAX;
            }
        }
    }

    /// Which libspe2 events hold now, for (logical SPE, libspe2 mask) pairs:
    /// the libspe2 bit of each event at bit `4 * spe` of the reply (the
    /// proxy tag-group event is not modelled).
    pub(super) fn ppe_events(&self, events: &[(u32, u32)]) -> u64 {
        let mut out = 0u64;
        for &(spe, wanted) in events {
            let Ok(p) = self.physical(spe) else { continue };
            let unit = &self.spes[p as usize];
            let stopped = unit.thread.is_some_and(|t| self.threads[t].is_finished());
            let bits = [
                (
                    SPE_EVENT_OUT_INTR_MBOX,
                    unit.mbox.outbound_available(Outbound::Interrupt),
                ),
                (SPE_EVENT_IN_MBOX, unit.mbox.inbound_space() > 0),
                (SPE_EVENT_SPE_STOPPED, stopped),
            ];
            for (bit, on) in bits {
                if wanted & bit != 0 && on {
                    out |= (bit as u64) << (4 * spe);
                }
            }
        }
        out
    }

    /// The PPE's `spe_event_wait`: the events of `PpeEventWait` that hold,
    /// after one MMIO access when some hold at once; blocks otherwise (or,
    /// not waiting, replies 0).
    pub(super) fn ppe_event_wait(&mut self, tid: ThreadId, req: Request) {
        let Request::PpeEventWait { wait, .. } = req else {
            unreachable!("not an event wait")
        };
        let now = self.now;
        let ready = self.ppe_events(&self.ppe_event_list(req));
        if ready != 0 || !wait {
            self.threads[tid].reply = ready;
            self.schedule(now + self.timing.mmio_access, Event::wake(tid));
            return;
        }
        self.threads[tid].block_on(Wait::PpeEvents(req), req, now);
    }

    /// The (logical SPE, libspe2 mask) pairs of an event wait.
    pub(super) fn ppe_event_list(&self, req: Request) -> Vec<(u32, u32)> {
        let Request::PpeEventWait { masks, .. } = req else {
            return Vec::new();
        };
        (0..16u32)
            .map(|spe| (spe, (masks >> (4 * spe)) as u32 & 0xF))
            .filter(|&(_, m)| m != 0)
            .collect()
    }
}
