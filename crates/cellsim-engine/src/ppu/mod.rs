//! The PPE's memory hierarchy: the PPU's two hardware threads issuing loads
//! and stores through a 32 KB L1 data cache and a 512 KB L2 to the EIB.
//!
//! ```text
//!  thread 0 ─┐                ┌── L1 (32 KB, write-through) ◀─ read bus 16 B/cycle ─┐
//!            ├─ load/store ───┤    load-miss queue per thread                          L2 (512 KB, write-back)
//!  thread 1 ─┘  unit, 16 B/c  └── store queue per thread ──── write bus 16 B/cycle ──▶ │  miss machines, castouts,
//!                                                                                      │  prefetch ──▶ EIB ──▶ MIC / IOIF
//! ```
//!
//! Everything here decides *when* an access completes; *what* it reads or
//! writes is main memory itself, accessed when the access issues (the caches
//! are coherent, so a load always sees the latest store). The mechanisms are
//! the ones Jiménez-González et al. 2007 names as the PPE's limits:
//!
//! - **one load/store unit**, 16 bytes wide, shared by both threads: a scalar
//!   access (1-8 bytes) occupies it one cycle, a VMX (16-byte) access
//!   `vmx_access` cycles;
//! - **L1 hits** are ready `l1_hit` cycles after issue; only a load whose
//!   value is needed at once (a single access from a program, a copy's store)
//!   waits for it;
//! - **a bounded number of outstanding L1 misses per thread**: each load that
//!   misses the L1 — also one to a line already on its way — takes an entry
//!   of its thread's load-miss queue until the line arrives; a thread with
//!   none free stops issuing (in order). An L1 miss that hits the L2 brings
//!   the line after `l2_hit` cycles over the 16 B/cycle read bus;
//! - **store queues**: the L1 writes through (no allocation on a store miss);
//!   every store takes an entry of its thread's store queue, crosses the
//!   write bus (one store per cycle) and holds the entry until the L2 has
//!   performed it, `l2_store` cycles for an L2 hit, or until its line has
//!   been fetched from memory for an L2 miss;
//! - **the L2** allocates on loads and stores (a store miss fetches the
//!   line), holds at most `miss_machines` line fetches in flight, and casts
//!   dirty victims out to memory through `castouts` queue entries; the L1 is
//!   inclusive in it. A stream of load misses makes it prefetch the next
//!   `prefetch` lines. Line fetches and castouts are 128-byte bus requests
//!   from the PPE's ramp to the memory bank of the line (the MIC, or the
//!   IOIF on a two-bank machine), competing with the SPEs on the command
//!   bus, the rings and the memory.
//! - **coherence**: a write by an SPE to a line the L2 holds invalidates it
//!   (and the L1 copy); a PPE store kills the lock-line reservations on its
//!   line (see [`crate::atomic`]).
//!
//! Work arrives as [`Job`]s (one access, or a loop of accesses on one
//! hardware thread) and is simulated access by access by [`Ppu::step`].

pub mod cache;

use crate::atomic::{Holder, Reservations};
use crate::storage::Storage;
use crate::time::Cycle;
use cache::{Cache, Lookup, LINE};
use std::collections::VecDeque;

/// Hardware threads of the PPU.
pub const HW_THREADS: usize = 2;
/// Most elements a copy loop may load before storing them.
pub const MAX_UNROLL: usize = 16;

/// The PPU's parameters, in core cycles (from the `[ppe]` section of a machine file).
#[derive(Debug, Clone, Copy)]
pub struct PpuParams {
    /// L1 data cache bytes.
    pub l1_bytes: u64,
    /// L1 ways.
    pub l1_ways: usize,
    /// L2 bytes.
    pub l2_bytes: u64,
    /// L2 ways.
    pub l2_ways: usize,
    /// Load-to-use latency of an L1 hit.
    pub l1_hit: Cycle,
    /// Load/store-unit occupancy of a 16-byte (VMX) access (a scalar one: 1).
    pub vmx_access: Cycle,
    /// Load-miss queue entries per thread.
    pub load_miss_entries: usize,
    /// An L1 miss that hits the L2: from the load to the line in the L1.
    pub l2_hit: Cycle,
    /// Cycles a 128-byte line occupies the L2-to-L1 read bus.
    pub line_transfer: Cycle,
    /// Store-queue entries per thread (L1 to L2).
    pub store_queue_entries: usize,
    /// A store that hits the L2 holds its entry this long after crossing the write bus.
    pub l2_store: Cycle,
    /// L2 line fetches in flight.
    pub miss_machines: usize,
    /// Dirty lines on their way to memory.
    pub castouts: usize,
    /// Lines the L2 prefetches ahead of a load-miss stream.
    pub prefetch: u64,
    /// Elements a copy loop loads before storing them.
    pub copy_unroll: usize,
    /// Main memory size (prefetches stop at its end).
    pub memory_bytes: u64,
}

/// What a loop does to each element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopOp {
    /// Load every element.
    Load,
    /// Store a fill byte into every element.
    Store,
    /// Load each element of the source and store it into the destination.
    Copy,
}

impl LoopOp {
    /// `load`, `store`, `copy`.
    pub fn name(self) -> &'static str {
        match self {
            LoopOp::Load => "load",
            LoopOp::Store => "store",
            LoopOp::Copy => "copy",
        }
    }
}

/// A single access of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Single {
    /// A load whose value the program uses at once (it waits for the data).
    Load,
    /// A store of this value (posted: the program goes on after issuing it).
    Store(u64),
    /// `lwarx`: load and reserve, performed at the L2.
    Lwarx,
    /// `stwcx.`: store if the reservation holds; waits for the L2's answer.
    Stwcx(u64),
}

/// One job of a hardware thread.
#[derive(Debug, Clone)]
pub struct Job {
    /// The program (engine thread) waiting for it.
    pub owner: usize,
    /// Jobs of one loop split over both hardware threads share a group.
    pub group: u64,
    /// Cycle it was submitted.
    pub submitted: Cycle,
    kind: JobKind,
    /// Set when its last access issued.
    issued_all: bool,
    reply: u64,
}

#[derive(Debug, Clone)]
enum JobKind {
    Single { what: Single, addr: u64, size: u8 },
    Loop(Box<LoopPart>),
}

#[derive(Debug, Clone, Copy)]
struct LoopPart {
    op: LoopOp,
    src: u64,
    dst: u64,
    count: u64,
    elem: u8,
    stride: u64,
    dependent: bool,
    fill: u8,
    /// First element of the current group (copy) or the next element.
    next: u64,
    /// Copy: position in the group, loads first, then stores.
    gi: usize,
    storing: bool,
    data: [DataRef; MAX_UNROLL],
}

/// When a load's data is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataRef {
    At(Cycle),
    /// When the L1 reload with this sequence number arrives.
    Reload(u64),
    /// When the store with this sequence number has been performed in the L2.
    Store(u64),
}

#[derive(Debug, Clone, Copy)]
struct Reload {
    seq: u64,
    line: u64,
    /// When the L1 asked the L2 for it.
    asked: Cycle,
    /// Arrival in the L1, once known.
    at: Option<Cycle>,
    /// The L2 line fetch it waits for.
    miss: Option<usize>,
    /// Put the line into the L1 on arrival (not for lwarx, nor after a snoop).
    install: bool,
}

#[derive(Debug, Clone, Copy)]
struct StqEntry {
    seq: u64,
    line: u64,
    /// When the L2 has performed the store, once known.
    free_at: Option<Cycle>,
}

#[derive(Debug, Clone, Copy)]
struct Miss {
    line: u64,
    way: usize,
    /// An SPE wrote the line meanwhile: do not install it.
    invalidated: bool,
}

#[derive(Debug, Default)]
struct Hw {
    jobs: VecDeque<Job>,
    ready_at: Cycle,
    wait: Option<DataRef>,
    lmq: Vec<u64>,
    stq: Vec<StqEntry>,
}

/// A bus request the L2 asks the chip to carry (128 bytes of main memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusReq {
    /// Identifies it in [`Ppu::bus_done`].
    pub id: u32,
    /// A castout (write) rather than a line fetch (read).
    pub write: bool,
    /// Byte address of the line in main memory.
    pub addr: u64,
}

/// Bus-request id of every castout (fetches use their miss machine's index).
pub const CASTOUT: u32 = u32::MAX;

/// A job (or a group of them) is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// The waiting program.
    pub owner: usize,
    /// Its reply: a load's value, a stwcx's success, a loop's elapsed cycles.
    pub reply: u64,
    /// When the program goes on.
    pub at: Cycle,
}

/// Counters of the PPE's caches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PpuStats {
    /// Loads issued (lwarx included).
    pub loads: u64,
    /// Stores issued (stwcx included).
    pub stores: u64,
    /// Loads that hit the L1.
    pub l1_hits: u64,
    /// Loads that missed the L1 (one to a line already on its way included).
    pub l1_misses: u64,
    /// L1 reloads (lines requested from the L2).
    pub reloads: u64,
    /// Demand line fetches from memory (load and store misses of the L2).
    pub l2_misses: u64,
    /// Prefetched line fetches.
    pub prefetches: u64,
    /// Dirty lines written back to memory.
    pub castouts: u64,
    /// Lines an SPE's write took from the L2.
    pub snoop_invalidations: u64,
}

/// What [`Ppu::step`] stopped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepResult {
    /// Nothing to do until a bus request completes or a job arrives.
    Idle,
    /// The next access (or job end) is at this cycle, at or after the horizon.
    At(Cycle),
    /// Something happened at this cycle that the machine must act on (bus
    /// requests in [`Ppu::take_bus`], finished jobs in [`Ppu::take_done`]).
    Acted(Cycle),
}

/// Memory and reservations, which accesses read and write when they issue.
pub struct Env<'a> {
    /// Main memory.
    pub memory: &'a Storage,
    /// Lock-line reservations.
    pub reservations: &'a mut Reservations,
}

/// The PPU and its caches.
#[derive(Debug)]
pub struct Ppu {
    p: PpuParams,
    hw: [Hw; HW_THREADS],
    lsu_free: Cycle,
    last_hw: usize,
    l1: Cache,
    l2: Cache,
    reloads: Vec<Reload>,
    seq: u64,
    read_bus_free: Cycle,
    write_bus_free: Cycle,
    misses: Vec<Option<Miss>>,
    castouts_in_flight: usize,
    groups: Vec<(u64, u32, Cycle, u64)>,
    next_group: u64,
    bus_out: Vec<BusReq>,
    done_out: Vec<Done>,
    /// Counters.
    pub stats: PpuStats,
}

/// One access to issue.
#[derive(Debug, Clone, Copy)]
struct Access {
    store: bool,
    addr: u64,
    size: u8,
    /// The value must be there before it issues (a copy's store).
    after: Option<DataRef>,
    /// Served by the L2 whatever the L1 holds (lwarx).
    bypass_l1: bool,
}

impl Ppu {
    /// An idle PPU with empty caches.
    pub fn new(p: PpuParams) -> Ppu {
        Ppu {
            l1: Cache::new(p.l1_bytes, p.l1_ways),
            l2: Cache::new(p.l2_bytes, p.l2_ways),
            misses: vec![None; p.miss_machines],
            p,
            hw: Default::default(),
            lsu_free: 0,
            last_hw: HW_THREADS - 1,
            reloads: Vec::new(),
            seq: 0,
            read_bus_free: 0,
            write_bus_free: 0,
            castouts_in_flight: 0,
            groups: Vec::new(),
            next_group: 0,
            bus_out: Vec::new(),
            done_out: Vec::new(),
            stats: PpuStats::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &PpuParams {
        &self.p
    }

    /// Whether nothing is queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.hw.iter().all(|h| h.jobs.is_empty())
    }

    /// Queues a single access of program `owner` on hardware thread `hw`.
    pub fn submit_single(
        &mut self,
        hw: usize,
        owner: usize,
        what: Single,
        addr: u64,
        size: u8,
        now: Cycle,
    ) {
        let group = self.new_group(1);
        self.hw[hw].jobs.push_back(Job {
            owner,
            group,
            submitted: now,
            kind: JobKind::Single { what, addr, size },
            issued_all: false,
            reply: 0,
        });
    }

    /// Queues a loop of `bytes / elem` accesses of program `owner`: on
    /// hardware thread `hw`, or split in two halves over both threads.
    /// Addresses are main-memory offsets; the caller checked them.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_loop(
        &mut self,
        hw: Option<usize>,
        owner: usize,
        op: LoopOp,
        src: u64,
        dst: u64,
        count: u64,
        elem: u8,
        stride: u64,
        dependent: bool,
        fill: u8,
        now: Cycle,
    ) {
        let parts: Vec<(usize, u64, u64)> = match hw {
            Some(h) => vec![(h, 0, count)],
            None => {
                let half = count.div_ceil(2);
                vec![(0, 0, half), (1, half, count - half)]
                    .into_iter()
                    .filter(|p| p.2 > 0)
                    .collect()
            }
        };
        let group = self.new_group(parts.len() as u32);
        for (h, first, n) in parts {
            let part = LoopPart {
                op,
                src: src + first * stride,
                dst: dst + first * stride,
                count: n,
                elem,
                stride,
                dependent,
                fill,
                next: 0,
                gi: 0,
                storing: false,
                data: [DataRef::At(0); MAX_UNROLL],
            };
            self.hw[h].jobs.push_back(Job {
                owner,
                group,
                submitted: now,
                kind: JobKind::Loop(Box::new(part)),
                issued_all: false,
                reply: 0,
            });
        }
    }

    fn new_group(&mut self, parts: u32) -> u64 {
        self.next_group += 1;
        // (group, parts left, latest end, reply)
        self.groups.push((self.next_group, parts, 0, 0));
        self.next_group
    }

    /// Bus requests to start (in order).
    pub fn take_bus(&mut self) -> std::vec::Drain<'_, BusReq> {
        self.bus_out.drain(..)
    }

    /// Jobs that finished.
    pub fn take_done(&mut self) -> std::vec::Drain<'_, Done> {
        self.done_out.drain(..)
    }

    /// Simulates accesses from `now` up to (not including) `horizon`,
    /// stopping after any that needs the machine's attention.
    pub fn step(&mut self, env: &mut Env<'_>, now: Cycle, horizon: Cycle) -> StepResult {
        loop {
            let mut best: Option<(Cycle, usize)> = None;
            for k in 1..=HW_THREADS {
                let h = (self.last_hw + k) % HW_THREADS;
                if let Some(t) = self.next_time(h, now) {
                    if best.is_none_or(|(bt, _)| t < bt) {
                        best = Some((t, h));
                    }
                }
            }
            let Some((t, h)) = best else {
                return StepResult::Idle;
            };
            if t >= horizon {
                return StepResult::At(t);
            }
            self.settle(t);
            if self.act(env, h, t) {
                return StepResult::Acted(t);
            }
        }
    }

    /// When thread `h` next issues an access or finishes its job (`None`:
    /// not before a bus request completes, or no job).
    fn next_time(&self, h: usize, now: Cycle) -> Option<Cycle> {
        let hw = &self.hw[h];
        let job = hw.jobs.front()?;
        let mut t = now.max(hw.ready_at);
        if let Some(w) = hw.wait {
            t = t.max(self.resolve(w)?);
        }
        if job.issued_all {
            // The job ends when its loads have their data.
            for &s in &hw.lmq {
                t = t.max(self.reload_at(s)?);
            }
            return Some(t);
        }
        let a = self.next_access(h)?;
        t = t.max(self.lsu_free);
        if let Some(d) = a.after {
            t = t.max(self.resolve(d)?);
        }
        let line = a.addr / LINE;
        if a.store {
            // A free store-queue entry.
            t = entry_free_at(
                hw.stq.iter().map(|e| e.free_at),
                t,
                self.p.store_queue_entries,
            )?;
            if matches!(self.l2.lookup(line), Lookup::Miss) && !self.can_fetch(line, false) {
                return None;
            }
            return Some(t);
        }
        let in_l1 = !a.bypass_l1
            && (matches!(self.l1.lookup(line), Lookup::Hit(_))
                || self
                    .reloads
                    .iter()
                    .any(|r| r.line == line && r.install && r.at.is_some_and(|x| x <= t)));
        if in_l1 {
            return Some(t);
        }
        // A free load-miss-queue entry.
        t = entry_free_at(
            hw.lmq.iter().map(|&s| self.reload_at(s)),
            t,
            self.p.load_miss_entries,
        )?;
        let joins = !a.bypass_l1 && self.reloads.iter().any(|r| r.line == line && r.install);
        if !joins && matches!(self.l2.lookup(line), Lookup::Miss) && !self.can_fetch(line, false) {
            return None;
        }
        Some(t)
    }

    /// Whether the L2 can start fetching `line` now (a miss machine, a way,
    /// and a castout entry if the victim is dirty); prefetches leave one
    /// machine for demand misses.
    fn can_fetch(&self, line: u64, prefetch: bool) -> bool {
        let free = self.misses.iter().filter(|m| m.is_none()).count();
        if free == 0 || (prefetch && free < 2) {
            return false;
        }
        match self.l2.victim_way(line) {
            None => false,
            Some(w) => match self.l2.line_at(w) {
                Some(v) if v.dirty => self.castouts_in_flight < self.p.castouts,
                _ => true,
            },
        }
    }

    fn reload_at(&self, seq: u64) -> Option<Cycle> {
        match self.reloads.iter().find(|r| r.seq == seq) {
            Some(r) => r.at,
            None => Some(0), // arrived already
        }
    }

    fn resolve(&self, d: DataRef) -> Option<Cycle> {
        match d {
            DataRef::At(t) => Some(t),
            DataRef::Reload(s) => self.reload_at(s),
            DataRef::Store(s) => {
                for h in &self.hw {
                    if let Some(e) = h.stq.iter().find(|e| e.seq == s) {
                        return e.free_at;
                    }
                }
                Some(0)
            }
        }
    }

    /// Lines that have arrived by `t` go into the L1; queue entries whose
    /// loads or stores are done by `t` free.
    fn settle(&mut self, t: Cycle) {
        if self.reloads.iter().any(|r| r.at.is_some_and(|a| a <= t)) {
            self.reloads
                .sort_by_key(|r| (r.at.unwrap_or(Cycle::MAX), r.seq));
            while let Some(r) = self.reloads.first().copied() {
                if r.at.is_none_or(|a| a > t) {
                    break;
                }
                self.reloads.remove(0);
                if r.install && matches!(self.l2.lookup(r.line), Lookup::Hit(_)) {
                    self.l1.insert(r.line);
                }
            }
            let reloads = &self.reloads;
            for h in &mut self.hw {
                h.lmq.retain(|s| reloads.iter().any(|r| r.seq == *s));
            }
        }
        for h in &mut self.hw {
            h.stq.retain(|e| e.free_at.is_none_or(|f| f > t));
        }
    }

    /// The next access of thread `h`'s job (its job has accesses left).
    fn next_access(&self, h: usize) -> Option<Access> {
        let job = self.hw[h].jobs.front()?;
        Some(match &job.kind {
            JobKind::Single { what, addr, size } => Access {
                store: matches!(what, Single::Store(_) | Single::Stwcx(_)),
                addr: *addr,
                size: *size,
                after: None,
                bypass_l1: matches!(what, Single::Lwarx),
            },
            JobKind::Loop(l) => {
                let i = l.next + l.gi as u64;
                match l.op {
                    LoopOp::Load => Access {
                        store: false,
                        addr: l.src + l.next * l.stride,
                        size: l.elem,
                        after: None,
                        bypass_l1: false,
                    },
                    LoopOp::Store => Access {
                        store: true,
                        addr: l.dst + l.next * l.stride,
                        size: l.elem,
                        after: None,
                        bypass_l1: false,
                    },
                    LoopOp::Copy if !l.storing => Access {
                        store: false,
                        addr: l.src + i * l.stride,
                        size: l.elem,
                        after: None,
                        bypass_l1: false,
                    },
                    LoopOp::Copy => Access {
                        store: true,
                        addr: l.dst + i * l.stride,
                        size: l.elem,
                        after: Some(l.data[l.gi]),
                        bypass_l1: false,
                    },
                }
            }
        })
    }

    /// Issues thread `h`'s next access at `t` (or ends its job). Returns
    /// whether the machine must act (bus requests or a finished job).
    fn act(&mut self, env: &mut Env<'_>, h: usize, t: Cycle) -> bool {
        let bus_before = self.bus_out.len();
        if self.hw[h].jobs.front().is_some_and(|j| j.issued_all) {
            let job = self.hw[h].jobs.pop_front().expect("a job");
            self.hw[h].wait = None;
            self.finish(job, t);
            return true;
        }
        let a = self.next_access(h).expect("a job with accesses left");
        self.last_hw = h;
        let occ = if a.size == 16 { self.p.vmx_access } else { 1 };
        self.lsu_free = t + occ;
        self.hw[h].ready_at = t + occ;
        let data = if a.store {
            self.issue_store(h, t, a.addr)
        } else {
            self.issue_load(h, t, a.addr, a.bypass_l1)
        };
        // Functional effects, and what comes next in the job.
        let job = self.hw[h].jobs.front_mut().expect("a job");
        let holder = Holder::Ppe(job.owner);
        match &mut job.kind {
            JobKind::Single { what, addr, size } => {
                let (addr, size) = (*addr, *size);
                match *what {
                    Single::Load => {
                        job.reply = read_be(env.memory, addr, size);
                        self.hw[h].wait = Some(data);
                    }
                    Single::Lwarx => {
                        env.reservations.reserve(holder, addr);
                        job.reply = read_be(env.memory, addr, size);
                        self.hw[h].wait = Some(data);
                    }
                    Single::Store(v) => {
                        write_be(env.memory, addr, size, v);
                        env.reservations.written(addr, size as u64);
                    }
                    Single::Stwcx(v) => {
                        let ok = env.reservations.holds(holder, addr);
                        if ok {
                            write_be(env.memory, addr, size, v);
                            env.reservations.written(addr, size as u64);
                        }
                        env.reservations.clear(holder);
                        job.reply = ok as u64;
                        self.hw[h].wait = Some(data);
                    }
                }
                job.issued_all = true;
            }
            JobKind::Loop(l) => {
                let n = l.elem as usize;
                match l.op {
                    LoopOp::Load => {
                        if l.dependent {
                            self.hw[h].wait = Some(data);
                        }
                        l.next += 1;
                    }
                    LoopOp::Store => {
                        env.memory.write(a.addr as usize, &[l.fill; 16][..n]);
                        env.reservations.written(a.addr, n as u64);
                        l.next += 1;
                    }
                    LoopOp::Copy => {
                        let group = (l.count - l.next).min(self.p.copy_unroll as u64) as usize;
                        if !l.storing {
                            l.data[l.gi] = data;
                            if l.dependent {
                                self.hw[h].wait = Some(data);
                            }
                        } else {
                            let src = (l.src + (l.next + l.gi as u64) * l.stride) as usize;
                            let mut b = [0u8; 16];
                            env.memory.read(src, &mut b[..n]);
                            env.memory.write(a.addr as usize, &b[..n]);
                            env.reservations.written(a.addr, n as u64);
                        }
                        l.gi += 1;
                        if l.gi == group {
                            l.gi = 0;
                            if l.storing {
                                l.next += group as u64;
                            }
                            l.storing = !l.storing;
                        }
                    }
                }
                if l.next >= l.count {
                    job.issued_all = true;
                }
            }
        }
        self.bus_out.len() > bus_before
    }

    fn finish(&mut self, job: Job, t: Cycle) {
        let g = self
            .groups
            .iter_mut()
            .position(|g| g.0 == job.group)
            .expect("every job has a group");
        let e = &mut self.groups[g];
        e.1 -= 1;
        e.2 = e.2.max(t);
        if matches!(job.kind, JobKind::Single { .. }) {
            e.3 = job.reply;
        }
        if e.1 == 0 {
            let (_, _, at, reply) = self.groups.swap_remove(g);
            let reply = match job.kind {
                JobKind::Loop(_) => at - job.submitted,
                JobKind::Single { .. } => reply,
            };
            self.done_out.push(Done {
                owner: job.owner,
                reply,
                at,
            });
        }
    }

    /// A load at `t`; returns when its data is there.
    fn issue_load(&mut self, h: usize, t: Cycle, addr: u64, bypass_l1: bool) -> DataRef {
        self.stats.loads += 1;
        let line = addr / LINE;
        if !bypass_l1 {
            if let Lookup::Hit(i) = self.l1.lookup(line) {
                self.l1.touch(i);
                self.stats.l1_hits += 1;
                return DataRef::At(t + self.p.l1_hit);
            }
        }
        self.stats.l1_misses += 1;
        if !bypass_l1 {
            if let Some(r) = self.reloads.iter().find(|r| r.line == line && r.install) {
                let s = r.seq;
                self.hw[h].lmq.push(s);
                return DataRef::Reload(s);
            }
        }
        self.seq += 1;
        let seq = self.seq;
        self.stats.reloads += 1;
        let (at, miss) = match self.l2.lookup(line) {
            Lookup::Hit(i) => {
                self.l2.touch(i);
                let at = (t + self.p.l2_hit).max(self.read_bus_free + self.p.line_transfer);
                self.read_bus_free = at;
                (Some(at), None)
            }
            Lookup::Pending(_) => (None, self.miss_of(line)),
            Lookup::Miss => {
                self.stats.l2_misses += 1;
                (None, self.start_fetch(line))
            }
        };
        self.reloads.push(Reload {
            seq,
            line,
            asked: t,
            at,
            miss,
            install: !bypass_l1,
        });
        self.hw[h].lmq.push(seq);
        if !bypass_l1 {
            self.prefetch_after(line);
        }
        DataRef::Reload(seq)
    }

    /// A store at `t` into the store queue; returns when the L2 has performed it.
    fn issue_store(&mut self, h: usize, t: Cycle, addr: u64) -> DataRef {
        self.stats.stores += 1;
        let line = addr / LINE;
        if let Lookup::Hit(i) = self.l1.lookup(line) {
            self.l1.touch(i); // written through
        }
        let w = (t + 1).max(self.write_bus_free);
        self.write_bus_free = w + 1;
        let free_at = match self.l2.lookup(line) {
            Lookup::Hit(i) => {
                self.l2.touch(i);
                self.l2.set_dirty(i);
                Some(w + self.p.l2_store)
            }
            Lookup::Pending(_) => None,
            Lookup::Miss => {
                self.stats.l2_misses += 1;
                self.start_fetch(line);
                None
            }
        };
        self.seq += 1;
        let seq = self.seq;
        self.hw[h].stq.push(StqEntry { seq, line, free_at });
        DataRef::Store(seq)
    }

    fn miss_of(&self, line: u64) -> Option<usize> {
        self.misses
            .iter()
            .position(|m| m.is_some_and(|m| m.line == line && !m.invalidated))
    }

    /// Starts fetching `line` into the L2 (the caller checked [`Ppu::can_fetch`]).
    fn start_fetch(&mut self, line: u64) -> Option<usize> {
        let id = self.misses.iter().position(|m| m.is_none())?;
        let way = self.l2.victim_way(line)?;
        if let Some(v) = self.l2.fill_way(way, line, true) {
            // Inclusion: the L1 gives the line up too.
            self.l1.invalidate(v.line);
            if v.dirty {
                self.castouts_in_flight += 1;
                self.stats.castouts += 1;
                self.bus_out.push(BusReq {
                    id: CASTOUT,
                    write: true,
                    addr: v.line * LINE,
                });
            }
        }
        self.misses[id] = Some(Miss {
            line,
            way,
            invalidated: false,
        });
        self.bus_out.push(BusReq {
            id: id as u32,
            write: false,
            addr: line * LINE,
        });
        Some(id)
    }

    /// A load miss on `line`: fetch the lines after it that the L2 lacks.
    fn prefetch_after(&mut self, line: u64) {
        for k in 1..=self.p.prefetch {
            let l = line + k;
            if (l + 1) * LINE > self.p.memory_bytes {
                break;
            }
            if matches!(self.l2.lookup(l), Lookup::Miss) {
                if !self.can_fetch(l, true) {
                    break;
                }
                self.stats.prefetches += 1;
                self.start_fetch(l);
            }
        }
    }

    /// A bus request of the L2 completed at `now`.
    pub fn bus_done(&mut self, id: u32, now: Cycle) {
        if id == CASTOUT {
            self.castouts_in_flight -= 1;
            return;
        }
        let m = self.misses[id as usize]
            .take()
            .expect("a completed fetch has its machine");
        let installed = !m.invalidated;
        if installed {
            self.l2.arrive(m.way);
        }
        // The L2 forwards the line to the L1 as it arrives, no sooner than
        // an L2 hit would have come.
        for r in self
            .reloads
            .iter_mut()
            .filter(|r| r.miss == Some(id as usize))
        {
            let at =
                (now.max(self.read_bus_free) + self.p.line_transfer).max(r.asked + self.p.l2_hit);
            self.read_bus_free = at;
            r.at = Some(at);
            r.miss = None;
            r.install &= installed;
        }
        let mut written = false;
        for h in &mut self.hw {
            for e in h
                .stq
                .iter_mut()
                .filter(|e| e.free_at.is_none() && e.line == m.line)
            {
                e.free_at = Some(now + self.p.l2_store);
                written = true;
            }
        }
        if written && installed {
            if let Lookup::Hit(i) = self.l2.lookup(m.line) {
                self.l2.set_dirty(i);
            }
        }
    }

    /// Someone else wrote `[addr, addr + len)` of main memory (an SPE's put
    /// reached the coherence point): the caches give those lines up.
    pub fn snoop_write(&mut self, addr: u64, len: u64) {
        let (first, last) = (addr / LINE, (addr + len.max(1) - 1) / LINE);
        for line in first..=last {
            self.l1.invalidate(line);
            for r in self.reloads.iter_mut().filter(|r| r.line == line) {
                r.install = false;
            }
            match self.l2.lookup(line) {
                Lookup::Miss => continue,
                Lookup::Pending(_) => {
                    for m in self.misses.iter_mut().flatten() {
                        if m.line == line {
                            m.invalidated = true;
                        }
                    }
                }
                Lookup::Hit(_) => {}
            }
            self.l2.invalidate(line);
            self.stats.snoop_invalidations += 1;
        }
    }

    /// Whether `line`'s byte address is held by the L1 / the L2.
    pub fn holds(&self, addr: u64) -> (bool, bool) {
        let line = addr / LINE;
        (
            matches!(self.l1.lookup(line), Lookup::Hit(_)),
            matches!(self.l2.lookup(line), Lookup::Hit(_)),
        )
    }
}

/// The earliest cycle at or after `t` at which fewer than `entries` of the
/// queue entries whose end times are given are still busy (`None` in the
/// iterator: not known yet; the result is `None` when it depends on one).
fn entry_free_at(
    ends: impl Iterator<Item = Option<Cycle>>,
    t: Cycle,
    entries: usize,
) -> Option<Cycle> {
    let mut known = [0 as Cycle; 64];
    let (mut n, mut busy) = (0, 0);
    for e in ends {
        match e {
            Some(x) if x <= t => {}
            Some(x) => {
                busy += 1;
                if n < known.len() {
                    known[n] = x;
                    n += 1;
                }
            }
            None => busy += 1,
        }
    }
    if busy < entries {
        return Some(t);
    }
    let known = &mut known[..n];
    known.sort_unstable();
    known.get(busy - entries).copied()
}

/// Reads `size` (1-8) big-endian bytes.
pub fn read_be(store: &Storage, off: u64, size: u8) -> u64 {
    let n = size.min(8) as usize;
    let mut b = [0u8; 8];
    store.read(off as usize, &mut b[8 - n..]);
    u64::from_be_bytes(b)
}

/// Writes the low `size` (1-8) bytes of `value`, big-endian.
pub fn write_be(store: &Storage, off: u64, size: u8, value: u64) {
    let n = size.min(8) as usize;
    store.write(off as usize, &value.to_be_bytes()[8 - n..]);
}

#[cfg(test)]
mod tests;
