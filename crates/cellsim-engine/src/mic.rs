//! The memory interface controller and its DRAM.
//!
//! Reads: the MIC sees a read when the command bus reflects it
//! (`snoop_bus_cycles` after acceptance) and starts the DRAM access at once,
//! overlapping the coherence phase, so a single small get costs little more
//! than a get from a local store (Kistler et al. 2006: under 100 ns against 91 ns).
//!
//! **The requester's window.** The MIC keeps at most `reads_per_requester`
//! requests in progress for any one element; further ones from that element
//! wait their turn. A single SPE streaming from memory is therefore bounded
//! by that window over the latency (Kistler et al. 2006: 15 GB/s for a blocking 16 KB
//! get), while two SPEs together saturate the memory ("two or more get
//! sources saturate the bandwidth"). A read's slot frees when its data
//! leaves on the EIB. Whether writes take slots too depends on the board
//! (`window_counts_writes`): on Kistler et al. 2006's board one SPE's puts reach the
//! full 25.6 GB/s, so they do not; on Jiménez-González et al. 2007's blade one SPE reaches
//! "10 GB/s regardless of the operation", so they do — a write holds its
//! slot from the MIC's snoop until its acknowledgement.
//!
//! Writes are posted: data lands in one of `write_buffer_lines` buffers, the
//! put is complete as soon as it has (architecture notes), and the buffer
//! drains into DRAM. The arbiter sends data to the MIC only when a buffer is
//! free.
//!
//! DRAM: one data bus at `dram_gbs`, reads and writes together, served in the
//! order the MIC schedules them. Every `refresh_interval_ns` the DRAM is
//! refreshed for `refresh_ns`, and no access may overlap a refresh (Jiménez-González et al. 2007
//! names refresh among what keeps a bank below its peak): the requests that
//! meet one wait, so DMAs under load do not all take the same time.
//!
//! **Variants** (the XDR's organisation and timings are in no document we
//! have): with `mic.dram = "banks"` the DRAM has `mic.banks` banks, lines
//! interleaved over them, each with one open row of `mic.row_bytes`; an
//! access to another row of a bank first closes and opens it
//! (`mic.row_miss_ns`), and accesses are served in order, so a row miss
//! holds the data bus for everything behind it. One sequential stream opens
//! each bank's next row once per `banks x row_bytes`; many streams
//! interleaved at the MIC keep closing each other's rows. With
//! `mic.turnaround = "gap"` the data bus idles `mic.turnaround_ns` whenever
//! it turns from reads to writes or back. With `mic.write_drain = "batch"`
//! reads go first: a write that finds the data bus busy waits in its buffer
//! until `mic.drain_lines` writes have gathered (or the buffers run out) and
//! they drain back to back, one turn for the batch; a write that finds the
//! bus idle drains at once. Under load the bus turns once a batch; a lone
//! stream that mixes reads and writes still turns at nearly every write.
//! With `mic.partial_write = "rmw"` a write of less than a line (a 16-byte
//! notification put) is a read-modify-write: the MIC reads the whole line
//! from DRAM, merges the bytes and writes the line back, so a small write
//! costs two line bursts and a read's latency in place of its own short
//! burst.
//!
//! Each chip has one such controller in front of its own memory. A request
//! from the other chip of a blade reaches it through the BIF and the chip's
//! IOIF0 with its requester's identity (the data must find their way back),
//! and counts against that requester's window like a local one.

use crate::bus::OpId;
use crate::config::MachineConfig;
use crate::part::Part;
use crate::rng::Rng;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::RAMP_INDICES;

/// Requesters a MIC may see: every ramp of a two-chip machine.
const REQUESTERS: usize = RAMP_INDICES;
use std::collections::VecDeque;

/// The parameters of one bank's controller, in cycles.
#[derive(Debug, Clone, Copy)]
pub struct BankTiming {
    /// Requests in progress per requesting element (the requester's window).
    pub reads_per_requester: u32,
    /// Writes take window slots too.
    pub window_counts_writes: bool,
    /// Refresh: every `.0` cycles the DRAM is busy for `.1` cycles (`.1` = 0: none),
    /// the first one at `.2`.
    pub refresh: (Cycle, Cycle, Cycle),
    /// DRAM read latency, cycles.
    pub dram_latency: Cycle,
    /// DRAM bytes per cycle.
    pub dram_bytes_per_cycle: f64,
    /// Write buffers.
    pub write_buffer_lines: u32,
    /// DRAM banks with open rows (variant `mic.dram = "banks"`): banks,
    /// row bytes, row-miss cycles.
    pub banks: Option<(u32, u32, Cycle)>,
    /// Read/write turnaround of the data bus, cycles (variant `mic.turnaround`; 0: none).
    pub turnaround: Cycle,
    /// Writes of less than a line read the line first (variant `mic.partial_write`).
    pub partial_rmw: bool,
    /// Writes gathered before a batch drains (variant `mic.write_drain =
    /// "batch"`; 0: each write drains as it arrives).
    pub drain_lines: u32,
    /// The widest extra latency of a read, cycles (variant `mic.latency_noise
    /// = "uniform"`; 0: none).
    pub latency_noise: Cycle,
}

/// A write held in its buffer until its batch drains.
#[derive(Debug, Clone, Copy)]
struct HeldWrite {
    arrive: Cycle,
    addr: u64,
    burst: Cycle,
}

/// The DRAM's banks, each with one open row (see the module docs).
#[derive(Debug, Clone)]
struct Banks {
    /// Per bank: the open row + 1 (0: none).
    open: Vec<u64>,
    /// Per bank: when it may start its next column access.
    ready: Vec<Cycle>,
    line_shift: u32,
    row_lines_shift: u32,
    miss: Cycle,
}

impl Banks {
    /// The bank and row of address `addr`: lines interleaved over the banks.
    #[inline]
    fn of(&self, addr: u64) -> (usize, u64) {
        let line = addr >> self.line_shift;
        let n = self.open.len() as u64;
        ((line % n) as usize, (line / n) >> self.row_lines_shift)
    }

    /// The earliest start of a column access to `addr` at or after `t`,
    /// opening its row first if another is open.
    #[inline]
    fn earliest(&self, t: Cycle, addr: u64) -> Cycle {
        let (b, row) = self.of(addr);
        let t = t.max(self.ready[b]);
        if self.open[b] == row + 1 {
            t
        } else {
            t + self.miss
        }
    }

    /// A column access to `addr` runs until `end`: its row stays open.
    #[inline]
    fn accessed(&mut self, addr: u64, end: Cycle) {
        let (b, row) = self.of(addr);
        self.open[b] = row + 1;
        self.ready[b] = end;
    }
}

/// Memory controller state.
#[derive(Debug, Clone)]
pub struct Mic {
    /// Requests in progress allowed per requester.
    window: u32,
    window_counts_writes: bool,
    /// Per requester (a ramp of the machine): requests in progress, and
    /// those waiting for a slot.
    reads_active: [u32; REQUESTERS],
    reads_waiting: [VecDeque<OpId>; REQUESTERS],
    refresh_interval: Cycle,
    refresh_busy: Cycle,
    refresh_phase: Cycle,
    dram_free: Cycle,
    dram_latency: Cycle,
    dram_bytes_per_cycle: f64,
    write_buffers_free: u32,
    /// Cycles at which occupied write buffers drain, oldest first (DRAM
    /// writes are scheduled in order, so this is sorted).
    drains: VecDeque<Cycle>,
    banks: Option<Banks>,
    turnaround: Cycle,
    /// Banks or a turnaround are on (variants `mic.dram`, `mic.turnaround`).
    dram_variants: bool,
    /// The direction of the data bus's last access (writes: true).
    last_write: bool,
    partial_rmw: bool,
    drain_lines: u32,
    /// Writes waiting for their batch, oldest first (`drain_lines` > 0).
    held: VecDeque<HeldWrite>,
    /// Reads take `dram_latency` give or take half this many cycles, drawn from
    /// `noise` (0: none, and nothing is drawn).
    latency_noise: Cycle,
    noise: Rng,
    /// Draws made from `noise`: part of the shape, so that a run with noise is
    /// never taken for a steady state (its future is not its past's repeat).
    noise_draws: u64,
    /// Counters.
    pub stats: MicStats,
}

/// Memory traffic counters.
#[derive(Debug, Clone, Default)]
pub struct MicStats {
    /// DRAM reads.
    pub reads: u64,
    /// DRAM writes.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

impl Mic {
    /// A chip's MIC; its first refresh falls at `refresh_phase`, and its
    /// reads' latency noise (if any) draws from `noise`.
    pub fn new(cfg: &MachineConfig, refresh_phase: Cycle, noise: Rng) -> Mic {
        let t = cfg.timing();
        let clock = cfg.clock();
        let mut mic = Mic::with(BankTiming {
            reads_per_requester: cfg.mic.reads_per_requester,
            window_counts_writes: cfg.mic.window_counts_writes,
            refresh: (
                clock.ns_to_cycles(cfg.mic.refresh_interval_ns),
                clock.ns_to_cycles(cfg.mic.refresh_ns),
                refresh_phase,
            ),
            dram_latency: t.dram_latency,
            dram_bytes_per_cycle: t.dram_bytes_per_cycle,
            write_buffer_lines: cfg.mic.write_buffer_lines,
            banks: (cfg.mic.dram == crate::config::Dram::Banks).then(|| {
                (
                    cfg.mic.banks,
                    cfg.mic.row_bytes,
                    clock.ns_to_cycles(cfg.mic.row_miss_ns),
                )
            }),
            turnaround: match cfg.mic.turnaround {
                crate::config::Turnaround::None => 0,
                crate::config::Turnaround::Gap => clock.ns_to_cycles(cfg.mic.turnaround_ns),
            },
            partial_rmw: cfg.mic.partial_write == crate::config::PartialWrite::Rmw,
            drain_lines: match cfg.mic.write_drain {
                crate::config::WriteDrain::Arrival => 0,
                crate::config::WriteDrain::Batch => cfg.mic.drain_lines,
            },
            latency_noise: match cfg.mic.latency_noise {
                crate::config::LatencyNoise::None => 0,
                crate::config::LatencyNoise::Uniform => {
                    clock.ns_to_cycles(cfg.mic.latency_noise_ns)
                }
            },
        });
        mic.noise = noise;
        mic
    }

    /// A bank controller with the given timing.
    pub fn with(t: BankTiming) -> Mic {
        Mic {
            window: t.reads_per_requester,
            window_counts_writes: t.window_counts_writes,
            reads_active: [0; REQUESTERS],
            reads_waiting: std::array::from_fn(|_| VecDeque::new()),
            refresh_interval: t.refresh.0.max(1),
            refresh_busy: t.refresh.1,
            refresh_phase: t.refresh.2,
            dram_free: 0,
            dram_latency: t.dram_latency,
            dram_bytes_per_cycle: t.dram_bytes_per_cycle,
            write_buffers_free: t.write_buffer_lines,
            drains: VecDeque::new(),
            banks: t.banks.map(|(n, row_bytes, miss)| Banks {
                open: vec![0; n as usize],
                ready: vec![0; n as usize],
                line_shift: 7,
                row_lines_shift: (row_bytes / 128).max(1).trailing_zeros(),
                miss,
            }),
            turnaround: t.turnaround,
            dram_variants: t.banks.is_some() || t.turnaround > 0,
            last_write: false,
            partial_rmw: t.partial_rmw,
            drain_lines: t.drain_lines,
            held: VecDeque::new(),
            latency_noise: t.latency_noise,
            noise: Rng::new(0),
            noise_draws: 0,
            stats: MicStats::default(),
        }
    }

    #[inline]
    fn burst(&self, bytes: u32) -> Cycle {
        ((bytes as f64 / self.dram_bytes_per_cycle).ceil() as Cycle).max(1)
    }

    /// The first cycle at or after `t` at which an access of `burst` cycles
    /// can use the DRAM without overlapping a refresh.
    #[inline]
    fn past_refresh(&self, t: Cycle, burst: Cycle) -> Cycle {
        if self.refresh_busy == 0 || t < self.refresh_phase {
            return t;
        }
        let since = (t - self.refresh_phase) % self.refresh_interval;
        if since < self.refresh_busy {
            // Inside a refresh: wait for its end.
            t + self.refresh_busy - since
        } else if since + burst > self.refresh_interval {
            // Would run into the next one: wait for its end.
            t + self.refresh_interval - since + self.refresh_busy
        } else {
            t
        }
    }

    /// The DRAM data bus for `burst` cycles of an access to `addr`, not
    /// before `t`: returns the start. With the variants on, the access waits
    /// for its bank (and row) and for the bus to turn.
    #[inline]
    fn take_dram(&mut self, t: Cycle, burst: Cycle, addr: u64, write: bool) -> Cycle {
        if !self.dram_variants {
            // The default DRAM (flat, no turnaround): one check, not one per variant.
            let start = self.past_refresh(t.max(self.dram_free), burst);
            self.dram_free = start + burst;
            return start;
        }
        self.take_dram_with_variants(t, burst, addr, write)
    }

    /// [`Mic::take_dram`] with banks or a turnaround.
    #[inline(never)]
    fn take_dram_with_variants(&mut self, t: Cycle, burst: Cycle, addr: u64, write: bool) -> Cycle {
        // A bank opens its row while the bus carries other banks' data.
        let mut t = match &self.banks {
            Some(b) => b.earliest(t, addr),
            None => t,
        }
        .max(self.dram_free);
        if self.turnaround > 0 {
            if write != self.last_write {
                t = t.max(self.dram_free + self.turnaround);
            }
            self.last_write = write;
        }
        let start = self.past_refresh(t, burst);
        self.dram_free = start + burst;
        if let Some(b) = self.banks.as_mut() {
            b.accessed(addr, start + burst);
        }
        start
    }

    /// Whether a refresh of the DRAM overlaps cycles `from..to`.
    pub(crate) fn refresh_meets(&self, from: Cycle, to: Cycle) -> bool {
        if self.refresh_busy == 0 || to <= self.refresh_phase {
            return false;
        }
        let from = from.max(self.refresh_phase);
        // The refresh in progress or the last one before `from`, then the next.
        let k = (from - self.refresh_phase) / self.refresh_interval;
        let start = self.refresh_phase + k * self.refresh_interval;
        start + self.refresh_busy > from || start + self.refresh_interval < to
    }

    /// Whether writes take slots of the requester's window.
    #[inline]
    pub fn windows_writes(&self) -> bool {
        self.window_counts_writes
    }

    /// A write from `requester` is seen at `now`: whether it has a window
    /// slot (else it waits, and [`Mic::read_sent`]/[`Mic::write_done`] hand
    /// it on later). Only called when writes take slots.
    pub fn snoop_write(&mut self, requester: usize, op: OpId) -> bool {
        if self.reads_active[requester] < self.window {
            self.reads_active[requester] += 1;
            true
        } else {
            self.reads_waiting[requester].push_back(op);
            false
        }
    }

    /// A read from `requester` is seen at `now`. Returns the cycle its data is
    /// ready, or `None` if it must wait for a slot in the requester's window
    /// (it is then returned later by [`Mic::read_sent`]).
    pub fn snoop_read(
        &mut self,
        now: Cycle,
        requester: usize,
        op: OpId,
        addr: u64,
        bytes: u32,
    ) -> Option<Cycle> {
        if self.reads_active[requester] < self.window {
            self.reads_active[requester] += 1;
            Some(self.schedule_read(now, addr, bytes))
        } else {
            self.reads_waiting[requester].push_back(op);
            None
        }
    }

    /// Starts the DRAM access of a read that had waited for its window slot
    /// (see [`Mic::read_sent`]); returns when its data is ready.
    pub fn start_read(&mut self, now: Cycle, addr: u64, bytes: u32) -> Cycle {
        self.schedule_read(now, addr, bytes)
    }

    fn schedule_read(&mut self, now: Cycle, addr: u64, bytes: u32) -> Cycle {
        let burst = self.burst(bytes);
        let latency =
            (self.dram_latency + self.latency_noise_draw()).saturating_sub(self.latency_noise / 2);
        let start = self.take_dram(now + latency.saturating_sub(burst), burst, addr, false);
        self.stats.reads += 1;
        self.stats.read_bytes += bytes as u64;
        start + burst
    }

    /// A read's extra latency: 0 without noise (no draw), else uniform in
    /// `0..=latency_noise` cycles, from which the caller takes half the width:
    /// the calibrated latency stays the mean.
    #[inline]
    fn latency_noise_draw(&mut self) -> Cycle {
        if self.latency_noise == 0 {
            return 0;
        }
        self.noise_draws += 1;
        self.noise.below(self.latency_noise + 1)
    }

    /// A read's data left for `requester` (or a write of its was
    /// acknowledged): its window slot frees. Returns the next request of that
    /// requester waiting for a slot, which now has it: the machine starts a
    /// read's DRAM access ([`Mic::start_read`]) or lets a write's data go.
    pub fn release(&mut self, requester: usize) -> Option<OpId> {
        self.reads_active[requester] -= 1;
        let op = self.reads_waiting[requester].pop_front()?;
        self.reads_active[requester] += 1;
        Some(op)
    }

    /// Whether a write buffer is free at `now`; if not, the earliest cycle
    /// one drains (or `Cycle::MAX` if every buffer waits for data still on
    /// its way, whose arrival will free one later).
    #[inline]
    pub fn write_buffer(&mut self, now: Cycle) -> Result<(), Cycle> {
        while self.drains.front().is_some_and(|&t| t <= now) {
            self.drains.pop_front();
            self.write_buffers_free += 1;
        }
        if self.write_buffers_free > 0 {
            Ok(())
        } else {
            Err(self.drains.front().copied().unwrap_or(Cycle::MAX))
        }
    }

    /// Takes a write buffer for data that will arrive at `arrive`; returns
    /// when the buffer will have drained into DRAM, or `None` while the
    /// write waits for its batch (`mic.write_drain = "batch"`).
    pub fn write(&mut self, arrive: Cycle, addr: u64, bytes: u32) -> Option<Cycle> {
        debug_assert!(self.write_buffers_free > 0);
        self.write_buffers_free -= 1;
        let (arrive, bytes) = self.merge_partial(arrive, addr, bytes);
        self.stats.writes += 1;
        self.stats.write_bytes += bytes as u64;
        let burst = self.burst(bytes);
        if self.drain_lines == 0 {
            return Some(self.drain(arrive, addr, burst));
        }
        self.hold(HeldWrite {
            arrive,
            addr,
            burst,
        })
    }

    /// Write-drain batching: a write that finds the bus idle and nothing
    /// held drains at once; otherwise it is held, and the batch drains when
    /// it is `drain_lines` long or no buffer is left (a buffer must always
    /// have a known drain time, or the arbiter could wait for ever).
    fn hold(&mut self, w: HeldWrite) -> Option<Cycle> {
        if self.held.is_empty() && self.dram_free <= w.arrive {
            return Some(self.drain(w.arrive, w.addr, w.burst));
        }
        self.held.push_back(w);
        if self.held.len() < self.drain_lines as usize && self.write_buffers_free > 0 {
            return None;
        }
        // The batch goes once its last write is in; reads already scheduled
        // keep their places ahead of it.
        let ready = w.arrive;
        let mut last = ready;
        while let Some(h) = self.held.pop_front() {
            last = self.drain(ready, h.addr, h.burst);
        }
        Some(last)
    }

    /// One write's burst on the data bus, not before `t`; its buffer frees
    /// when the burst ends.
    fn drain(&mut self, t: Cycle, addr: u64, burst: Cycle) -> Cycle {
        let start = self.take_dram(t, burst, addr, true);
        let drained = start + burst;
        // Drains are kept sorted for `write_buffer`.
        let pos = self.drains.partition_point(|&d| d <= drained);
        self.drains.insert(pos, drained);
        drained
    }
}

/// Request `id` of a requester waited for a slot of its window at the MIC
/// and has it now: a read starts its DRAM access, a write's data may go.
pub(crate) fn window_slot_taken(
    mic: &mut Mic,
    op: &crate::bus::BusOp,
    id: OpId,
    now: Cycle,
    crossing: Cycle,
    calendar: &mut crate::calendar::Calendar<crate::machine::Event>,
) {
    let ready = match op.kind {
        crate::bus::OpKind::Read => {
            let crate::bus::Space::Memory(a) = op.remote else {
                unreachable!("only memory requests wait for a window slot")
            };
            mic.start_read(now, a, op.size)
        }
        crate::bus::OpKind::Write => now,
    };
    calendar.schedule(
        ready.max(op.data_may_leave(crossing)),
        crate::machine::Event::DataReady(id),
    );
}

/// Contract: the future of a MIC is decided by each requester's window
/// (`reads_active`, the requests waiting in `reads_waiting`), the DRAM's data
/// bus (`dram_free`; `last_write` when the bus pays to turn), the write
/// buffers (`write_buffers_free`, `drains`), with write-drain batching the
/// writes held for their batch (`held`: arrival, burst, and the address when
/// banks make it matter) and, with banks, each bank's open row and ready time. Left out: the refresh (`refresh_phase` and its
/// period: the phase moves on with time, so the jump asks
/// [`Mic::refresh_meets`] instead), the settings fixed at build and `stats`
/// (counters, which the jump scales).
impl Part for Mic {
    fn next_wake(&self) -> Option<Cycle> {
        // The MIC acts only on the calendar's events (snoops, data ready).
        None
    }

    fn shape(&self, s: &mut Shape) {
        self.reads_active.iter().for_each(|&n| s.raw(n as u64));
        for q in &self.reads_waiting {
            s.raw(q.len() as u64);
            q.iter().for_each(|&op| s.op(op));
        }
        s.time(self.dram_free);
        s.raw(self.write_buffers_free as u64);
        s.raw(self.drains.len() as u64);
        self.drains.iter().for_each(|&t| s.time(t));
        if self.turnaround > 0 {
            s.raw(self.last_write as u64);
        }
        if self.drain_lines > 0 {
            s.raw(self.held.len() as u64);
            for w in &self.held {
                s.time(w.arrive);
                s.raw(w.burst);
                if self.banks.is_some() {
                    s.raw(w.addr);
                }
            }
        }
        if self.latency_noise > 0 {
            s.raw(self.noise_draws);
        }
        if let Some(b) = &self.banks {
            // A bank's row is an address: progress, but which row is open
            // decides hit or miss. The rows relative to each other would be
            // exact; a jump keeps them only if every bank's row is the same
            // distance ahead, so the open rows are compared as they are and
            // a stream that moves on to new rows is simply never "steady".
            b.open.iter().for_each(|&r| s.raw(r));
            b.ready.iter().for_each(|&t| s.time(t));
        }
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        shift(&mut self.dram_free, dt);
        self.drains.iter_mut().for_each(|t| shift(t, dt));
        self.held.iter_mut().for_each(|w| shift(&mut w.arrive, dt));
        if let Some(b) = self.banks.as_mut() {
            b.ready.iter_mut().for_each(|t| shift(t, dt));
        }
    }
}

impl Mic {
    /// With `mic.partial_write = "rmw"`, a write of less than a line first
    /// reads its line (a DRAM read, latency and burst) once its data is
    /// here; returns when the merged write may start and its size (the
    /// whole line). Other writes pass unchanged.
    fn merge_partial(&mut self, arrive: Cycle, addr: u64, bytes: u32) -> (Cycle, u32) {
        const LINE: u32 = 128;
        if !self.partial_rmw || bytes >= LINE {
            return (arrive, bytes);
        }
        let line = addr & !(LINE as u64 - 1);
        let merged = self.schedule_read(arrive, line, LINE);
        (merged, LINE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mic(overrides: &[&str]) -> (Mic, crate::config::Timing) {
        let mut o: Vec<String> = vec!["mic.refresh_ns=0".into()];
        o.extend(overrides.iter().map(|s| s.to_string()));
        let cfg = MachineConfig::load("qs20-1chip", &o).unwrap();
        (Mic::new(&cfg, 0, Rng::new(0)), cfg.timing())
    }

    #[test]
    fn a_requester_gets_a_bounded_window_of_reads() {
        let (mut m, t) = mic(&["mic.reads_per_requester=2"]);
        let lat = t.dram_latency;
        assert_eq!(m.snoop_read(0, 3, 0, 0, 128), Some(lat));
        assert_eq!(
            m.snoop_read(0, 3, 1, 128, 128),
            Some(lat + 16),
            "DRAM bus: 128 B per 16 cycles"
        );
        assert_eq!(m.snoop_read(0, 3, 2, 256, 128), None, "window full");
        assert!(
            m.snoop_read(0, 4, 3, 384, 128).is_some(),
            "another requester has its own window"
        );
        assert_eq!(m.release(3), Some(2), "the waiting read takes the slot");
        assert_eq!(m.start_read(200, 0, 128), 200 + lat);
    }

    #[test]
    fn writes_take_window_slots_only_where_the_board_says_so() {
        let (mut m, _) = mic(&["mic.reads_per_requester=1", "mic.window_counts_writes=true"]);
        assert!(m.windows_writes());
        assert!(m.snoop_write(3, 0));
        assert!(!m.snoop_write(3, 1), "one slot, taken by the first write");
        assert!(
            m.snoop_read(0, 3, 2, 256, 128).is_none(),
            "reads share the window"
        );
        assert_eq!(m.release(3), Some(1));
        assert_eq!(m.release(3), Some(2));
        let (m, _) = mic(&[]);
        assert!(
            !m.windows_writes(),
            "qs20: puts are posted outside the window"
        );
    }

    #[test]
    fn a_partial_write_reads_its_line_first_only_in_the_rmw_variant() {
        let (mut posted, _) = mic(&[]);
        assert_eq!(posted.write(10, 16, 16), Some(12), "16 B: a 2-cycle burst");
        let (mut rmw, t) = mic(&["mic.partial_write=rmw"]);
        let drained = rmw.write(10, 16, 16).unwrap();
        assert_eq!(
            drained,
            10 + t.dram_latency + 16,
            "the line's read, then its write"
        );
        assert_eq!((rmw.stats.reads, rmw.stats.write_bytes), (1, 128));
        assert_eq!(
            rmw.write(drained, 256, 128),
            Some(drained + 16),
            "a whole line is written as it is"
        );
    }

    #[test]
    fn writes_are_posted_into_buffers() {
        let (mut m, _) = mic(&["mic.write_buffer_lines=1"]);
        assert_eq!(m.write_buffer(0), Ok(()));
        assert_eq!(m.write(10, 0, 128), Some(26), "drains after its DRAM burst");
        assert_eq!(m.write_buffer(12), Err(26), "full until then");
        assert_eq!(m.write_buffer(26), Ok(()));
    }

    #[test]
    fn read_latency_noise_is_centred_on_the_latency_and_draws_only_when_on() {
        let noisy = ["mic.latency_noise=uniform", "mic.latency_noise_ns=10"];
        let (mut m, t) = mic(&noisy);
        let lat = t.dram_latency as i64;
        let half = 16; // 10 ns at 3.2 GHz is 32 cycles, give or take 16
        let took: Vec<i64> = (0..2000)
            .map(|k| {
                let now = k * 1000;
                m.start_read(now, 0, 128) as i64 - now as i64
            })
            .collect();
        assert!(took.iter().all(|&d| (lat - half..=lat + half).contains(&d)));
        let mean = took.iter().sum::<i64>() as f64 / took.len() as f64;
        assert!((mean - lat as f64).abs() < 1.0, "mean {mean} against {lat}");
        let distinct: std::collections::BTreeSet<_> = took.iter().collect();
        assert_eq!(distinct.len(), 33, "every value of the range comes up");
        assert_eq!(m.noise_draws, 2000);
        // The same stream draws the same latencies; without noise nothing is drawn.
        let (mut again, _) = mic(&noisy);
        assert_eq!(again.start_read(0, 0, 128) as i64, took[0]);
        let (mut quiet, _) = mic(&[]);
        assert_eq!(quiet.start_read(0, 0, 128) as i64, lat);
        assert_eq!(quiet.noise_draws, 0);
    }

    #[test]
    fn read_latency_noise_wider_than_twice_the_latency_is_refused() {
        let e = MachineConfig::load(
            "qs20-1chip",
            &[
                "mic.latency_noise=uniform".into(),
                "mic.latency_noise_ns=100".into(),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("mic.latency_noise_ns"), "{e}");
    }

    #[test]
    fn no_access_overlaps_a_refresh() {
        let cfg = MachineConfig::load(
            "qs20-1chip",
            &[
                "mic.refresh_interval_ns=1000".into(),
                "mic.refresh_ns=100".into(),
            ],
        )
        .unwrap();
        let (interval, busy) = (3200, 320); // cycles at 3.2 GHz
        let lat = cfg.timing().dram_latency;
        let fresh = || Mic::new(&cfg, 1000, Rng::new(0));
        // Before the first refresh (at 1000): as without refresh.
        assert_eq!(fresh().snoop_read(0, 3, 0, 0, 128), Some(lat));
        // A read whose burst would start inside the refresh waits for its end.
        let inside = 1000 + 50 - (lat - 16);
        assert_eq!(fresh().start_read(inside, 0, 128), 1000 + busy + 16);
        // A burst that would run into the next refresh waits past it too.
        let edge = 1000 + interval - 8 - (lat - 16);
        assert_eq!(
            fresh().start_read(edge, 0, 128),
            1000 + interval + busy + 16
        );
        // Between refreshes nothing changes.
        let mid = 1000 + interval / 2;
        assert_eq!(fresh().start_read(mid, 0, 128), mid + lat);
    }

    #[test]
    fn a_row_miss_waits_for_the_bank_and_a_row_hit_does_not() {
        let (mut m, t) = mic(&[
            "mic.dram=banks",
            "mic.banks=2",
            "mic.row_bytes=256",
            "mic.row_miss_ns=10",
        ]);
        let (lat, miss) = (t.dram_latency, 32); // 10 ns at 3.2 GHz
                                                // Lines alternate over the two banks; a bank's row holds two lines.
        assert_eq!(m.start_read(0, 0, 128), lat + miss, "bank 0 opens row 0");
        let t1 = 1000;
        assert_eq!(
            m.start_read(t1, 256, 128),
            t1 + lat,
            "bank 0, row 0 again: a hit"
        );
        let t2 = 2000;
        assert_eq!(
            m.start_read(t2, 512, 128),
            t2 + lat + miss,
            "bank 0, row 1: a miss"
        );
        assert_eq!(
            m.start_read(3000, 128, 128),
            3000 + lat + miss,
            "bank 1 opens its first row"
        );
    }

    #[test]
    fn the_data_bus_pays_a_gap_to_turn_between_reads_and_writes() {
        let (mut m, t) = mic(&["mic.turnaround=gap", "mic.turnaround_ns=10"]);
        let lat = t.dram_latency;
        let r = m.start_read(0, 0, 128);
        assert_eq!(r, lat);
        // A write arriving as the read's burst ends waits for the turn.
        assert_eq!(m.write(r, 4096, 128), Some(r + 32 + 16));
        // Two reads in a row pay nothing more than their bursts.
        let (mut m, _) = mic(&["mic.turnaround=gap", "mic.turnaround_ns=10"]);
        let a = m.start_read(0, 0, 128);
        assert_eq!(m.start_read(0, 128, 128), a + 16);
    }

    /// The shape rule (see [`crate::part`]) for a MIC in the middle of
    /// reads and writes, with both DRAM variants on.
    #[test]
    fn shape_rule() {
        use crate::part::{each_in_shape, left_out_but_decides, rule_holds, Perturb, RuleCase};
        let now = 10_000;
        let (mut a, _) = mic(&[
            "mic.write_drain=batch",
            "mic.turnaround=gap",
            "mic.dram=banks",
            "mic.reads_per_requester=2",
        ]);
        for i in 0..3u64 {
            a.snoop_read(now - 100 + i * 10, 3, i as OpId, i * 128, 128);
        }
        a.write(now - 20, 4096, 128);
        // What the MIC does next, relative to now.
        let drive = |m: &mut Mic| {
            let read = m.snoop_read(now, 3, 9, 512, 128).map(|t| t - now);
            let other = m.snoop_read(now, 4, 10, 1 << 20, 128).map(|t| t - now);
            let buffer = m.write_buffer(now).map_err(|t| t - now);
            let drained = m.write(now + 5, 8192, 128).map(|t| t - now);
            (read, other, buffer, drained, m.release(3))
        };
        let counters = |m: &mut Mic| m.stats.reads += 7;
        let mut b = a.clone();
        counters(&mut b);
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let decide: [Perturb<Mic>; 7] = [
            ("dram_free", |m| m.dram_free += 3),
            ("last_write", |m| m.last_write = !m.last_write),
            ("reads_active", |m| m.reads_active[4] += 1),
            ("write_buffers_free", |m| m.write_buffers_free -= 1),
            ("open row", |m| m.banks.as_mut().unwrap().open[4] += 1),
            ("reads_waiting", |m| m.reads_waiting[3].push_back(77)),
            ("held", |m| {
                m.held.push_back(HeldWrite {
                    arrive: 9_990,
                    addr: 0,
                    burst: 16,
                })
            }),
        ];
        each_in_shape(&a, now, drive, &decide);
        // The refresh's phase is left out (it moves on with time) and
        // decides when accesses run: the jump asks `refresh_meets` instead.
        let (a, _) = mic(&["mic.refresh_ns=100", "mic.refresh_interval_ns=1000"]);
        let mut b = a.clone();
        b.refresh_phase = now; // a refresh starts now: the read waits for its end
        let start = |m: &mut Mic| m.start_read(now, 0, 128) - now;
        left_out_but_decides(&a, &b, now, start);
        assert_ne!(
            a.refresh_meets(now, now + 400),
            b.refresh_meets(now, now + 400)
        );
    }

    #[test]
    fn writes_that_find_the_bus_busy_drain_in_batches_behind_the_reads() {
        let (mut m, t) = mic(&[
            "mic.write_drain=batch",
            "mic.drain_lines=2",
            "mic.turnaround=gap",
            "mic.turnaround_ns=10",
        ]);
        let lat = t.dram_latency;
        // An idle bus: the write drains at once (turning from the reset's reads).
        assert_eq!(m.write(0, 0, 128), Some(32 + 16));
        // A read keeps the bus busy; the next write is held...
        let r = m.start_read(100, 128, 128);
        assert_eq!(r, 100 + lat, "long after the write: no wait to turn");
        assert_eq!(m.write(r - 8, 256, 128), None, "held: the bus is busy");
        // ...and a later read goes ahead of it.
        let r2 = m.start_read(101, 384, 128);
        assert_eq!(r2, r + 16, "the read does not wait for the held write");
        // The second write completes the batch: both drain, one turn.
        assert_eq!(m.write(r2, 512, 128), Some(r2 + 32 + 16 + 16));
    }

    #[test]
    fn a_batch_drains_when_the_buffers_run_out() {
        let (mut m, _) = mic(&[
            "mic.write_drain=batch",
            "mic.drain_lines=4",
            "mic.write_buffer_lines=4",
        ]);
        let _ = m.start_read(0, 0, 128);
        assert_eq!(m.write(1, 128, 128), None);
        assert_eq!(m.write(1, 256, 128), None);
        assert_eq!(m.write(1, 384, 128), None);
        assert!(
            m.write(1, 512, 128).is_some(),
            "the last buffer drains the batch"
        );
        assert!(m.write_buffer(1).is_err(), "all four taken, drains known");
    }
}
