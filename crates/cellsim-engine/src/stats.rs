//! What a run did, counted: the machine-wide totals that benchmarks and
//! experiments read (`Machine::stats`), gathered from each part's own
//! counters. Per-chip values are listed chip 0 first (ramps and rings of chip 1
//! follow chip 0's).

use crate::machine::{Counters, Machine};

/// Counters of a machine, from its start to now.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Simulated SPU cycles.
    pub cycles: u64,
    /// Simulated nanoseconds.
    pub ns: f64,
    /// The machine's own counters: events, MFC commands, bytes of gets and
    /// puts, bus requests.
    pub counters: Counters,
    /// EIB data transfers over every chip.
    pub transfers: u64,
    /// Their bytes.
    pub transfer_bytes: u64,
    /// Bytes each ramp sent.
    pub ramp_sent: Vec<u64>,
    /// Bytes each ramp received.
    pub ramp_received: Vec<u64>,
    /// Busy cycles of each ring segment, a row per ring.
    pub segment_busy: Vec<Vec<u64>>,
    /// Bytes of each BIF direction (two-chip machines).
    pub bif_bytes: Option<Vec<u64>>,
    /// Busy cycles of each BIF direction (two-chip machines).
    pub bif_busy_cycles: Option<Vec<u64>>,
    /// DRAM reads over every memory.
    pub mic_reads: u64,
    /// DRAM writes over every memory.
    pub mic_writes: u64,
    /// Bytes read from each memory bank.
    pub bank_read_bytes: Vec<u64>,
    /// Bytes written to each memory bank.
    pub bank_write_bytes: Vec<u64>,
    /// Data-arbiter rounds.
    pub arbiter_rounds: u64,
    /// Data-arbiter grant attempts.
    pub arbiter_attempts: u64,
}

impl Stats {
    /// The counters of `m` now.
    pub fn of(m: &Machine) -> Stats {
        let eibs: Vec<_> = m.eibs().map(|e| &e.stats).collect();
        let banks: Vec<_> = m.mics().iter().map(|b| &b.stats).collect();
        let (arbiter_rounds, arbiter_attempts) = m.arbiter_stats();
        Stats {
            cycles: m.now(),
            ns: m.now_ns(),
            counters: m.counters().clone(),
            transfers: eibs.iter().map(|e| e.transfers).sum(),
            transfer_bytes: eibs.iter().map(|e| e.bytes).sum(),
            ramp_sent: eibs.iter().flat_map(|e| e.sent).collect(),
            ramp_received: eibs.iter().flat_map(|e| e.received).collect(),
            segment_busy: eibs
                .iter()
                .flat_map(|e| e.segment_busy.iter().map(|r| r.to_vec()))
                .collect(),
            bif_bytes: m.bif().map(|b| b.links.iter().map(|l| l.bytes).collect()),
            bif_busy_cycles: m.bif().map(|b| b.links.iter().map(|l| l.busy).collect()),
            mic_reads: banks.iter().map(|b| b.reads).sum(),
            mic_writes: banks.iter().map(|b| b.writes).sum(),
            bank_read_bytes: banks.iter().map(|b| b.read_bytes).collect(),
            bank_write_bytes: banks.iter().map(|b| b.write_bytes).collect(),
            arbiter_rounds,
            arbiter_attempts,
        }
    }
}
