//! Synthetic load for the speed benchmark and the comparison with network
//! simulators: uniform random traffic with Bernoulli injection, the load
//! BookSim and CAMINOS call `uniform`. Every ramp starts a 128-byte transfer to
//! a uniformly random other ramp with probability `rate` per bus cycle; the
//! gaps between injections are drawn from the geometric distribution, so the
//! engine's injection port (`cellsim_engine::machine::injection`) spends one
//! event per transfer and none on idle cycles.

use cellsim_engine::machine::TrafficSource;
use cellsim_engine::rng::Rng;
use cellsim_engine::topology::{Ramp, RAMPS};
use cellsim_engine::{Machine, SimError};

/// Uniform random traffic at `rate` transfers per ramp per bus cycle.
#[derive(Debug, Clone, Copy)]
pub struct Uniform {
    /// `(1 - rate).ln()` for the gaps (none at rate 1: every gap is 1).
    ln_q: Option<f64>,
}

impl Uniform {
    /// The source; `rate` must be in (0, 1].
    pub fn new(rate: f64) -> Result<Uniform, SimError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(SimError::Usage(format!(
                "injection rate {rate} must be in (0, 1] transfers per ramp per bus cycle"
            )));
        }
        Ok(Uniform {
            ln_q: (rate < 1.0).then(|| (1.0 - rate).ln()),
        })
    }
}

impl TrafficSource for Uniform {
    fn gap(&mut self, _src: Ramp, rng: &mut Rng) -> Option<u64> {
        // As `rng.geometric(rate)`, without a logarithm per gap.
        Some(self.ln_q.map_or(1, |l| rng.geometric_ln(l)))
    }

    fn destination(&mut self, src: Ramp, rng: &mut Rng) -> Ramp {
        // uniform over the other ramps: draw among RAMPS - 1, skip the source
        let dst = rng.below(RAMPS as u64 - 1) as u8;
        Ramp(if dst >= src.0 { dst + 1 } else { dst })
    }
}

/// Starts uniform traffic at `rate` on `m` (see [`Uniform`] and
/// [`Machine::start_traffic`]: on a machine without programs; started again,
/// the new rate takes over from each ramp's next injection).
pub fn start_uniform(m: &mut Machine, rate: f64) -> Result<(), SimError> {
    m.start_traffic(Box::new(Uniform::new(rate)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_outside_0_1_is_refused() {
        for rate in [0.0, -0.5, 1.5, f64::NAN] {
            let e = Uniform::new(rate).unwrap_err().to_string();
            assert!(e.contains("must be in (0, 1]"), "{rate}: {e}");
        }
    }

    fn machine() -> Machine {
        let cfg = cellsim_engine::MachineConfig::load("qs20", &[]).unwrap();
        Machine::new(cfg, 3)
    }

    #[test]
    fn traffic_started_again_goes_on_as_one_longer_run() {
        let mut once = machine();
        start_uniform(&mut once, 0.05).unwrap();
        once.run_for(40_000).unwrap();
        let mut twice = machine();
        start_uniform(&mut twice, 0.05).unwrap();
        twice.run_for(15_000).unwrap();
        start_uniform(&mut twice, 0.05).unwrap();
        twice.run_for(25_000).unwrap();
        assert!(once.eib().stats.transfers > 0);
        assert_eq!(once.eib().stats.transfers, twice.eib().stats.transfers);
        assert_eq!(once.counters().events, twice.counters().events);
        assert_eq!(once.arbiter_stats(), twice.arbiter_stats());
    }

    #[test]
    fn traffic_is_refused_on_a_machine_with_programs() {
        let mut m = machine();
        m.spawn_native(0, 0, 0, |_spu| async move { 0 }).unwrap();
        let e = start_uniform(&mut m, 0.01).unwrap_err().to_string();
        assert!(
            e.contains("without programs, and 1 program(s) are loaded"),
            "{e}"
        );
        assert!(!m.has_traffic(), "nothing started");
    }

    #[test]
    fn destinations_are_every_other_ramp_and_never_the_source() {
        let mut u = Uniform::new(0.5).unwrap();
        let mut rng = Rng::new(7);
        for src in 0..RAMPS as u8 {
            let mut seen = [false; RAMPS];
            for _ in 0..2000 {
                let d = u.destination(Ramp(src), &mut rng);
                assert_ne!(d, Ramp(src));
                seen[d.idx()] = true;
            }
            assert_eq!(
                seen.iter().filter(|&&s| s).count(),
                RAMPS - 1,
                "source {src}"
            );
        }
    }
}
