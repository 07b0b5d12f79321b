//! The injection port: synthetic bus transfers straight onto the EIB, as
//! network simulators measure themselves. The engine owns the timing (one
//! event per injection, so idle cycles cost nothing) and the transfer (a
//! 128-byte write through the command bus and the data arbiter like any other
//! bus request, moving no bytes); a [`TrafficSource`] outside the engine
//! decides when each ramp injects and where to, as BookSim keeps its traffic
//! patterns and injection processes apart from the network
//! (`cellsim_programs::traffic` has the uniform Bernoulli source).

use super::{Event, Machine};
use crate::bus::{BusOp, OpKind, Owner, Space};
use crate::error::SimError;
use crate::rng::Rng;
use crate::topology::{Ramp, RAMPS};

/// When each ramp injects a transfer, and where it goes. Every random choice
/// is drawn from the machine's generator, which the engine lends, so a run
/// stays a function of its seed.
pub trait TrafficSource: Send {
    /// Bus cycles from now to ramp `src`'s next injection (at least 1), or
    /// `None` for none.
    fn gap(&mut self, src: Ramp, rng: &mut Rng) -> Option<u64>;
    /// The ramp a transfer injected at `src` now goes to (not `src`).
    fn destination(&mut self, src: Ramp, rng: &mut Rng) -> Ramp;
    /// An injection at `src` now: its destination, then the gap to `src`'s
    /// next injection, drawn in that order. The engine calls this, one
    /// dynamic call per injection (the default body calls the two above
    /// statically).
    fn inject(&mut self, src: Ramp, rng: &mut Rng) -> (Ramp, Option<u64>) {
        let dst = self.destination(src, rng);
        (dst, self.gap(src, rng))
    }
}

impl Machine {
    /// Starts synthetic traffic from `source` at every ramp of chip 0, on a
    /// machine without programs. Started again, `source` takes over from each
    /// ramp's next injection (already drawn), so a run continued with the
    /// same source is the same as one longer run.
    pub fn start_traffic(&mut self, mut source: Box<dyn TrafficSource>) -> Result<(), SimError> {
        let programs = self.threads.iter().filter(|t| !t.is_finished()).count();
        if programs > 0 {
            return Err(SimError::Usage(format!(
                "synthetic traffic runs on a machine without programs, and {programs} \
                 program(s) are loaded"
            )));
        }
        if self.traffic.is_none() {
            for r in 0..RAMPS as u8 {
                if let Some(gap) = source.gap(Ramp(r), &mut self.rng) {
                    self.schedule(self.now + gap * Self::BUS, Event::Inject(r));
                }
            }
        }
        self.traffic = Some(source);
        Ok(())
    }

    /// Whether synthetic traffic runs (it never ends, and no steady state covers it).
    pub fn has_traffic(&self) -> bool {
        self.traffic.is_some()
    }

    // Out of line: inlined into the step loop, its addresses (the op slab,
    // staging, the generator) are hoisted and spilled at every step.
    #[inline(never)]
    pub(super) fn inject(&mut self, src: Ramp) {
        // The source is borrowed beside the generator (not taken out and put
        // back: two moves of the box per injection). Nothing else draws from
        // the generator, so the next gap is drawn now, after the destination
        // as before.
        let Some(source) = self.traffic.as_mut() else {
            return;
        };
        let now = self.now;
        let (dst, gap) = source.inject(src, &mut self.rng);
        let op = BusOp::new(
            Owner::Synthetic,
            OpKind::Write,
            (src, dst),
            128,
            Space::None,
            now,
        );
        let id = self.new_op(op);
        // The source queue is unbounded, as in BookSim: a busy ramp queues.
        self.chips[0].bius[src.idx()].push(id, false);
        self.wake_command_bus(0, now);
        if let Some(gap) = gap {
            self.schedule(now + gap * Self::BUS, Event::Inject(src.0));
        }
    }
}
