//! Synthetic traffic straight onto the EIB, as network simulators measure
//! themselves: every ramp starts a 128-byte transfer to a uniformly random
//! other ramp with probability `rate` per bus cycle (Bernoulli injection). The
//! gaps between injections are drawn from the geometric distribution, so idle
//! cycles cost nothing here either. Transfers go through the command bus and
//! the data arbiter like any other bus request but move no bytes.

use super::{Event, Machine};
use crate::bus::{BusOp, Leg, OpKind, Owner, Space};
use crate::error::SimError;
use crate::time::Cycle;
use crate::topology::{Ramp, RAMPS};

impl Machine {
    /// Starts uniform random traffic at `rate` transfers per ramp per bus cycle.
    pub fn start_synthetic(&mut self, rate: f64) -> Result<(), SimError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(SimError::Usage(format!(
                "injection rate {rate} must be in (0, 1] transfers per ramp per bus cycle"
            )));
        }
        self.synthetic_rate = rate;
        for r in 0..RAMPS as u8 {
            let gap = self.rng.geometric(rate);
            self.schedule(self.now + gap * Self::BUS, Event::Inject(r));
        }
        Ok(())
    }

    pub(super) fn inject(&mut self, src: Ramp) {
        let now = self.now;
        let mut dst = self.rng.below(RAMPS as u64 - 1) as u8;
        if dst >= src.0 {
            dst += 1;
        }
        let op = BusOp {
            owner: Owner::Synthetic,
            kind: OpKind::Write,
            requester: src,
            target: Ramp(dst),
            size: 128,
            lsa: 0,
            remote: Space::None,
            queued_at: now,
            respond_at: Cycle::MAX,
            atomic: None,
            failed: false,
            leg: Leg::Within,
        };
        let id = self.new_op(op);
        // The source queue is unbounded, as in BookSim: a busy ramp queues.
        self.chips[0].bius[src.idx()].queue.push_back(id);
        self.wake_command_bus(0, now);
        let gap = self.rng.geometric(self.synthetic_rate);
        self.schedule(now + gap * Self::BUS, Event::Inject(src.0));
    }
}
