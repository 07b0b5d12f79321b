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
//!
//! A machine has one such controller per memory bank. On a dual-Cell blade
//! (`blade21`) the second chip's bank is reached through IOIF0 and the
//! coherent BIF link to the other chip: that bank's controller has a
//! [`Link`] in front, which adds its latency each way and carries the data at
//! its bandwidth (seed 002: about 7 GB/s).

use crate::bus::OpId;
use crate::config::MachineConfig;
use crate::time::Cycle;
use crate::topology::RAMPS;
use std::collections::VecDeque;

/// The link to a bank on another chip.
#[derive(Debug, Clone)]
pub struct Link {
    bytes_per_cycle: f64,
    latency: Cycle,
    free: Cycle,
}

impl Link {
    fn carry(&mut self, at: Cycle, bytes: u32) -> Cycle {
        let ser = ((bytes as f64 / self.bytes_per_cycle).ceil() as Cycle).max(1);
        let start = at.max(self.free);
        self.free = start + ser;
        start + ser + self.latency
    }
}

/// The parameters of one bank's controller, in cycles.
#[derive(Debug, Clone, Copy)]
pub struct BankTiming {
    /// DRAM reads in progress per requesting element.
    pub reads_per_requester: u32,
    /// DRAM read latency, cycles.
    pub dram_latency: Cycle,
    /// DRAM bytes per cycle.
    pub dram_bytes_per_cycle: f64,
    /// Write buffers.
    pub write_buffer_lines: u32,
    /// Link to another chip: bytes per cycle and latency, if the bank is remote.
    pub link: Option<(f64, Cycle)>,
}

/// Memory controller state.
#[derive(Debug, Clone)]
pub struct Mic {
    /// Towards the bank (requests, write data).
    link: Option<Link>,
    /// Back from the bank (read data): a link has a lane each way.
    link_back: Option<Link>,
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
    /// The (local) MIC of a machine.
    pub fn new(cfg: &MachineConfig) -> Mic {
        let t = cfg.timing();
        Mic::with(BankTiming {
            reads_per_requester: cfg.mic.reads_per_requester,
            dram_latency: t.dram_latency,
            dram_bytes_per_cycle: t.dram_bytes_per_cycle,
            write_buffer_lines: cfg.mic.write_buffer_lines,
            link: None,
        })
    }

    /// A bank controller with the given timing.
    pub fn with(t: BankTiming) -> Mic {
        Mic {
            link: t.link.map(|(bytes_per_cycle, latency)| Link {
                bytes_per_cycle,
                latency,
                free: 0,
            }),
            link_back: t.link.map(|(bytes_per_cycle, latency)| Link {
                bytes_per_cycle,
                latency,
                free: 0,
            }),
            reads_per_requester: t.reads_per_requester,
            reads_active: [0; RAMPS],
            reads_waiting: std::array::from_fn(|_| VecDeque::new()),
            dram_free: 0,
            dram_latency: t.dram_latency,
            dram_bytes_per_cycle: t.dram_bytes_per_cycle,
            write_buffers_free: t.write_buffer_lines,
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
        // A remote bank sees the request one link latency later.
        let seen = now + self.link.as_ref().map_or(0, |l| l.latency);
        let start = (seen + self.dram_latency.saturating_sub(burst)).max(self.dram_free);
        self.dram_free = start + burst;
        self.stats.reads += 1;
        self.stats.read_bytes += bytes as u64;
        match self.link_back.as_mut() {
            // The data comes back over the link.
            Some(link) => link.carry(start + burst, bytes),
            None => start + burst,
        }
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
        // A remote bank's data crosses the link first; the buffer (at the
        // IOIF) frees when the data has left on the link.
        let (at_dram, freed) = match self.link.as_mut() {
            Some(link) => {
                let there = link.carry(arrive, bytes);
                (there, there - link.latency)
            }
            None => (arrive, 0),
        };
        let start = at_dram.max(self.dram_free);
        self.dram_free = start + burst;
        self.stats.writes += 1;
        self.stats.write_bytes += bytes as u64;
        let drained = if self.link.is_some() {
            freed
        } else {
            start + burst
        };
        // Drains are kept sorted for `write_buffer`.
        let pos = self.drains.partition_point(|&d| d <= drained);
        self.drains.insert(pos, drained);
        drained
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
