//! The routing of the DMAC's events: each hands its MFC (`mfc::dmac`, the
//! handlers) a narrow context and does what the MFC hands back — a bus
//! request stored and queued at its BIU, a list element read from the local
//! store and resolved, a program told, a retired command recorded.

use super::threads::ThreadId;
use super::{DmaLatency, Machine};
use crate::error::{MfcError, MfcErrorKind, SimError};
use crate::mfc::dmac::{Dmac, Unroll, Unrolled};
use crate::mfc::list::ListElement;
use crate::mfc::Mfc;
use crate::trace::Track;

impl Machine {
    /// SPE `p`'s MFC and the context its DMAC's handlers take.
    #[inline(always)]
    pub(crate) fn dmac_of(&mut self, p: u8) -> (&mut Mfc, Dmac<'_>) {
        let Machine {
            spes,
            calendar,
            timing,
            now,
            ..
        } = self;
        let cx = Dmac {
            now: *now,
            spe: p,
            calendar,
            timing,
        };
        (&mut spes[p as usize].mfc, cx)
    }

    /// Thread `tid`'s issued command enters its SPE's command queue.
    pub(crate) fn enqueue(&mut self, tid: ThreadId) {
        let pend = self.threads[tid]
            .pending
            .take()
            .expect("an issued command is pending");
        self.ready.push_back(tid);
        let (mfc, mut cx) = self.dmac_of(pend.spe);
        mfc.enqueue(
            &mut cx,
            pend.cmd,
            pend.target,
            pend.remote,
            pend.issued_at,
            pend.proxy,
        );
    }

    /// Schedules the DMAC of SPE `p` at the first bus edge at or after `t`,
    /// unless it is already due earlier.
    #[inline]
    pub(crate) fn wake_dmac(&mut self, p: u8, t: crate::time::Cycle) {
        let (mfc, mut cx) = self.dmac_of(p);
        mfc.wake(&mut cx, t);
    }

    /// The DMAC of SPE `p` creates at most one bus request (or fetches one
    /// list element): its request goes into its BIU's queue, and the chip's
    /// command bus looks for it.
    pub(crate) fn dmac(&mut self, p: u8) {
        let now = self.now;
        let Machine {
            spes,
            chips,
            calendar,
            timing,
            numa,
            topo,
            ..
        } = self;
        let unit = &mut spes[p as usize];
        let ramp = unit.ramp;
        let (chip, port) = (ramp.chip(), ramp.local().idx());
        let mut cx = Dmac {
            now,
            spe: p,
            calendar,
            timing,
        };
        let bus = Unroll {
            ramp,
            biu: &chips[chip].bius[port],
            numa,
            topo,
        };
        match unit.mfc.unroll(&mut cx, bus) {
            Unrolled::Idle => {}
            Unrolled::Element(slot) => self.fetch_list_element(p, slot),
            Unrolled::Request(op) => {
                let is_get = op.kind == crate::bus::OpKind::Read;
                let id = self.new_op(op);
                let biu = &mut self.chips[chip].bius[port];
                biu.push(id, !is_get && biu.puts_need_lines());
                let biu_full = !biu.has_room();
                self.wake_command_bus(chip, now);
                let (mfc, mut cx) = self.dmac_of(p);
                mfc.handed_over(&mut cx, biu_full);
            }
        }
    }

    /// Fetches the next element of a DMA list from the local store and checks
    /// it, as the hardware does: the program may have rewritten it since the
    /// list was issued. A bad element ends the run with the error it would
    /// have raised at issue.
    fn fetch_list_element(&mut self, p: u8, slot: u8) {
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
        let (mfc, mut cx) = self.dmac_of(p);
        let (at, notify) = mfc.element_fetched(&mut cx, slot, elem, ea, target, remote);
        if notify {
            self.check_spu_waiter(p);
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

    /// `mfc_write_list_stall_ack(tag)`: the stalled lists of `tag` go on.
    pub(crate) fn list_stall_ack(&mut self, p: u8, tag: u32) {
        let (mfc, mut cx) = self.dmac_of(p);
        mfc.list_stall_ack(&mut cx, tag);
    }

    /// A command retires: recorded (latencies, trace), then the program or
    /// the PPE's threads waiting on its tag group are told.
    pub(crate) fn retire(&mut self, p: u8, slot: u8, proxy: bool) {
        let e = self.spes[p as usize].mfc.retire(slot, proxy);
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
        if proxy {
            self.wake_blocked();
        } else {
            self.check_spu_waiter(p);
        }
        let (mfc, mut cx) = self.dmac_of(p);
        mfc.retired(&mut cx);
    }
}
