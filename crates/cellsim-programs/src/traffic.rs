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

/// Starts uniform traffic at `rate` on `m` (see [`Uniform`]).
pub fn start_uniform(m: &mut Machine, rate: f64) -> Result<(), SimError> {
    m.start_traffic(Box::new(Uniform::new(rate)?));
    Ok(())
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
