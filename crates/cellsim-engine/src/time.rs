//! Simulated time.
//!
//! The engine counts in **SPU clock cycles** ([`Cycle`]). The EIB, the MFC and the
//! BIU run at half the core clock (architecture notes, "Clocks"), so bus activity
//! happens only on even cycles: [`bus_edge`] rounds a time up to the next one.

/// A point in simulated time or a duration, in SPU (core) clock cycles.
pub type Cycle = u64;

/// SPU cycles per bus cycle: the EIB runs at half the core clock on every Cell.
pub const BUS_RATIO: Cycle = 2;

/// Converts a duration in bus cycles to SPU cycles.
#[inline]
pub const fn bus(bus_cycles: u64) -> Cycle {
    bus_cycles * BUS_RATIO
}

/// The first bus edge (even SPU cycle) at or after `t`.
#[inline]
pub const fn bus_edge(t: Cycle) -> Cycle {
    (t + BUS_RATIO - 1) & !(BUS_RATIO - 1)
}

/// `now + cycles`, if the calendar can hold it: simulated time is checked
/// arithmetic, and `Cycle::MAX` means "never".
#[inline]
pub fn later(now: Cycle, cycles: Cycle) -> Option<Cycle> {
    now.checked_add(cycles).filter(|&t| t < Cycle::MAX)
}

/// The error text for a duration that would take simulated time past what
/// the engine can count.
pub fn overflow_message(what: &str, now: Cycle) -> String {
    format!(
        "{what} at cycle {now} would end past the last cycle the simulator can count \
         (2**64 - 2); give a shorter duration"
    )
}

/// The core clock of a machine, for conversions between cycles and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Core clock frequency in Hz (3.2e9 on a QS20).
    pub hz: f64,
}

impl Clock {
    /// Nanoseconds per SPU cycle.
    #[inline]
    pub fn ns_per_cycle(&self) -> f64 {
        1e9 / self.hz
    }

    /// A duration in nanoseconds as SPU cycles, rounded to the nearest cycle.
    #[inline]
    pub fn ns_to_cycles(&self, ns: f64) -> Cycle {
        (ns * self.hz / 1e9).round().max(0.0) as Cycle
    }

    /// A duration in SPU cycles as nanoseconds.
    #[inline]
    pub fn cycles_to_ns(&self, cycles: Cycle) -> f64 {
        cycles as f64 * 1e9 / self.hz
    }

    /// Bytes per SPU cycle for a bandwidth in GB/s (10^9 bytes per second).
    #[inline]
    pub fn gbs_to_bytes_per_cycle(&self, gbs: f64) -> f64 {
        gbs * 1e9 / self.hz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_edges_are_even() {
        assert_eq!(bus_edge(0), 0);
        assert_eq!(bus_edge(1), 2);
        assert_eq!(bus_edge(2), 2);
        assert_eq!(bus(50), 100);
    }

    #[test]
    fn clock_conversions_round_trip() {
        let c = Clock { hz: 3.2e9 };
        assert_eq!(c.ns_to_cycles(90.625), 290);
        assert!((c.cycles_to_ns(290) - 90.625).abs() < 1e-9);
        assert!((c.gbs_to_bytes_per_cycle(25.6) - 8.0).abs() < 1e-12);
    }
}
