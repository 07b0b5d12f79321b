//! The memory interface controller and its DRAM.
//!
//! Reads: the MIC sees a read when the command bus reflects it
//! (`snoop_bus_cycles` after acceptance) and starts the DRAM access at once,
//! overlapping the coherence phase, so a single small get costs little more
//! than a get from a local store (seed 000: under 100 ns against 91 ns). It
//! keeps at most `reads_per_requester` DRAM reads in progress for any one
//! element; further reads from that element wait their turn. A single SPE
//! streaming from memory is therefore bounded by that window over the DRAM
//! latency (seed 000: 15 GB/s for a blocking 16 KB get), while two SPEs
//! together saturate the memory ("two or more get sources saturate the
//! bandwidth"). A read's window slot frees when its data leaves on the EIB.
//!
//! Writes are posted: data lands in one of `write_buffer_lines` buffers, the
//! put is complete as soon as it has (architecture notes), and the buffer
//! drains into DRAM. The arbiter sends data to the MIC only when a buffer is
//! free.
//!
//! DRAM: one data bus at `dram_gbs`, reads and writes together, served in the
//! order the MIC schedules them.

use crate::bus::OpId;
use crate::config::MachineConfig;
use crate::time::Cycle;
use crate::topology::RAMPS;
use std::collections::VecDeque;

/// Memory controller state.
#[derive(Debug, Clone)]
pub struct Mic {
    reads_per_requester: u32,
    reads_active: [u32; RAMPS],
    reads_waiting: [VecDeque<OpId>; RAMPS],
    dram_free: Cycle,
    dram_latency: Cycle,
    dram_bytes_per_cycle: f64,
    write_buffers_free: u32,
    /// Cycles at which occupied write buffers drain, oldest first (DRAM
    /// writes are scheduled in order, so this is sorted).
    drains: VecDeque<Cycle>,
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
    /// The MIC of a machine.
    pub fn new(cfg: &MachineConfig) -> Mic {
        let t = cfg.timing();
        Mic {
            reads_per_requester: cfg.mic.reads_per_requester,
            reads_active: [0; RAMPS],
            reads_waiting: std::array::from_fn(|_| VecDeque::new()),
            dram_free: 0,
            dram_latency: t.dram_latency,
            dram_bytes_per_cycle: t.dram_bytes_per_cycle,
            write_buffers_free: cfg.mic.write_buffer_lines,
            drains: VecDeque::new(),
            stats: MicStats::default(),
        }
    }

    #[inline]
    fn burst(&self, bytes: u32) -> Cycle {
        ((bytes as f64 / self.dram_bytes_per_cycle).ceil() as Cycle).max(1)
    }

    /// A read from `requester` is seen at `now`. Returns the cycle its data is
    /// ready, or `None` if it must wait for a slot in the requester's window
    /// (it is then returned later by [`Mic::read_sent`]).
    pub fn snoop_read(
        &mut self,
        now: Cycle,
        requester: usize,
        op: OpId,
        bytes: u32,
    ) -> Option<Cycle> {
        if self.reads_active[requester] < self.reads_per_requester {
            self.reads_active[requester] += 1;
            Some(self.schedule_read(now, bytes))
        } else {
            self.reads_waiting[requester].push_back(op);
            None
        }
    }

    fn schedule_read(&mut self, now: Cycle, bytes: u32) -> Cycle {
        let burst = self.burst(bytes);
        let start = (now + self.dram_latency.saturating_sub(burst)).max(self.dram_free);
        self.dram_free = start + burst;
        self.stats.reads += 1;
        self.stats.read_bytes += bytes as u64;
        start + burst
    }

    /// A read's data left for `requester` at `now`: its window slot frees.
    /// Returns the next waiting read of that requester with its ready cycle.
    pub fn read_sent(
        &mut self,
        now: Cycle,
        requester: usize,
        size_of: impl Fn(OpId) -> u32,
    ) -> Option<(OpId, Cycle)> {
        self.reads_active[requester] -= 1;
        let op = self.reads_waiting[requester].pop_front()?;
        self.reads_active[requester] += 1;
        Some((op, self.schedule_read(now, size_of(op))))
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
    /// when the buffer will have drained into DRAM.
    pub fn write(&mut self, arrive: Cycle, bytes: u32) -> Cycle {
        debug_assert!(self.write_buffers_free > 0);
        self.write_buffers_free -= 1;
        let burst = self.burst(bytes);
        let start = arrive.max(self.dram_free);
        self.dram_free = start + burst;
        self.stats.writes += 1;
        self.stats.write_bytes += bytes as u64;
        self.drains.push_back(start + burst);
        start + burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requester_gets_a_bounded_window_of_reads() {
        let cfg = MachineConfig::load("qs20", &["mic.reads_per_requester=2".into()]).unwrap();
        let mut m = Mic::new(&cfg);
        let lat = cfg.timing().dram_latency;
        assert_eq!(m.snoop_read(0, 3, 0, 128), Some(lat));
        assert_eq!(
            m.snoop_read(0, 3, 1, 128),
            Some(lat + 16),
            "DRAM bus: 128 B per 16 cycles"
        );
        assert_eq!(m.snoop_read(0, 3, 2, 128), None, "window full");
        assert!(
            m.snoop_read(0, 4, 3, 128).is_some(),
            "another requester has its own window"
        );
        let (op, ready) = m.read_sent(200, 3, |_| 128).unwrap();
        assert_eq!(op, 2);
        assert_eq!(ready, 200 + lat);
    }

    #[test]
    fn writes_are_posted_into_buffers() {
        let cfg = MachineConfig::load("qs20", &["mic.write_buffer_lines=1".into()]).unwrap();
        let mut m = Mic::new(&cfg);
        assert_eq!(m.write_buffer(0), Ok(()));
        assert_eq!(m.write(10, 128), 26, "drains after its DRAM burst");
        assert_eq!(m.write_buffer(12), Err(26), "full until then");
        assert_eq!(m.write_buffer(26), Ok(()));
    }
}
