//! A log of every reservation, for proving the EIB's invariants in tests.
//!
//! [`OccupancyLog::verify`] checks, over a whole run, that no ring segment
//! carried two transfers in the same cycle (16 B per bus cycle per link), that
//! no element sent or received two transfers at once (its 16 B port), that no
//! ring carried more than its concurrent-transfer limit, and that the command
//! bus accepted at most one command per bus cycle.

use super::ring::Ring;
use super::Grant;
use crate::time::{Cycle, BUS_RATIO};
use crate::topology::{Ramp, RAMPS};

/// Every reservation made during a run.
#[derive(Debug, Default, Clone)]
pub struct OccupancyLog {
    /// (ring, segment, from, to) busy intervals.
    pub segments: Vec<(u8, u8, Cycle, Cycle)>,
    /// (ramp, from, to) sender port intervals.
    pub sends: Vec<(u8, Cycle, Cycle)>,
    /// (ramp, from, to) receiver port intervals.
    pub receives: Vec<(u8, Cycle, Cycle)>,
    /// (ring, start, end) transfer intervals.
    pub transfers: Vec<(u8, Cycle, Cycle)>,
    /// Cycles at which the command bus accepted a command, and its size in bytes.
    pub commands: Vec<(Cycle, u32)>,
}

impl OccupancyLog {
    pub(crate) fn record(
        &mut self,
        ring: &Ring,
        g: Grant,
        src: Ramp,
        dst: Ramp,
        hop: Cycle,
        end: Cycle,
    ) {
        let duration = g.beats_time;
        for k in 0..g.hops {
            let from = g.start + k as Cycle * hop;
            self.segments
                .push((g.ring, ring.segment(src, k) as u8, from, from + duration));
        }
        self.sends.push((src.0, g.start, g.start + duration));
        let at = g.start + g.hops as Cycle * hop;
        self.receives.push((dst.0, at, at + duration));
        self.transfers.push((g.ring, g.start, end));
    }

    /// Checks every invariant; the error names the first violation found.
    pub fn verify(&self, max_transfers_per_ring: usize) -> Result<(), String> {
        let mut seg: Vec<(u8, u8, Cycle, Cycle)> = self.segments.clone();
        seg.sort_unstable();
        for w in seg.windows(2) {
            if (w[0].0, w[0].1) == (w[1].0, w[1].1) && w[1].2 < w[0].3 {
                return Err(format!(
                    "ring {} segment {} carries two transfers at once: [{}, {}) and [{}, {})",
                    w[0].0, w[0].1, w[0].2, w[0].3, w[1].2, w[1].3
                ));
            }
        }
        for (name, list) in [("sends", &self.sends), ("receives", &self.receives)] {
            let mut l = list.clone();
            l.sort_unstable();
            for w in l.windows(2) {
                if w[0].0 == w[1].0 && w[1].1 < w[0].2 {
                    return Err(format!(
                        "ramp {} {name} two transfers at once: [{}, {}) and [{}, {})",
                        w[0].0, w[0].1, w[0].2, w[1].1, w[1].2
                    ));
                }
            }
        }
        // Concurrent transfers per ring: sweep start/end events.
        let rings = self
            .transfers
            .iter()
            .map(|t| t.0)
            .max()
            .map_or(0, |m| m as usize + 1);
        for r in 0..rings {
            let mut ev: Vec<(Cycle, i32)> = Vec::new();
            for &(ring, s, e) in &self.transfers {
                if ring as usize == r {
                    ev.push((s, 1));
                    ev.push((e, -1));
                }
            }
            ev.sort_unstable(); // ends (-1) sort before starts at the same cycle
            let mut live = 0;
            for (t, d) in ev {
                live += d;
                if live as usize > max_transfers_per_ring {
                    return Err(format!("ring {r} carries {live} transfers at cycle {t}"));
                }
            }
        }
        let mut last: Option<Cycle> = None;
        for &(t, bytes) in &self.commands {
            if bytes > 128 {
                return Err(format!(
                    "command of {bytes} bytes at cycle {t}: a command moves at most 128 B"
                ));
            }
            if t % BUS_RATIO != 0 {
                return Err(format!("command accepted off a bus edge at cycle {t}"));
            }
            if let Some(p) = last {
                if t < p + BUS_RATIO {
                    return Err(format!(
                        "two commands accepted within one bus cycle ({p} and {t})"
                    ));
                }
            }
            last = Some(t);
        }
        let _ = RAMPS;
        Ok(())
    }
}
