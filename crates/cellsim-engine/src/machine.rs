//! The machine: owns every part of the chip and runs the event loop.
//!
//! Time jumps from one due event to the next ([`Calendar`]); within a cycle the
//! order is fixed — calendar events in scheduling order, then the command
//! bus, then the data arbiter, then the programs whose requests completed, in
//! the order they completed — so a run depends only on its seed.
//!
//! The parts hold their own handlers where they need little of the rest:
//! the DMAC's (enqueue, unroll, retire) are the `Mfc`'s (`mfc::dmac`, over a
//! narrow context; `dmac` routes its events and what it hands back), the
//! data arbiter's round is its chip bus's (`eib::round`); each part's
//! fast-forward state is behind its contract (`part`). Submodules hold the
//! others:
//! [`threads`] (program requests), [`dma`] (an MFC command's way on the bus:
//! the command bus and coherence point, data, completion), `ppe` (the PPE's requests), `cores` (the
//! PPU's caches and SPU local-store loops, simulated ahead of the calendar up
//! to its next event) and [`injection`] (the injection port of synthetic EIB
//! load: the engine times it, a [`TrafficSource`] outside says when and where).

mod cores;
mod dma;
mod dmac;
mod events;
pub mod injection;
mod ppe;
mod steady;
mod threads;
mod watch;

pub use injection::TrafficSource;
pub use steady::FastForwardStats;
pub use threads::{SpeSlot, ThreadId, ThreadInfo, ThreadState};
pub use watch::{Watchdog, WATCH_EVERY};

use crate::atomic::Reservations;
use crate::bif::{Bif, Link};
use crate::bus::{BusOp, OpId, Slab};
use crate::calendar::Calendar;
use crate::config::{MachineConfig, Placement, Timing};
pub(crate) use crate::eib::chip_bus::ChipBus;
use crate::eib::Eib;
use crate::error::{ConfigError, SimError};
use crate::ls_loop::{LsLoop, LsParams};
use crate::mailbox::Mailboxes;
use crate::memory_map::MemoryMap;
use crate::mfc::tlb::Tlb;
use crate::mfc::Mfc;
use crate::mic::Mic;
use crate::numa::Numa;
use crate::part::Part;
use crate::ppu::Ppu;
use crate::program::{Ppe, Request, Spu};
use crate::rng::Rng;
use crate::signal::{SignalMode, Signals};
use crate::storage::Storage;
use crate::time::{bus_edge, later, overflow_message, Cycle, BUS_RATIO};
use crate::topology::{Ramp, Topology, RAMPS, SPES_PER_CHIP};
use crate::trace::{Trace, TraceRecord, Track};
pub(crate) use dma::command_of;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use threads::Thread;

/// Something due at a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A thread's request is done: it runs again (the thread's number, as
    /// u32: an event is 8 bytes, which the calendar stores and hands out).
    Wake(u32),
    /// A thread's issued command enters its SPE's command queue.
    Enqueue(u32),
    /// The DMAC of a physical SPE may unroll a bus request.
    Dmac(u8),
    /// The MIC sees a reflected read command.
    Snoop(OpId),
    /// Data is ready at the sender and the command phase is over.
    DataReady(OpId),
    /// The data arbiter has decided on a ready transfer (variant
    /// `eib.grant_delay`): it asks for a ring.
    Decided(OpId),
    /// The requester learns its bus request is complete.
    Complete(OpId),
    /// An MFC command retires: physical SPE, slot, in the proxy queue.
    Retire(u8, u8, bool),
    /// Synthetic traffic: a ramp injects a transfer.
    Inject(u8),
}

impl Event {
    /// Thread `tid` runs again.
    pub(crate) fn wake(tid: ThreadId) -> Event {
        Event::Wake(thread_number(tid))
    }

    /// Thread `tid`'s issued command enters its SPE's command queue.
    pub(crate) fn enqueue(tid: ThreadId) -> Event {
        Event::Enqueue(thread_number(tid))
    }
}

/// A thread's number as events hold it.
#[inline]
fn thread_number(tid: ThreadId) -> u32 {
    u32::try_from(tid).expect("fewer than 2^32 threads")
}

// The calendar stores and hands out events by value: keep them small.
const _: () = assert!(std::mem::size_of::<Event>() == 8);

/// What [`Machine::advance`] stopped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// An external (e.g. Python) program must run now, with this reply to its last request.
    Resume {
        /// The thread.
        thread: ThreadId,
        /// The reply value.
        reply: u64,
    },
    /// Every program finished and nothing is in flight.
    Finished,
}

/// Counters of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calendar events handled.
    pub events: u64,
    /// MFC commands issued.
    pub dma_commands: u64,
    /// Bytes moved into local stores by gets.
    pub get_bytes: u64,
    /// Bytes moved out of local stores by puts.
    pub put_bytes: u64,
    /// Bus requests created (MFC and synthetic).
    pub bus_requests: u64,
    /// Bus requests completed.
    pub bus_completed: u64,
}

/// The latencies of one retired DMA command, in cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaLatency {
    /// From the SPU's issue (its entry into the MFC queue) to the tag-group
    /// update: includes the time it waited in the queue behind older commands.
    pub queued: Cycle,
    /// From the DMAC's start on it (its first bus request) to the tag-group
    /// update: the time the chip took to serve it.
    pub service: Cycle,
}

/// Summary of a finished run.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// Simulated cycles at the end.
    pub cycles: Cycle,
    /// The same in nanoseconds.
    pub ns: f64,
    /// Each thread's exit value and end cycle.
    pub threads: Vec<ThreadInfo>,
}

/// One physical SPE: its MFC, local store, and who runs on it.
#[derive(Debug)]
pub(crate) struct SpeUnit {
    pub(crate) mfc: Mfc,
    pub(crate) ls: Arc<Storage>,
    pub(crate) ramp: Ramp,
    pub(crate) logical: Option<u32>,
    pub(crate) thread: Option<ThreadId>,
    /// Mailboxes.
    pub(crate) mbox: Mailboxes,
    /// Signal-notification registers.
    pub(crate) signals: Signals,
    /// While an SPU loop runs over this local store: the cycles DMA takes
    /// from its port (ascending).
    pub(crate) ls_log: Option<VecDeque<Cycle>>,
}

/// A simulated Cell machine.
pub struct Machine {
    cfg: MachineConfig,
    pub(crate) timing: Timing,
    pub(crate) topo: Topology,
    map: MemoryMap,
    pub(crate) now: Cycle,
    pub(crate) calendar: Calendar<Event>,
    /// Each chip's bus.
    pub(crate) chips: Vec<ChipBus>,
    /// The data arbiter's decision time (variant `eib.grant_delay`; `None`:
    /// a ready transfer asks for a ring at once).
    pub(crate) grant_delay: crate::config::GrantDelay,
    /// Each chip's memory controller (one NUMA node per chip).
    pub(crate) mics: Vec<Mic>,
    /// Where the pages of main memory are.
    pub(crate) numa: Numa,
    /// The link between the chips of a blade.
    pub(crate) bif: Option<Bif>,
    memory: Arc<Storage>,
    mem_next: u64,
    pub(crate) spes: Vec<SpeUnit>,
    /// Physical SPE of each logical SPE.
    placement: Vec<u8>,
    pub(crate) ops: Slab<BusOp>,
    /// The bytes of each bus request between leaving the sender and landing
    /// (indexed like `ops`).
    pub(crate) staging: Vec<[u8; 128]>,
    pub(crate) threads: Vec<Thread>,
    pub(crate) ready: VecDeque<ThreadId>,
    pub(crate) rng: Rng,
    time_limit: Cycle,
    pub(crate) counters: Counters,
    /// Synthetic traffic's source, if it runs ([`injection`]).
    pub(crate) traffic: Option<Box<dyn TrafficSource>>,
    /// Lock-line reservations of every SPE and PPE thread.
    pub(crate) reservations: Reservations,
    /// A mailbox changed: PPE threads waiting on mailboxes re-check.
    pub(crate) mbox_changed: bool,
    /// Trace records, when tracing is on.
    pub(crate) trace: Option<Trace>,
    /// Per physical SPE, each retired DMA command's latencies, when
    /// recording is on.
    pub(crate) dma_latencies: Option<Vec<Vec<DmaLatency>>>,
    /// The PPU and its caches.
    pub(crate) ppu: Ppu,
    /// SPU loops over their local stores.
    pub(crate) ls_loops: Vec<LsLoop>,
    /// Threads computing while sharing their local-store port with DMA.
    pub(crate) ls_computes: usize,
    /// Timing of SPU local-store accesses.
    pub(crate) ls_params: LsParams,
    /// When the cores' phase must run next (`Cycle::MAX`: not due).
    pub(crate) core_wake: Cycle,
    /// The earliest of every chip's `cb_wake` and `arb_wake` (`Cycle::MAX`:
    /// none), kept so that a step looks at one value, not at every chip's.
    pub(crate) bus_wake: Cycle,
    /// The commands accepted on every chip's command bus, counted again
    /// when one runs (the fast-forward's looks read it at every step).
    pub(crate) commands_accepted: u64,
    /// The steady-state fast-forward.
    pub(crate) ff: steady::FastForward,
    /// The SPU event facility's machine-wide state.
    pub(crate) events: events::Events,
    /// An error found inside the event loop (a DMA-list element rewritten
    /// into a bad one): the run stops with it.
    pub(crate) fault: Option<SimError>,
    /// The host's check, run every [`WATCH_EVERY`] steps.
    watchdog: Option<Watchdog>,
    /// Native programs started from now on carry a DMA hazard checker.
    check_dma: bool,
    /// Steps until the next watchdog check.
    watch_countdown: u32,
    /// The external thread that [`Machine::advance`] handed back and that
    /// owes its next request: the only one [`Machine::submit`] accepts.
    awaiting: Option<ThreadId>,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Machine({}, cycle {})", self.cfg.name, self.now)
    }
}

/// Simulated-time limit when none is set: 10 simulated seconds.
pub const DEFAULT_TIME_LIMIT_NS: f64 = 10e9;

impl Machine {
    /// Builds a machine from a validated configuration; `seed` drives every
    /// random choice (placement, synthetic traffic).
    pub fn new(cfg: MachineConfig, seed: u64) -> Machine {
        Self::try_new(cfg, seed).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Machine::new`], but a memory size the host cannot allocate is
    /// a [`ConfigError`] naming the size instead of a panic.
    pub fn try_new(cfg: MachineConfig, seed: u64) -> Result<Machine, ConfigError> {
        let memory =
            Storage::try_new(cfg.memory_bytes() as usize).ok_or_else(|| ConfigError::Invalid {
                key: "memory_mb".into(),
                value: cfg.memory_mb.to_string(),
                rule: format!(
                    "the host cannot allocate {} bytes of simulated main memory",
                    cfg.memory_bytes()
                ),
            })?;
        let timing = cfg.timing();
        let topo = Topology::new(&cfg);
        let mut rng = Rng::new(seed);
        let placement = place(&cfg, &mut rng);
        let chips = topo.chips();
        let tlb = (cfg.tlb.entries > 0).then(|| {
            Tlb::new(
                cfg.tlb.entries as usize,
                cfg.tlb.ways as usize,
                timing.clock.ns_to_cycles(cfg.tlb.miss_ns),
            )
        });
        let spes = (0..(chips * SPES_PER_CHIP) as u8)
            .map(|p| SpeUnit {
                mfc: Mfc::new(
                    cfg.mfc.queue_depth,
                    cfg.mfc.proxy_queue_depth,
                    cfg.mfc.turns(),
                    tlb.clone(),
                ),
                ls: Storage::new(timing.ls_bytes as usize),
                ramp: topo.spe(p),
                logical: placement.iter().position(|&x| x == p).map(|l| l as u32),
                thread: None,
                mbox: Mailboxes::default(),
                signals: Signals::default(),
                ls_log: None,
            })
            .collect();
        let map = MemoryMap {
            memory_bytes: cfg.memory_bytes(),
            spes: placement.len() as u32,
            ls_bytes: timing.ls_bytes,
        };
        let time_limit = timing.clock.ns_to_cycles(DEFAULT_TIME_LIMIT_NS);
        let bif = cfg.bif.as_ref().map(|b| {
            let link = || {
                Link::new(
                    timing.clock.gbs_to_bytes_per_cycle(b.link_gbs),
                    timing.bif_latency,
                )
            };
            Bif {
                links: [link(), link()],
                snoop: timing.bif_snoop,
            }
        });
        Ok(Machine {
            chips: (0..chips).map(|_| ChipBus::new(&cfg, &topo)).collect(),
            grant_delay: cfg.eib.grant_delay,
            mics: memory_controllers(&cfg, seed),
            numa: Numa::new(
                chips,
                cfg.memory_bytes(),
                cfg.numa.page_kb,
                cfg.numa_policy(),
            ),
            bif,
            memory,
            mem_next: 0x1_0000,
            spes,
            placement,
            ops: Slab::new(),
            staging: Vec::new(),
            threads: Vec::new(),
            ready: VecDeque::new(),
            rng,
            time_limit,
            counters: Counters::default(),
            traffic: None,
            reservations: Reservations::default(),
            mbox_changed: false,
            trace: None,
            dma_latencies: None,
            ppu: Ppu::new(cfg.ppu()),
            ls_loops: Vec::new(),
            ls_computes: 0,
            ls_params: LsParams {
                load_latency: cfg.spu.ls_load_latency_cycles,
                narrow_load: cfg.spu.ls_narrow_load_slots,
                narrow_store: cfg.spu.ls_narrow_store_slots,
                dma_cycles: cfg.spu.dma_ls_cycles,
            },
            core_wake: Cycle::MAX,
            bus_wake: Cycle::MAX,
            commands_accepted: 0,
            ff: steady::FastForward::new(),
            events: events::Events::default(),
            fault: None,
            watchdog: None,
            check_dma: false,
            watch_countdown: WATCH_EVERY,
            awaiting: None,
            now: 0,
            calendar: Calendar::new(),
            map,
            topo,
            timing,
            cfg,
        })
    }

    /// The configuration the machine was built from.
    pub fn config(&self) -> &MachineConfig {
        &self.cfg
    }

    /// Derived timing in cycles.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// The physical layout.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The effective-address map.
    pub fn memory_map(&self) -> &MemoryMap {
        &self.map
    }

    /// Current simulated cycle.
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// Current simulated time in nanoseconds.
    pub fn now_ns(&self) -> f64 {
        self.timing.clock.cycles_to_ns(self.now)
    }

    /// Number of logical SPEs software can use.
    pub fn spe_count(&self) -> usize {
        self.placement.len()
    }

    /// Physical SPE number of each logical SPE.
    pub fn placement(&self) -> Vec<u32> {
        self.placement.iter().map(|&p| p as u32).collect()
    }

    /// Sets the logical-to-physical placement (before any program runs).
    pub fn set_placement(&mut self, physical: &[u32]) -> Result<(), SimError> {
        if self.threads.iter().any(|t| t.spe.is_some()) {
            return Err(SimError::Usage(
                "the SPE placement can only change before programs are started".into(),
            ));
        }
        let mut sorted: Vec<u32> = physical.to_vec();
        sorted.sort();
        let mut avail = self.cfg.spes.clone();
        avail.sort();
        if sorted != avail {
            return Err(SimError::Usage(format!(
                "placement {physical:?} must be a permutation of the machine's SPEs {:?}",
                self.cfg.spes
            )));
        }
        self.placement = physical.iter().map(|&p| p as u8).collect();
        for (p, unit) in self.spes.iter_mut().enumerate() {
            unit.logical = self
                .placement
                .iter()
                .position(|&x| x as usize == p)
                .map(|l| l as u32);
        }
        Ok(())
    }

    /// The physical SPEs in memory-affinity order: nearest the memory
    /// controller first, then along the rings (Linux's affinity chain for a
    /// QS20: 0, 2, 4, 6, 7, 5, 3, 1), chip after chip. Only SPEs software can
    /// use are listed.
    pub fn affinity_chain(&self) -> Vec<u32> {
        (0..self.topo.chips())
            .flat_map(|chip| {
                let mic = self.topo.mic(chip);
                (1..RAMPS).filter_map(move |k| {
                    let r =
                        Ramp::on_chip(chip, Ramp(((mic.local().idx() + RAMPS - k) % RAMPS) as u8));
                    self.topo.spe_at(r)
                })
            })
            .map(u32::from)
            .filter(|n| self.cfg.spes.contains(n))
            .collect()
    }

    /// The TLB of logical SPE `spe`: (lookups, misses), or `None` when the
    /// machine does not model translation.
    pub fn tlb_stats(&self, spe: u32) -> Result<Option<(u64, u64)>, SimError> {
        let p = self.physical(spe)?;
        Ok(self.spes[p as usize]
            .mfc
            .tlb
            .as_ref()
            .map(|t| (t.lookups, t.misses)))
    }

    /// Chips in the machine.
    pub fn chip_count(&self) -> usize {
        self.topo.chips()
    }

    /// Main memory.
    pub fn memory(&self) -> &Arc<Storage> {
        &self.memory
    }

    /// The local store of logical SPE `spe`.
    pub fn local_store(&self, spe: u32) -> Result<&Arc<Storage>, SimError> {
        let p = self.physical(spe)?;
        Ok(&self.spes[p as usize].ls)
    }

    pub(crate) fn physical(&self, spe: u32) -> Result<u8, SimError> {
        self.placement.get(spe as usize).copied().ok_or_else(|| {
            SimError::Usage(format!(
                "SPE {spe} does not exist: this {} has {} SPEs",
                self.cfg.name,
                self.placement.len()
            ))
        })
    }

    /// Allocates `size` bytes of main memory aligned to `align` (like
    /// `malloc_align`), its pages placed by the machine's NUMA policy; memory
    /// is never freed during a run.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64, SimError> {
        self.alloc_placed(size, align, None, false)
    }

    /// [`Machine::alloc`] with its pages placed by `policy` (like `numactl`
    /// or `numa_alloc_onnode`; `None`: the machine's) and, with `huge`, on
    /// 16 MB huge pages (hugetlbfs: the allocation is aligned to 16 MB).
    pub fn alloc_placed(
        &mut self,
        size: u64,
        align: u64,
        policy: Option<crate::config::NumaPolicy>,
        huge: bool,
    ) -> Result<u64, SimError> {
        if align == 0 || !align.is_power_of_two() {
            return Err(SimError::Usage(format!(
                "alignment {align} is not a power of two"
            )));
        }
        let shift = if huge {
            crate::numa::HUGE_SHIFT
        } else {
            self.numa.page_shift()
        };
        let align = if huge { align.max(1 << shift) } else { align };
        let start = self.mem_next.div_ceil(align) * align;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= self.cfg.memory_bytes())
            .ok_or_else(|| {
                SimError::Usage(format!(
                "main memory exhausted: {size} more bytes do not fit in {} MB ({} bytes in use)",
                self.cfg.memory_mb, self.mem_next
            ))
            })?;
        let span = if huge {
            size.div_ceil(1 << shift) << shift
        } else {
            size
        };
        self.numa
            .place(start, span, policy, shift)
            .map_err(SimError::Usage)?;
        self.mem_next = if huge { start + span } else { end };
        Ok(start)
    }

    /// The NUMA node (chip) holding main-memory offset `addr`.
    pub fn memory_node(&self, addr: u64) -> usize {
        self.numa.node_of(addr)
    }

    /// Bytes of main memory placed on each node so far.
    pub fn memory_used_per_node(&self) -> Vec<u64> {
        self.numa.used()[..self.topo.chips()].to_vec()
    }

    /// Stops runs that pass `cycles` of simulated time with [`SimError::Runaway`].
    pub fn set_time_limit(&mut self, cycles: Cycle) {
        self.time_limit = cycles;
    }

    /// Starts recording the latencies of every DMA command ([`DmaLatency`]).
    pub fn record_dma_latencies(&mut self) {
        self.dma_latencies = Some(vec![Vec::new(); self.spes.len()]);
    }

    /// The recorded DMA latencies of logical SPE `spe`, in retirement order.
    pub fn dma_latencies(&self, spe: u32) -> Result<&[DmaLatency], SimError> {
        let p = self.physical(spe)?;
        Ok(self
            .dma_latencies
            .as_ref()
            .map_or(&[][..], |v| &v[p as usize][..]))
    }

    /// Starts recording a trace of at most `limit` records (see [`crate::trace`]).
    pub fn enable_trace(&mut self, limit: usize) {
        self.trace = Some(Trace::new(limit));
    }

    /// The trace records so far and how many were dropped past the limit.
    pub fn trace(&self) -> Option<(&[TraceRecord], u64)> {
        self.trace.as_ref().map(|t| (&t.records[..], t.dropped))
    }

    /// Removes and returns up to `n` of the oldest trace records (see [`Trace::take`]).
    pub fn take_trace(&mut self, n: usize) -> Vec<TraceRecord> {
        self.trace.as_mut().map_or_else(Vec::new, |t| t.take(n))
    }

    /// Adds a trace record with details if tracing is on.
    #[inline]
    pub(crate) fn record_with(
        &mut self,
        track: Track,
        start: Cycle,
        end: Cycle,
        what: impl FnOnce() -> (String, crate::trace::Args),
    ) {
        if let Some(t) = self.trace.as_mut() {
            t.push_with(track, start, end, what);
        }
    }

    /// Adds a trace record if tracing is on.
    #[inline]
    pub(crate) fn record(
        &mut self,
        track: Track,
        start: Cycle,
        end: Cycle,
        name: impl FnOnce() -> String,
    ) {
        if let Some(t) = self.trace.as_mut() {
            t.push(track, name, start, end);
        }
    }

    /// The trace track of a thread (its SPU, or its PPE thread).
    pub(crate) fn thread_track(&self, tid: ThreadId) -> Track {
        match self.threads[tid].spe {
            Some(s) => Track::Spu(s.logical),
            None => Track::Ppe(tid),
        }
    }

    /// Records every EIB reservation so that [`Machine::verify`] can check it.
    pub fn enable_checks(&mut self) {
        for c in &mut self.chips {
            c.eib.enable_log();
        }
        if let Some(b) = self.bif.as_mut() {
            for l in &mut b.links {
                l.log = Some(Vec::new());
            }
        }
    }

    /// Checks the EIBs' invariants over everything recorded since
    /// [`Machine::enable_checks`], and that no direction of the BIF carried
    /// more than its bandwidth.
    pub fn verify(&self) -> Result<(), SimError> {
        for (i, c) in self.chips.iter().enumerate() {
            match &c.eib.log {
                Some(l) => l
                    .verify(self.cfg.eib.max_transfers_per_ring as usize)
                    .map_err(|e| SimError::Invariant(format!("chip {i}: {e}")))?,
                None => {
                    return Err(SimError::Usage(
                        "checks were not enabled (call enable_checks before running)".into(),
                    ))
                }
            }
        }
        if let Some(b) = &self.bif {
            for (from, l) in b.links.iter().enumerate() {
                l.verify()
                    .map_err(|e| SimError::Invariant(format!("the BIF from chip {from}: {e}")))?;
            }
        }
        Ok(())
    }

    /// Chip 0's EIB (for its counters); [`Machine::eibs`] gives every chip's.
    pub fn eib(&self) -> &Eib {
        &self.chips[0].eib
    }

    /// Each chip's EIB.
    pub fn eibs(&self) -> impl Iterator<Item = &Eib> {
        self.chips.iter().map(|c| &c.eib)
    }

    /// The BIF's two directions (on a two-chip machine).
    pub fn bif(&self) -> Option<&Bif> {
        self.bif.as_ref()
    }

    /// Data-arbiter rounds and attempts so far (all chips).
    pub fn arbiter_stats(&self) -> (u64, u64) {
        self.chips.iter().fold((0, 0), |(r, a), c| {
            (r + c.arbiter.rounds, a + c.arbiter.attempts)
        })
    }

    /// Chip 0's memory controller (for its counters).
    pub fn mic(&self) -> &Mic {
        &self.mics[0]
    }

    /// Every chip's memory controller, chip 0's first.
    pub fn mics(&self) -> &[Mic] {
        &self.mics
    }

    /// The memory (NUMA node, one per chip) holding main-memory offset `addr`.
    #[inline]
    pub fn bank(&self, addr: u64) -> usize {
        self.numa.node_of(addr)
    }

    /// Run counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Starts a native Rust program on logical SPE `spe`.
    pub fn spawn_native<F, Fut>(
        &mut self,
        spe: u32,
        argp: u64,
        envp: u64,
        program: F,
    ) -> Result<ThreadId, SimError>
    where
        F: FnOnce(Spu) -> Fut,
        Fut: Future<Output = u32> + 'static,
    {
        self.spawn_native_after(spe, argp, envp, 0, program)
    }

    /// Like [`Machine::spawn_native`], the program starting `delay` cycles from now.
    pub fn spawn_native_after<F, Fut>(
        &mut self,
        spe: u32,
        argp: u64,
        envp: u64,
        delay: Cycle,
        program: F,
    ) -> Result<ThreadId, SimError>
    where
        F: FnOnce(Spu) -> Fut,
        Fut: Future<Output = u32> + 'static,
    {
        let p = self.claim_spe(spe, delay)?;
        let (spu, port) = Spu::new(
            spe,
            argp,
            envp,
            self.spes[p as usize].ls.clone(),
            self.cfg.spu.ls_reserved_bytes,
            self.check_dma,
        );
        let fut = Box::pin(program(spu));
        Ok(self.add_thread(
            Thread::native(
                Some(SpeSlot {
                    logical: spe,
                    physical: p,
                }),
                fut,
                port,
            ),
            delay,
        ))
    }

    /// Native SPU programs started from now on check their DMAs for races
    /// with their own accesses and with each other (see [`crate::dma_check`]):
    /// a race stops the run with [`SimError::DmaHazard`]. Off by default,
    /// and then it costs a test of an empty option per DMA and access.
    pub fn set_check_dma(&mut self, on: bool) {
        self.check_dma = on;
    }

    /// Starts an external program (driven from outside, e.g. Python) on
    /// logical SPE `spe`: [`Machine::advance`] says when it must run, and it
    /// answers with [`Machine::submit`].
    pub fn spawn_external(&mut self, spe: u32) -> Result<ThreadId, SimError> {
        self.spawn_external_after(spe, 0)
    }

    /// Like [`Machine::spawn_external`], the program starting `delay` cycles
    /// from now (the time `spe_context_run` takes to start an SPE).
    pub fn spawn_external_after(&mut self, spe: u32, delay: Cycle) -> Result<ThreadId, SimError> {
        let p = self.claim_spe(spe, delay)?;
        Ok(self.add_thread(
            Thread::external(Some(SpeSlot {
                logical: spe,
                physical: p,
            })),
            delay,
        ))
    }

    /// Starts an external PPE thread (a PPE program driven from outside).
    pub fn spawn_ppe_external(&mut self) -> ThreadId {
        self.add_thread(Thread::external(None), 0)
    }

    /// Starts a native PPE program.
    pub fn spawn_ppe_native<F, Fut>(&mut self, program: F) -> ThreadId
    where
        F: FnOnce(Ppe) -> Fut,
        Fut: Future<Output = u32> + 'static,
    {
        let (ppe, port) = Ppe::new(self.memory.clone());
        let fut = Box::pin(program(ppe));
        self.add_thread(Thread::native(None, fut, port), 0)
    }

    /// Sets signal-notification register `which` (1 or 2) of logical SPE `spe`
    /// to OR mode (`true`) or overwrite mode.
    pub fn set_signal_mode(&mut self, spe: u32, which: u8, or_mode: bool) -> Result<(), SimError> {
        let p = self.physical(spe)?;
        if !(1..=2).contains(&which) {
            return Err(SimError::Usage(format!(
                "signal register {which} is not 1 or 2"
            )));
        }
        self.spes[p as usize].signals.mode[which as usize - 1] = if or_mode {
            SignalMode::Or
        } else {
            SignalMode::Overwrite
        };
        Ok(())
    }

    fn claim_spe(&mut self, spe: u32, delay: Cycle) -> Result<u8, SimError> {
        if later(self.now, delay).is_none() {
            let what = format!("starting a program on SPE {spe} after a delay of {delay} cycles");
            return Err(SimError::Usage(overflow_message(&what, self.now)));
        }
        let p = self.physical(spe)?;
        let unit = &self.spes[p as usize];
        if let Some(t) = unit.thread {
            if !self.threads[t].is_finished() {
                return Err(SimError::Usage(format!(
                    "SPE {spe} is already running a program"
                )));
            }
        }
        Ok(p)
    }

    fn add_thread(&mut self, t: Thread, delay: Cycle) -> ThreadId {
        let id = self.threads.len();
        let p = t.spe.map(|s| s.physical);
        let mut t = t;
        t.reset_decrementer(self.now + delay);
        self.threads.push(t);
        if let Some(p) = p {
            // Mailboxes and signals belong to the SPE: what was written to them
            // before the program started is still there (libspe2 semantics).
            self.spes[p as usize].thread = Some(id);
        }
        if delay == 0 {
            self.ready.push_back(id);
        } else {
            self.schedule(self.now + delay, Event::wake(id));
        }
        id
    }

    /// Information about every thread.
    pub fn threads(&self) -> Vec<ThreadInfo> {
        self.threads
            .iter()
            .enumerate()
            .map(|(i, t)| t.info(i))
            .collect()
    }

    /// Runs until an external program must run or everything is done.
    pub fn advance(&mut self) -> Result<Step, SimError> {
        loop {
            while let Some(tid) = self.ready.pop_front() {
                // A declared loop's command is part of a steady state (its
                // position is in its shape); a declared poll's request stands
                // for its program's code, which ends one.
                let req = match self.scripted(tid) {
                    Some(req) => Some(req),
                    None => {
                        self.disturb();
                        self.polling(tid)
                    }
                };
                if let Some(req) = req {
                    self.submit_request(tid, req)?;
                    continue;
                }
                if self.threads[tid].is_native() {
                    self.poll_native(tid)?;
                } else {
                    let reply = self.threads[tid].take_reply();
                    self.awaiting = Some(tid);
                    return Ok(Step::Resume { thread: tid, reply });
                }
            }
            let Some(t) = self.next_time() else {
                return self.idle_end();
            };
            if t > self.time_limit {
                let running = self.threads.iter().filter(|t| !t.is_finished()).count();
                return Err(SimError::Runaway {
                    limit: self.time_limit,
                    limit_ns: self.timing.clock.cycles_to_ns(self.time_limit),
                    running,
                    activity: self.activity_report(),
                });
            }
            self.step_to(t);
            self.events_tick();
            self.stop_if_faulted_or_watched()?;
            // No shape is taken while an SPU tracks events: a jump could not replay their edges.
            if self.events.armed == 0 {
                self.maybe_fast_forward(self.time_limit);
            }
        }
    }

    /// Ends the run on an error found inside the event loop, or when the
    /// host's watchdog says so.
    #[inline]
    fn stop_if_faulted_or_watched(&mut self) -> Result<(), SimError> {
        if let Some(e) = self.fault.take() {
            return Err(e);
        }
        self.watch()
    }

    /// Runs a machine whose programs are all native until they finish.
    pub fn run(&mut self) -> Result<RunSummary, SimError> {
        match self.advance()? {
            Step::Finished => Ok(self.summary()),
            Step::Resume { thread, .. } => Err(SimError::Usage(format!(
                "thread {thread} is an external program: drive it with advance()/submit() (or from Python)"
            ))),
        }
    }

    /// Runs for `cycles` more cycles (for synthetic traffic, which never ends).
    pub fn run_for(&mut self, cycles: Cycle) -> Result<(), SimError> {
        let end = later(self.now, cycles).ok_or_else(|| {
            SimError::Usage(overflow_message(&format!("run_for({cycles})"), self.now))
        })?;
        while let Some(t) = self.next_time() {
            if t > end {
                break;
            }
            self.step_to(t);
            self.stop_if_faulted_or_watched()?;
            if !self.ready.is_empty() {
                return Err(SimError::Usage(
                    "run_for is for synthetic traffic; programs are running".into(),
                ));
            }
        }
        self.now = end;
        self.calendar.advance_to(end);
        Ok(())
    }

    /// A summary of the run so far.
    pub fn summary(&self) -> RunSummary {
        RunSummary {
            cycles: self.now,
            ns: self.now_ns(),
            threads: self.threads(),
        }
    }

    #[inline]
    fn next_time(&self) -> Option<Cycle> {
        // Plain mins of times (`Cycle::MAX`: none): this runs once per
        // simulated time step.
        let t = self
            .calendar
            .next_due()
            .min(self.bus_wake)
            .min(self.core_wake)
            .min(self.events.dec_wake);
        (t != Cycle::MAX).then_some(t)
    }

    /// Recomputes [`Machine::bus_wake`] from the chips' wake-ups.
    pub(crate) fn refresh_bus_wake(&mut self) {
        self.bus_wake = self.earliest_bus_wake();
    }

    /// The earliest of every chip's command-bus and arbiter wake-ups.
    fn earliest_bus_wake(&self) -> Cycle {
        let mut t = Cycle::MAX;
        // By index, not by iterator: LLVM unrolls the iterator's loop with
        // a division for its trip count, for the one or two chips.
        for c in 0..self.chips.len() {
            t = t.min(self.chips[c].next_wake().unwrap_or(Cycle::MAX));
        }
        t
    }

    fn idle_end(&mut self) -> Result<Step, SimError> {
        let blocked = self.blocked_report();
        if blocked.is_empty() {
            Ok(Step::Finished)
        } else {
            Err(SimError::Deadlock {
                cycle: self.now,
                blocked,
            })
        }
    }

    /// Handles everything due at cycle `t`.
    fn step_to(&mut self, t: Cycle) {
        self.now = t;
        self.calendar.advance_to(t);
        // Events scheduled for this cycle while they are handled come out after them.
        while let Some(e) = self.calendar.pop_due() {
            self.counters.events += 1;
            self.handle(e);
        }
        // No chip's bus is due unless the earliest of their wake-ups is.
        if self.bus_wake <= t {
            for c in 0..self.chips.len() {
                if self.chips[c].cb_wake.is_some_and(|w| w <= t) {
                    self.chips[c].cb_wake = None;
                    self.run_command_bus(c);
                }
            }
            // The arbiters' loop also recomputes the earliest bus wake-up:
            // each chip's once its arbiter has run (a later run only adds
            // wake-ups, and `wake_command_bus`/`wake_arbiter` fold those into
            // `bus_wake` themselves), as `refresh_bus_wake` would after it.
            self.bus_wake = Cycle::MAX;
            for c in 0..self.chips.len() {
                if self.chips[c].arb_wake.is_some_and(|w| w <= t) {
                    self.chips[c].arb_wake = None;
                    self.run_arbiter(c);
                }
                // Written out, not through a helper shared with
                // `earliest_bus_wake`: the call form costs uniform traffic
                // 0.6% (callgrind, code layout); the debug check below keeps
                // the two alike.
                let chip = &self.chips[c];
                self.bus_wake = self
                    .bus_wake
                    .min(chip.cb_wake.unwrap_or(Cycle::MAX))
                    .min(chip.arb_wake.unwrap_or(Cycle::MAX));
            }
            debug_assert_eq!(self.bus_wake, self.earliest_bus_wake());
        }
        if self.core_wake <= t {
            self.core_wake = Cycle::MAX;
            self.run_cores();
        }
    }

    fn handle(&mut self, e: Event) {
        // An event outside shapes (see `Machine::in_shape`) ends a steady
        // state: checked in the arms of the events that can be one, so that
        // the others (the bus's, nearly all) are dispatched once.
        match e {
            Event::Wake(tid) => {
                let tid = tid as ThreadId;
                self.disturb_unless_scripted(tid);
                if self.port_share_ends(tid) {
                    self.ready.push_back(tid)
                }
            }
            Event::Enqueue(tid) => {
                let tid = tid as ThreadId;
                self.disturb_unless_scripted(tid);
                self.enqueue(tid)
            }
            Event::Dmac(p) => self.dmac(p),
            Event::Snoop(op) => self.snoop(op),
            Event::DataReady(op) => self.data_ready(op),
            Event::Decided(op) => self.decided(op),
            Event::Complete(op) => self.complete(op),
            Event::Retire(p, slot, proxy) => {
                self.retired_for_looks(p);
                self.retire(p, slot, proxy)
            }
            Event::Inject(r) => {
                if self.ff.enabled {
                    self.disturb();
                }
                self.inject(Ramp(r))
            }
        }
    }

    /// A thread waking that will run its program's code (not a command of
    /// its declared loop) ends a steady state.
    #[inline(always)]
    fn disturb_unless_scripted(&mut self, tid: ThreadId) {
        if self.ff.enabled && !self.thread_event_in_shape(tid) {
            self.disturb();
        }
    }

    /// Stores a new bus request (and makes room for its staged bytes).
    #[inline(always)]
    pub(crate) fn new_op(&mut self, mut op: BusOp) -> OpId {
        if op.requester.chip() != op.target.chip() {
            op.leg = crate::bus::Leg::ToBif;
        }
        let id = self.ops.insert(op);
        if self.ff.recording {
            self.ff.created(id);
        }
        if self.staging.len() <= id as usize {
            self.staging.resize(id as usize + 1, [0; 128]);
        }
        self.counters.bus_requests += 1;
        id
    }

    #[inline(always)]
    pub(crate) fn schedule(&mut self, at: Cycle, e: Event) {
        self.calendar.schedule(at, e);
    }

    /// Makes sure chip `chip`'s command bus looks for work at the first bus
    /// edge at or after `t`.
    #[inline(always)]
    pub(crate) fn wake_command_bus(&mut self, chip: usize, t: Cycle) {
        let c = &mut self.chips[chip];
        let t = bus_edge(t).max(c.command_bus.next_free());
        c.cb_wake = Some(c.cb_wake.map_or(t, |w| w.min(t)));
        self.bus_wake = self.bus_wake.min(t);
    }

    /// Makes sure chip `chip`'s data arbiter runs at the first bus edge at or after `t`.
    #[inline(always)]
    pub(crate) fn wake_arbiter(&mut self, chip: usize, t: Cycle) {
        let c = &mut self.chips[chip];
        let t = bus_edge(t);
        c.arb_wake = Some(c.arb_wake.map_or(t, |w| w.min(t)));
        self.bus_wake = self.bus_wake.min(t);
    }

    /// Submits the next request of external thread `tid` at the current
    /// cycle: the thread that [`Machine::advance`] last handed back, once.
    pub fn submit(&mut self, tid: ThreadId, req: Request) -> Result<(), SimError> {
        if self.awaiting != Some(tid) {
            return Err(SimError::Usage(format!(
                "thread {tid} cannot make a request now: an external program makes one request \
                 each time advance() hands it back, and {}",
                match self.awaiting {
                    Some(t) => format!("thread {t} is the one handed back"),
                    None => "no thread is handed back".into(),
                }
            )));
        }
        self.awaiting = None;
        let r = self.submit_request(tid, req);
        if r.is_err() {
            // A refused request changed nothing: the program may go on.
            self.awaiting = Some(tid);
        }
        r
    }

    /// One bus cycle in SPU cycles.
    pub(crate) const BUS: Cycle = BUS_RATIO;
}

/// Each chip's memory controller. Where each DRAM's refresh falls relative
/// to the program's start is a matter of chance on the real machine: it is
/// drawn from the seed (its own stream).
fn memory_controllers(cfg: &MachineConfig, seed: u64) -> Vec<Mic> {
    let interval = cfg.clock().ns_to_cycles(cfg.mic.refresh_interval_ns).max(1);
    let mut phases = Rng::stream(seed, REFRESH_STREAM);
    (0..cfg.chips as u64)
        .map(|chip| {
            let noise = Rng::stream(seed, LATENCY_NOISE_STREAM + chip);
            Mic::new(cfg, phases.below(interval), noise)
        })
        .collect()
}

/// The random stream of the DRAM refresh phases (see [`Rng::stream`]).
const REFRESH_STREAM: u64 = 1;
/// The random streams of each chip's read latency noise (`mic.latency_noise`).
const LATENCY_NOISE_STREAM: u64 = 2;

/// The logical-to-physical SPE placement a new machine starts with.
///
/// `random`: libspe's view, any SPE of the machine in a seeded order (on a
/// blade a PPE program's pthreads run on both chips' PPEs, and each context
/// lands on a free SPE near its thread). `local`: the same order within each
/// chip, chip 0's SPEs first (spufs prefers SPEs on the node of the PPE
/// thread: a program whose threads stay on chip 0). On one chip both are the same.
fn place(cfg: &MachineConfig, rng: &mut Rng) -> Vec<u8> {
    match &cfg.placement {
        Placement::Explicit(v) => v.iter().map(|&p| p as u8).collect(),
        Placement::Named(n) if n == "identity" => cfg.spes.iter().map(|&p| p as u8).collect(),
        Placement::Named(n) if n == "local" => {
            let mut out = Vec::new();
            for chip in 0..cfg.chips as usize {
                let mut v: Vec<u8> = cfg
                    .spes
                    .iter()
                    .filter(|&&p| p as usize / SPES_PER_CHIP == chip)
                    .map(|&p| p as u8)
                    .collect();
                rng.shuffle(&mut v);
                out.extend(v);
            }
            out
        }
        Placement::Named(_) => {
            let mut v: Vec<u8> = cfg.spes.iter().map(|&p| p as u8).collect();
            rng.shuffle(&mut v);
            v
        }
    }
}
