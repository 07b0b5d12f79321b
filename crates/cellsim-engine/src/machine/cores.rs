//! The cores' own accesses: the PPU's loads and stores through its caches
//! ([`crate::ppu`]) and SPU loops over their local stores
//! ([`crate::ls_loop`]).
//!
//! Both are simulated access by access, ahead of the event calendar up to its
//! next event (nothing else on the chip can change what they see in
//! between), in a phase of each cycle after the calendar, the command bus
//! and the data arbiter. When programs are about to run in the cycle, only
//! the cycle itself is simulated: what they do comes first.
//!
//! The PPE's hardware thread of a PPE program: PPE programs alternate between
//! the PPU's two threads in the order they started; a loop on two threads
//! uses both. Each thread performs its jobs in order.

use super::threads::{ThreadId, ThreadState, Wait};
use super::{Event, Machine};
use crate::bus::{BusOp, OpKind, Owner, Space};
use crate::error::SimError;
use crate::ls_loop::{LsLoop, LsProgress, PortShare};
use crate::memory_map::Target;
use crate::ppu::{BusReq, Env, LoopOp, Single, StepResult, HW_THREADS};
use crate::program::{LsAccessLoop, PpeLoop, Request};
use crate::time::{later, overflow_message, Cycle};

/// Cycles a posted non-cacheable store (to a local store or a register)
/// keeps the PPE thread: its issue slot in the load/store unit.
pub(super) const POSTED_STORE: Cycle = 1;

impl Machine {
    /// The PPU hardware thread PPE program `tid` runs on.
    pub(super) fn ppe_hw(&self, tid: ThreadId) -> usize {
        self.threads[..tid]
            .iter()
            .filter(|t| t.spe.is_none())
            .count()
            % HW_THREADS
    }

    /// A PPE program waits for its job in a core.
    fn block_on_core(&mut self, tid: ThreadId, req: Request) {
        let now = self.now;
        let th = &mut self.threads[tid];
        th.wait = Some(Wait::Core);
        th.state = ThreadState::Blocked {
            request: req,
            since: now,
        };
        self.wake_cores(now);
    }

    /// Makes sure the cores' phase runs at `t` (or earlier).
    pub(super) fn wake_cores(&mut self, t: Cycle) {
        self.core_wake = self.core_wake.min(t);
    }

    /// A cacheable single access of PPE program `tid` to main-memory offset `off`.
    pub(super) fn ppu_single(
        &mut self,
        tid: ThreadId,
        req: Request,
        what: Single,
        off: u64,
        size: u8,
    ) {
        let hw = self.ppe_hw(tid);
        self.ppu.submit_single(hw, tid, what, off, size, self.now);
        self.block_on_core(tid, req);
    }

    /// `access_loop`: checks the loop and hands it to the PPU.
    pub(super) fn ppe_loop(&mut self, tid: ThreadId, l: PpeLoop) -> Result<(), SimError> {
        let bad = |msg: String| Err(SimError::Usage(format!("access_loop: {msg}")));
        if !(1..=2).contains(&l.threads) {
            return bad(format!(
                "threads={} is not 1 or 2: the PPU has two hardware threads",
                l.threads
            ));
        }
        if let Err(msg) = check_elements(l.elem, l.bytes, " (a VMX register)") {
            return bad(msg);
        }
        let stride = if l.stride == 0 {
            l.elem as u64
        } else {
            l.stride
        };
        if stride < l.elem as u64 {
            return bad(format!(
                "stride {stride} B is smaller than the {} B element",
                l.elem
            ));
        }
        let count = l.bytes / l.elem as u64;
        let extent = (count - 1) * stride + l.elem as u64;
        let mut bufs = vec![("buffer", l.ea)];
        if l.op == LoopOp::Copy {
            bufs.push(("destination", l.dst));
        }
        let mut offs = [0u64; 2];
        for (i, (what, ea)) in bufs.into_iter().enumerate() {
            if l.elem == 16 && (!ea.is_multiple_of(16) || !stride.is_multiple_of(16)) {
                let first = if ea.is_multiple_of(16) {
                    ea + stride
                } else {
                    ea
                };
                return bad(format!(
                    "16-byte (VMX) access at 0x{first:x} of the {what} is not 16-byte aligned: lvx/stvx \
                     ignore the low four address bits and would access 0x{:x} instead; align the {what} \
                     and the stride to 16 bytes",
                    first & !15
                ));
            }
            match self.map.resolve(ea, extent) {
                Some(Target::Memory(off)) => offs[i] = off,
                Some(_) => {
                    return bad(format!(
                    "the {what} at 0x{ea:x} is a local store or register area: the PPE's caches \
                         hold main memory only (use load/store for single accesses there)"
                ))
                }
                None => {
                    return bad(format!(
                        "the {what} 0x{ea:x}..0x{:x} is outside main memory (0..0x{:x})",
                        ea.saturating_add(extent),
                        self.map.memory_bytes
                    ))
                }
            }
        }
        let hw = (l.threads == 1).then(|| self.ppe_hw(tid));
        let (src, dst) = match l.op {
            LoopOp::Load => (offs[0], 0),
            LoopOp::Store => (0, offs[0]),
            LoopOp::Copy => (offs[0], offs[1]),
        };
        let now = self.now;
        self.ppu.submit_loop(
            hw,
            tid,
            l.op,
            src,
            dst,
            count,
            l.elem,
            stride,
            l.dependent,
            l.fill,
            now,
        );
        self.block_on_core(tid, Request::PpeLoop(l));
        Ok(())
    }

    /// `ls_access_loop`: checks the loop and starts it on the SPU of `tid`.
    pub(super) fn ls_loop(&mut self, tid: ThreadId, l: LsAccessLoop) -> Result<(), SimError> {
        let p = self.threads[tid].spe.expect("an SPU thread").physical;
        let bad = |msg: String| Err(SimError::Usage(format!("ls_access_loop: {msg}")));
        if let Err(msg) = check_elements(l.elem, l.bytes as u64, "") {
            return bad(msg);
        }
        let ls_bytes = self.timing.ls_bytes;
        let mut bufs = vec![("buffer", l.lsa)];
        if l.op == LoopOp::Copy {
            bufs.push(("destination", l.dst));
        }
        for (what, a) in bufs {
            if a as u64 + l.bytes as u64 > ls_bytes as u64 {
                return bad(format!(
                    "the {what} 0x{a:x}..0x{:x} passes the end of the {} KB local store",
                    a as u64 + l.bytes as u64,
                    ls_bytes / 1024
                ));
            }
            if !a.is_multiple_of(l.elem as u32) {
                return bad(format!(
                    "the {what} at 0x{a:x} is not aligned to its {} B elements (the SPU's quadword \
                     loads and stores ignore the low four address bits)",
                    l.elem
                ));
            }
        }
        let now = self.now;
        self.ls_loops.push(LsLoop::new(
            tid, p, l.op, l.lsa, l.dst, l.bytes, l.elem, l.fill, now,
        ));
        self.spes[p as usize]
            .ls_log
            .get_or_insert_with(Default::default);
        self.block_on_core(tid, Request::LsLoop(l));
        Ok(())
    }

    /// `compute(cycles)` with `accesses` local-store accesses on the SPU of
    /// `tid`: it ends when its cycles and the port cycles DMA took from it
    /// are over ([`Machine::port_share_ends`]).
    pub(super) fn compute_sharing_port(
        &mut self,
        tid: ThreadId,
        cycles: Cycle,
        accesses: u64,
    ) -> Result<(), SimError> {
        let now = self.now;
        let end = later(now, cycles)
            .ok_or_else(|| SimError::Usage(overflow_message(&format!("compute({cycles})"), now)))?;
        let p = self.threads[tid].spe.expect("an SPU thread").physical;
        self.threads[tid].ls_compute = Some(PortShare::new(p, cycles, accesses, now));
        self.ls_computes += 1;
        self.spes[p as usize]
            .ls_log
            .get_or_insert_with(Default::default);
        if self.trace.is_some() {
            let track = self.thread_track(tid);
            self.record(track, now, end, || "compute".into());
        }
        self.schedule(end, Event::wake(tid));
        Ok(())
    }

    /// The wake-up of `tid` is due: if it computes sharing the local-store
    /// port, the cycles DMA held the port since the last charge delay it
    /// (true: it goes on computing), else it runs.
    pub(super) fn port_share_ends(&mut self, tid: ThreadId) -> bool {
        let Some(mut share) = self.threads[tid].ls_compute else {
            return true;
        };
        let now = self.now;
        let p = share.spe as usize;
        let loops_here = self.ls_loops.iter().any(|l| l.spe == share.spe);
        let log = self.spes[p].ls_log.get_or_insert_with(Default::default);
        let busy = log.iter().filter(|&&b| b >= share.from && b < now).count() as u64;
        if !loops_here {
            while log.front().is_some_and(|&b| b < now) {
                log.pop_front();
            }
        }
        let stall = share.stall(busy);
        if stall > 0 {
            share.from = now;
            self.threads[tid].ls_compute = Some(share);
            self.schedule(now + stall, Event::wake(tid));
            return false;
        }
        self.threads[tid].ls_compute = None;
        self.ls_computes -= 1;
        if !loops_here {
            self.spes[p].ls_log = None;
        }
        true
    }

    /// A DMA bus request reads or writes the local store of SPE `p` now.
    #[inline(always)]
    pub(super) fn ls_touch(&mut self, p: u8) {
        if self.ls_loops.is_empty() && self.ls_computes == 0 {
            return; // the common case: no SPU loop or port-sharing compute is running
        }
        if let Some(log) = self.spes[p as usize].ls_log.as_mut() {
            let mut c = self.now;
            for _ in 0..self.ls_params.dma_cycles {
                c = c.max(log.back().map_or(0, |&b| b + 1));
                log.push_back(c);
            }
        }
    }

    /// The next event other than the cores' own, bounded by the time limit;
    /// just this cycle when programs are about to run.
    fn horizon(&self) -> Cycle {
        if !self.ready.is_empty() {
            return self.now + 1;
        }
        let mut t = self.time_limit.saturating_add(1);
        let chips = self.chips.iter().flat_map(|c| [c.cb_wake, c.arb_wake]);
        for w in std::iter::once(self.calendar.next_time())
            .chain(chips)
            .flatten()
        {
            t = t.min(w);
        }
        t
    }

    /// The cores' phase: PPU accesses and SPU local-store loops up to the
    /// next event.
    pub(super) fn run_cores(&mut self) {
        // A local-store loop that ends lets its program run, which may change
        // what the others see: nothing goes past the first end.
        let mut limit = Cycle::MAX;
        let params = self.ls_params;
        let horizon = self.horizon();
        for i in 0..self.ls_loops.len() {
            let mut l = self.ls_loops[i];
            let unit = &mut self.spes[l.spe as usize];
            let log = unit.ls_log.get_or_insert_with(Default::default);
            if let LsProgress::Done(f) = l.run(&params, &unit.ls, log, horizon, true) {
                limit = limit.min(f + 1);
            }
        }
        let mut ppu_next = None;
        loop {
            let horizon = self.horizon().min(limit);
            let Machine {
                ppu,
                memory,
                reservations,
                now,
                ..
            } = self;
            let mut env = Env {
                memory,
                reservations,
            };
            match ppu.step(&mut env, *now, horizon) {
                StepResult::Idle => break,
                StepResult::At(t) => {
                    ppu_next = Some(t);
                    break;
                }
                StepResult::Acted(t) => {
                    if t > self.now {
                        self.now = t;
                        self.calendar.advance_to(t);
                    }
                    let reqs: Vec<BusReq> = self.ppu.take_bus().collect();
                    for r in reqs {
                        self.ppu_bus(r);
                    }
                    let done: Vec<_> = self.ppu.take_done().collect();
                    for d in done {
                        self.core_job_done(d.owner, d.reply, d.at);
                    }
                }
            }
        }
        let horizon = self.horizon().min(limit);
        let mut next = ppu_next;
        let mut i = 0;
        while i < self.ls_loops.len() {
            let mut l = self.ls_loops[i];
            let unit = &mut self.spes[l.spe as usize];
            let log = unit.ls_log.get_or_insert_with(Default::default);
            match l.run(&params, &unit.ls, log, horizon, false) {
                LsProgress::Done(f) => {
                    self.ls_loops.swap_remove(i);
                    if !self.ls_loops.iter().any(|o| o.spe == l.spe) {
                        self.spes[l.spe as usize].ls_log = None;
                    }
                    self.core_job_done(l.owner, f - l.start(), f);
                }
                LsProgress::Running => {
                    self.ls_loops[i] = l;
                    next = Some(next.map_or(horizon, |n: Cycle| n.min(horizon)));
                    i += 1;
                }
            }
        }
        self.core_wake = next.unwrap_or(Cycle::MAX);
    }

    /// A core finished the job program `tid` waited for: it goes on at `at`.
    fn core_job_done(&mut self, tid: ThreadId, reply: u64, at: Cycle) {
        if let (true, ThreadState::Blocked { request, since }) =
            (self.trace.is_some(), self.threads[tid].state)
        {
            let track = self.thread_track(tid);
            self.record(track, since, at, || request.describe(0));
        }
        let th = &mut self.threads[tid];
        th.reply = reply;
        th.wait = None;
        th.state = ThreadState::Active;
        self.schedule(at, Event::wake(tid));
    }

    /// A line fetch or castout of the L2 becomes a bus request from the
    /// PPE's ramp (chip 0's: PPE programs run there) to the memory of the line.
    fn ppu_bus(&mut self, r: BusReq) {
        let ppe = self.topo.ppe(0);
        let op = BusOp::new(
            Owner::PpeCache { id: r.id },
            if r.write { OpKind::Write } else { OpKind::Read },
            (ppe, self.topo.mic(self.bank(r.addr))),
            crate::ppu::cache::LINE as u32,
            Space::Memory(r.addr),
            self.now,
        );
        let id = self.new_op(op);
        self.chips[0].bius[ppe.local().idx()].push(id, false);
        self.wake_command_bus(0, self.now);
    }

    /// A bus request of the L2 completed.
    #[inline(never)] // rare in the step loop (see `Machine::ppe_request_done`)
    pub(super) fn ppu_bus_done(&mut self, id: u32) {
        self.ppu.bus_done(id, self.now);
        self.wake_cores(self.now);
    }

    /// Counters of the PPE's caches.
    pub fn ppe_cache_stats(&self) -> &crate::ppu::PpuStats {
        &self.ppu.stats
    }

    /// Whether the PPE's L1 and L2 hold the line of main-memory offset `addr`.
    pub fn ppe_cache_holds(&self, addr: u64) -> (bool, bool) {
        self.ppu.holds(addr)
    }
}

/// The elements of a loop of accesses, a PPE loop's and an SPU loop's alike:
/// 1, 2, 4, 8 or 16 bytes each (`widest` says what holds 16), a whole number
/// of them, at least one. The error is the loop's usage message.
fn check_elements(elem: u8, bytes: u64, widest: &str) -> Result<(), String> {
    if ![1, 2, 4, 8, 16].contains(&elem) {
        return Err(format!(
            "element size {elem} B is not 1, 2, 4, 8 or 16{widest}"
        ));
    }
    if bytes == 0 {
        return Err("a zero-length loop (bytes=0): give at least one element".into());
    }
    if !bytes.is_multiple_of(elem as u64) {
        return Err(format!(
            "bytes={bytes} is not a multiple of the {elem} B element"
        ));
    }
    Ok(())
}
