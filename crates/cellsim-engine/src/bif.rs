//! The Broadband Interface: the coherent link between the two chips of a
//! blade, through each chip's IOIF0 (Kistler et al. 2006: the BIF "operates over IOIF0"
//! and makes both chips "a single coherent network").
//!
//! Two things cross it:
//!
//! - **Commands.** A coherent command (one to main memory, which either
//!   chip's PPE may cache) is snooped by both chips, so its combined response
//!   waits for the other chip's address concentrator: the command crosses
//!   the link and its snoop response crosses back, two link latencies more
//!   than on one chip. A command to an element of the other chip (its local store,
//!   its registers, its memory) is forwarded there and answered back the
//!   same way.
//! - **Data.** A transfer between the chips crosses the sender's EIB to its
//!   IOIF0, the link, and the receiver's EIB from its IOIF0. Each direction
//!   of the link carries `link_gbs` after `link_latency_ns` (Jiménez-González et al. 2007: the
//!   other chip's memory "through the IO ... at 7 GB/s").
//!
//! [`Link`] is one direction's wire: its data leave in the order they arrive.

use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;

/// One direction of the link.
#[derive(Debug, Clone)]
pub struct Link {
    bytes_per_cycle: f64,
    latency: Cycle,
    free: Cycle,
    /// Bytes carried.
    pub bytes: u64,
    /// Cycles spent serialising data (for utilisation).
    pub busy: Cycle,
    /// With checks on: (start, end, bytes) of every transmission on the wire.
    pub log: Option<Vec<(Cycle, Cycle, u32)>>,
}

impl Link {
    /// An idle link of `bytes_per_cycle` and `latency` cycles.
    pub fn new(bytes_per_cycle: f64, latency: Cycle) -> Link {
        Link {
            bytes_per_cycle,
            latency,
            free: 0,
            bytes: 0,
            busy: 0,
            log: None,
        }
    }

    /// Cycles `bytes` take on the wire.
    #[inline]
    pub fn serialisation(&self, bytes: u32) -> Cycle {
        ((bytes as f64 / self.bytes_per_cycle).ceil() as Cycle).max(1)
    }

    /// Data of `bytes` ready to cross at `at`: returns when it has arrived on
    /// the other side (after the data ahead of it, its own wire time and the
    /// latency).
    pub fn carry(&mut self, at: Cycle, bytes: u32) -> Cycle {
        let ser = self.serialisation(bytes);
        let start = at.max(self.free);
        self.free = start + ser;
        self.bytes += bytes as u64;
        self.busy += ser;
        if let Some(log) = self.log.as_mut() {
            log.push((start, start + ser, bytes));
        }
        start + ser + self.latency
    }

    /// Checks the log: transmissions one at a time, none faster than the
    /// link's bandwidth.
    pub fn verify(&self) -> Result<(), String> {
        let Some(log) = &self.log else {
            return Err("checks were not enabled".into());
        };
        let mut end = 0;
        for &(s, e, b) in log {
            if s < end {
                return Err(format!(
                    "two transmissions at once on the link at cycle {s}"
                ));
            }
            if ((e - s) as f64) < b as f64 / self.bytes_per_cycle - 1e-9 {
                return Err(format!(
                    "{b} bytes in {} cycles at cycle {s}: faster than the link",
                    e - s
                ));
            }
            end = e;
        }
        Ok(())
    }

    /// The one-way latency.
    #[inline]
    pub fn latency(&self) -> Cycle {
        self.latency
    }
}

/// The BIF of a two-chip machine.
#[derive(Debug, Clone)]
pub struct Bif {
    /// `links[c]` carries data from chip `c` to the other chip.
    pub links: [Link; 2],
    /// Extra cycles a coherent command's combined response takes on a
    /// two-chip machine (the other chip's snoop).
    pub snoop: Cycle,
}

impl Bif {
    /// The link leaving chip `from`.
    #[inline]
    pub fn link(&mut self, from: usize) -> &mut Link {
        &mut self.links[from]
    }
}

/// Contract: a link's future is decided by when its wire is free (`free`);
/// `bytes` and `busy` are counters (the jump scales them), `log` is a check
/// (a state with one is not fast-forwarded), the rate and latency settings.
impl Part for Link {
    fn next_wake(&self) -> Option<Cycle> {
        None // carries what the arbiter hands it; nothing of its own
    }

    fn shape(&self, s: &mut Shape) {
        s.time(self.free);
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        shift(&mut self.free, dt);
    }
}

/// Contract: the BIF is its two links (its snoop delay is a setting).
impl Part for Bif {
    fn next_wake(&self) -> Option<Cycle> {
        None
    }

    fn shape(&self, s: &mut Shape) {
        self.links.iter().for_each(|l| l.shape(s));
    }

    fn shift(&mut self, from: Cycle, dt: Cycle) {
        self.links.iter_mut().for_each(|l| l.shift(from, dt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_serialises_its_data_then_adds_its_latency() {
        let mut l = Link::new(4.0, 100);
        assert_eq!(l.carry(0, 128), 32 + 100);
        // The next line queues behind the first on the wire.
        assert_eq!(l.carry(10, 128), 64 + 100);
        // An idle link takes it at once.
        assert_eq!(l.carry(1000, 16), 1004 + 100);
        assert_eq!(l.bytes, 272);
        assert_eq!(l.busy, 68);
    }

    /// The shape rule (see [`crate::part`]): the wire's free time decides,
    /// the counters do not.
    #[test]
    fn shape_rule() {
        use crate::part::{rule_holds, RuleCase};
        let now = 1000;
        let mut a = Link::new(4.0, 100);
        a.carry(now - 10, 128);
        let drive = |l: &mut Link| l.carry(now, 128) - now;
        let mut b = a.clone();
        b.bytes += 128;
        b.busy += 32;
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let mut b = a.clone();
        b.free += 1;
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::ShapesDiffer);
    }
}
