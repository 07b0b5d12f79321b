//! The PPE's side: its loads and stores, the memory-mapped SPE registers it
//! uses (mailboxes, signals), proxy DMAs, and its lock-line reservations.
//!
//! Main memory is reached through the PPE's caches ([`crate::ppu`], glued in
//! `cores.rs`): a load waits for its data (L1 hit, L2 hit, or a line fetched
//! over the EIB), a store is posted into its thread's store queue, lwarx and
//! stwcx are performed at the L2. Local stores and problem-state registers
//! are not cacheable: each access is a 1- to 8-byte bus request from the
//! PPE's ramp through the command bus and the rings, like an SPE's DMA;
//! stores are posted (the thread goes on after its issue slot), loads wait
//! for their data. Problem-state registers answer `mfc.mmio_access_ns` after
//! the request reaches them.

use super::cores::POSTED_STORE;
use super::threads::{count_issue, outbound_reg, Pending, ThreadId, ThreadState, Wait};
use super::{Event, Machine};
use crate::bus::{BusOp, OpKind, Owner, Space};
use crate::error::{MfcErrorKind, SimError};
use crate::memory_map::{ps, Target};
use crate::ppu::Single;
use crate::program::Request;
use crate::topology::Ramp;

impl Machine {
    /// Handles a PPE thread's request.
    pub(super) fn submit_ppe(&mut self, tid: ThreadId, req: Request) -> Result<(), SimError> {
        let now = self.now;
        let access = POSTED_STORE;
        match req {
            Request::PpeLoad { ea, size } => {
                check_size(size)?;
                match self.map.resolve(ea, size as u64) {
                    Some(Target::Memory(off)) => {
                        self.ppu_single(tid, req, Single::Load, off, size);
                    }
                    _ => {
                        let (ramp, space) = self.ppe_target(ea, size)?;
                        self.threads[tid].wait = Some(Wait::Bus);
                        self.threads[tid].state = ThreadState::Blocked {
                            request: req,
                            since: now,
                        };
                        self.ppe_bus_op(tid, OpKind::Read, ramp, space, size, 0);
                    }
                }
            }
            Request::PpeStore { ea, size, value } => {
                check_size(size)?;
                match self.map.resolve(ea, size as u64) {
                    Some(Target::Memory(off)) => {
                        self.ppu_single(tid, req, Single::Store(value), off, size);
                    }
                    _ => {
                        let (ramp, space) = self.ppe_target(ea, size)?;
                        self.ppe_bus_op(tid, OpKind::Write, ramp, space, size, value);
                        self.schedule(now + access, Event::wake(tid));
                    }
                }
            }
            Request::PpeLwarx { ea, size } => {
                let off = self.ppe_memory(ea, size, "lwarx")?;
                self.ppu_single(tid, req, Single::Lwarx, off, size);
            }
            Request::PpeStwcx { ea, size, value } => {
                let off = self.ppe_memory(ea, size, "stwcx")?;
                self.ppu_single(tid, req, Single::Stwcx(value), off, size);
            }
            Request::PpeLoop(l) => self.ppe_loop(tid, l)?,
            Request::PpeReadMbox { spe, which, wait } => {
                let p = self.physical(spe)?;
                let mbox = &mut self.spes[p as usize].mbox;
                if wait && !mbox.outbound_available(which) {
                    self.threads[tid].wait = Some(Wait::OutMbox(p, which));
                    self.threads[tid].state = ThreadState::Blocked {
                        request: req,
                        since: now,
                    };
                } else {
                    if mbox.outbound_available(which) {
                        mbox.claim_outbound(which);
                    }
                    self.threads[tid].wait = Some(Wait::Bus);
                    self.threads[tid].state = ThreadState::Blocked {
                        request: req,
                        since: now,
                    };
                    self.ppe_mmio_read(tid, p, outbound_reg(which));
                }
            }
            Request::PpeWriteMbox { spe, value, wait } => {
                let p = self.physical(spe)?;
                if self.spes[p as usize].mbox.inbound_space() > 0 {
                    self.ppe_mmio_write(tid, p, ps::SPU_IN_MBOX, value);
                    self.threads[tid].reply = 1;
                    self.schedule(now + access, Event::wake(tid));
                } else if wait {
                    self.threads[tid].wait = Some(Wait::InMboxRoom(p, value));
                    self.threads[tid].state = ThreadState::Blocked {
                        request: req,
                        since: now,
                    };
                } else {
                    self.threads[tid].reply = 0;
                    self.schedule(now + access, Event::wake(tid));
                }
            }
            Request::PpeMboxStatus { spe } => {
                let p = self.physical(spe)?;
                self.threads[tid].wait = Some(Wait::Bus);
                self.threads[tid].state = ThreadState::Blocked {
                    request: req,
                    since: now,
                };
                self.ppe_mmio_read(tid, p, ps::SPU_MBOX_STAT);
            }
            Request::PpeEventWait { .. } => self.ppe_event_wait(tid, req),
            Request::PpeSignal { spe, which, value } => {
                let p = self.physical(spe)?;
                let reg = match which {
                    1 => ps::SIG_NOTIFY_1,
                    2 => ps::SIG_NOTIFY_2,
                    _ => {
                        return Err(SimError::Usage(format!(
                            "signal register {which} is not 1 or 2"
                        )))
                    }
                };
                self.ppe_mmio_write(tid, p, reg, value);
                self.schedule(now + access, Event::wake(tid));
            }
            Request::ProxyMfc { spe, cmd } => {
                let p = self.physical(spe)?;
                if cmd.op.is_list() || cmd.op.atomic().is_some() {
                    return Err(self.mfc_error(
                        tid,
                        MfcErrorKind::Opcode,
                        cmd.to_string(),
                        "only the SPU can issue list and atomic commands".into(),
                    ));
                }
                // Errors name the SPE whose queue the command was for.
                let (target, remote) = self.validate(tid, p, &cmd).map_err(|e| match e {
                    SimError::Mfc(mut m) => {
                        m.spe = Some(spe);
                        m.command = format!("proxy {}", m.command);
                        SimError::Mfc(m)
                    }
                    other => other,
                })?;
                self.counters.dma_commands += 1;
                let mfc = &mut self.spes[p as usize].mfc;
                count_issue(mfc, &cmd, true);
                self.threads[tid].pending = Some(Pending {
                    cmd,
                    target,
                    remote,
                    issued_at: now,
                    spe: p,
                    proxy: true,
                });
                if mfc.proxy.free() > 0 {
                    mfc.proxy.reserve();
                    self.schedule(now + self.timing.mmio_access, Event::enqueue(tid));
                } else {
                    self.threads[tid].wait = Some(Wait::ProxySlot(p));
                    self.threads[tid].state = ThreadState::Blocked {
                        request: req,
                        since: now,
                    };
                }
            }
            Request::ProxyTagStatus { spe, mask, mode } => {
                let p = self.physical(spe)?;
                self.threads[tid].wait = Some(Wait::ProxyTags(p, mask, mode));
                self.threads[tid].state = ThreadState::Blocked {
                    request: req,
                    since: now,
                };
                if self.try_wake(tid) {
                    // A status register read: one round trip to the MFC.
                    self.ready.pop_back();
                    self.schedule(now + 2 * self.timing.mmio_access, Event::wake(tid));
                }
            }
            _ => {
                return Err(SimError::Usage(format!(
                    "{} is an SPU call; a PPE program cannot make it",
                    req.describe(0)
                )))
            }
        }
        Ok(())
    }

    /// Where a non-cacheable PPE access goes (a local store or a register).
    fn ppe_target(&self, ea: u64, size: u8) -> Result<(Ramp, Space), SimError> {
        self.resolve(ea, size as u32).map_err(SimError::Usage)
    }

    fn ppe_memory(&self, ea: u64, size: u8, what: &str) -> Result<u64, SimError> {
        if !(size == 4 || size == 8) || !ea.is_multiple_of(size as u64) {
            return Err(SimError::Usage(format!(
                "{what} at 0x{ea:x}: 4 or 8 aligned bytes, not {size}"
            )));
        }
        match self.map.resolve(ea, size as u64) {
            Some(Target::Memory(off)) => Ok(off),
            _ => Err(SimError::Usage(format!(
                "{what} at 0x{ea:x}: reservations are on main memory only"
            ))),
        }
    }

    /// A PPE load of an SPE's problem-state register.
    pub(super) fn ppe_mmio_read(&mut self, tid: ThreadId, p: u8, reg: u32) {
        let ramp = self.topo.spe(p);
        self.ppe_bus_op(tid, OpKind::Read, ramp, Space::Ps { spe: p, reg }, 4, 0);
    }

    /// A PPE store to an SPE's problem-state register (posted).
    pub(super) fn ppe_mmio_write(&mut self, tid: ThreadId, p: u8, reg: u32, value: u32) {
        if reg == ps::SPU_IN_MBOX {
            self.spes[p as usize].mbox.inbound_in_flight += 1;
        }
        let ramp = self.topo.spe(p);
        self.ppe_bus_op(
            tid,
            OpKind::Write,
            ramp,
            Space::Ps { spe: p, reg },
            4,
            value as u64,
        );
    }

    pub(super) fn ppe_bus_op(
        &mut self,
        tid: ThreadId,
        kind: OpKind,
        target: Ramp,
        remote: Space,
        size: u8,
        value: u64,
    ) {
        let now = self.now;
        let th = &mut self.threads[tid];
        match kind {
            // A load after a store to the same place must see it: non-cacheable
            // accesses of a thread are performed in order.
            OpKind::Read if th.stores_in_flight > 0 => {
                th.deferred_load = Some((target, remote, size));
                return;
            }
            OpKind::Write => th.stores_in_flight += 1,
            OpKind::Read => {}
        }
        let ppe = self.topo.ppe(0);
        let op = BusOp::new(
            Owner::Ppe { thread: tid as u32 },
            kind,
            (ppe, target),
            size as u32,
            remote,
            now,
        );
        let id = self.new_op(op);
        if kind == OpKind::Write {
            let bytes = value.to_be_bytes();
            self.staging[id as usize][..size as usize].copy_from_slice(&bytes[8 - size as usize..]);
        }
        self.chips[0].bius[ppe.local().idx()].push(id, false);
        self.wake_command_bus(0, now);
    }
}

fn check_size(size: u8) -> Result<(), SimError> {
    match size {
        1 | 2 | 4 | 8 => Ok(()),
        _ => Err(SimError::Usage(format!(
            "a PPE load or store moves 1, 2, 4 or 8 bytes, not {size}"
        ))),
    }
}
