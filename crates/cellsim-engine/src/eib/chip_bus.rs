//! One chip's bus as a part: its EIB (rings and ports), data arbiter and
//! command bus, with the BIU of each of its elements, and the wake-ups of
//! the command bus and the arbiter.

use super::arbiter::DataArbiter;
use super::command_bus::{Biu, CommandBus};
use super::retry::Retries;
use super::Eib;
use crate::config::MachineConfig;
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Topology, RAMPS};

/// One chip's bus: its EIB (rings and ports), data arbiter and command bus,
/// with the BIU of each of its elements.
#[derive(Debug, Clone)]
pub(crate) struct ChipBus {
    pub(crate) eib: Eib,
    pub(crate) arbiter: DataArbiter,
    pub(crate) arb_wake: Option<Cycle>,
    pub(crate) command_bus: CommandBus,
    pub(crate) bius: [Biu; RAMPS],
    pub(crate) cb_wake: Option<Cycle>,
    /// Puts need an outbound line of their BIU (`biu.put_flow = "lines"`):
    /// the same for every BIU, read once per arbiter round.
    pub(crate) put_lines: bool,
    /// Puts need a credit or a line (either put flow-control variant): the
    /// data arbiter's round is the copy that checks them.
    pub(crate) put_flow: bool,
    /// The targets' command queues and the requesters' back-offs, when a
    /// full queue answers "retry" (`eib.command_retry = "target"`; see
    /// [`super::retry`]). The command bus's cycle and the arbiter's round
    /// have a copy for it, chosen once per call.
    pub(crate) retries: Option<Retries>,
    /// Put lines or retries: the command bus's cycle is one of the copies
    /// for the variants (one flag read per cycle, as before the retries).
    pub(crate) cb_variants: bool,
    /// Which copy of the arbiter's round runs: 0 no variant, 1 put flow
    /// control, 2 and 3 command retries without and with it.
    pub(crate) round_mode: u8,
}

impl ChipBus {
    pub(crate) fn new(cfg: &MachineConfig, topo: &Topology) -> ChipBus {
        let put_lines = cfg.biu.put_flow == crate::config::BiuPutFlow::Lines;
        let put_flow = put_lines || cfg.eib.put_flow == crate::config::PutFlow::Credits;
        use crate::config::{CommandRetry, QueueFull};
        let targets = cfg.eib.command_retry != CommandRetry::None;
        let memory = cfg.mic.queue_full == QueueFull::Retry;
        let retry = targets || memory;
        // Only slots held until the data has moved are freed by the round
        // (the memory controller's always are).
        let freed_by_grants = memory
            || matches!(
                cfg.eib.command_retry,
                CommandRetry::Target | CommandRetry::Split
            );
        let split = cfg.eib.command_retry == CommandRetry::Split;
        let mic_slots = memory.then_some(cfg.mic.command_slots);
        ChipBus {
            cb_variants: put_lines || retry,
            round_mode: put_flow as u8 + 2 * freed_by_grants as u8,
            eib: Eib::new(cfg),
            arbiter: DataArbiter::new(
                if cfg.eib.mic_priority {
                    topo.mic(0)
                } else {
                    crate::eib::arbiter::NO_PRIORITY
                },
                cfg.eib.arbiter_window as usize,
            ),
            arb_wake: None,
            command_bus: CommandBus::default(),
            bius: std::array::from_fn(|_| {
                let lines = (cfg.biu.put_flow == crate::config::BiuPutFlow::Lines)
                    .then_some(cfg.biu.put_lines);
                Biu::new(cfg.biu.queue_depth, cfg.biu.max_outstanding, lines)
            }),
            cb_wake: None,
            put_lines: cfg.biu.put_flow == crate::config::BiuPutFlow::Lines,
            put_flow: cfg.biu.put_flow == crate::config::BiuPutFlow::Lines
                || cfg.eib.put_flow == crate::config::PutFlow::Credits,
            retries: retry.then(|| {
                let until_response = cfg.eib.command_retry == CommandRetry::Snoop;
                let (depth, mic) = (cfg.eib.target_queue, topo.mic(0).idx());
                Retries::with_memory(depth, until_response, split, targets, mic, mic_slots)
            }),
        }
    }
}

/// Contract: a chip's bus is its rings and ports ([`Eib`]), its data arbiter,
/// its command bus and BIUs (each with its own contract) and the two
/// wake-ups it keeps: `arb_wake` and `cb_wake`, in its shape as times.
impl Part for ChipBus {
    #[inline]
    fn next_wake(&self) -> Option<Cycle> {
        match (self.cb_wake, self.arb_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn shape(&self, s: &mut Shape) {
        self.eib.shape(s);
        self.arbiter.shape(s);
        s.maybe_time(self.arb_wake);
        self.command_bus.shape(s);
        self.bius.iter().for_each(|b| b.shape(s));
        s.maybe_time(self.cb_wake);
        if let Some(r) = &self.retries {
            r.shape(s);
        }
    }

    fn shift(&mut self, from: Cycle, dt: Cycle) {
        self.eib.shift(from, dt);
        self.arbiter.shift(from, dt);
        self.command_bus.shift(from, dt);
        self.bius.iter_mut().for_each(|b| b.shift(from, dt));
        if let Some(r) = self.retries.as_mut() {
            r.shift(dt);
        }
        for w in [&mut self.arb_wake, &mut self.cb_wake]
            .into_iter()
            .flatten()
        {
            shift(w, dt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{each_in_shape, rule_holds, Perturb, RuleCase};
    use crate::topology::Ramp;

    fn config() -> MachineConfig {
        MachineConfig::load("qs20-1chip", &["eib.put_flow=credits".into()]).unwrap()
    }

    /// The shape rule (see [`crate::part`]) for the rings and ports: a
    /// chip with transfers under way.
    #[test]
    fn shape_rule_rings() {
        let now = 1000;
        let mut a = Eib::new(&config());
        a.try_grant(now - 6, Ramp(1), Ramp(3), 128).unwrap();
        a.try_grant(now - 2, Ramp(4), Ramp(6), 128).unwrap();
        let drive = |e: &mut Eib| {
            [(1, 5), (4, 3), (7, 6), (9, 2)].map(|(s, d)| {
                e.try_grant(now, Ramp(s), Ramp(d), 128)
                    .map(|g| (g.ring, g.lane, g.start - now, g.arrive - now))
                    .map_err(|t| t.saturating_sub(now))
            })
        };
        let mut b = a.clone();
        b.stats.transfers += 3;
        b.stats.bytes += 384;
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let decide: [Perturb<Eib>; 3] = [
            ("send_free", |e| e.send_free[1] += 4),
            ("recv_free", |e| e.recv_free[6] += 4),
            ("recv_from", |e| e.recv_from[3] = 9),
        ];
        each_in_shape(&a, now, drive, &decide);
    }

    /// The shape rule for the data arbiter: requests waiting in windows.
    #[test]
    fn shape_rule_arbiter() {
        let now = 100;
        let mut a = DataArbiter::new(Ramp(11), 2);
        a.request(Ramp(3), Ramp(0), 30, now);
        a.request(Ramp(11), Ramp(1), 110, now);
        a.request(Ramp(5), Ramp(2), 50, now + 4);
        a.request(Ramp(5), Ramp(0), 51, now);
        // Which requests a round grants, in order, with one ring free.
        let drive = |a: &mut DataArbiter| {
            let mut order = Vec::new();
            let mut budget = 2;
            let retry = a.arbitrate(now, |op| {
                if budget > 0 {
                    budget -= 1;
                    order.push(op);
                    Ok(now + 16)
                } else {
                    Err(now + 8)
                }
            });
            (order, retry.map(|t| t.saturating_sub(now)))
        };
        let mut b = a.clone();
        b.rounds += 5;
        b.attempts += 9;
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let decide: [Perturb<DataArbiter>; 3] = [
            ("rr", |a| a.rr = 4),
            ("not_before", |a| a.not_before[3] += 10),
            ("turn", |a| a.turn[0] = 5),
        ];
        each_in_shape(&a, now, drive, &decide);
    }

    /// The shape rule for the command bus and the BIUs, with put lines: the
    /// requests it accepts next, from whom, when.
    #[test]
    fn shape_rule_command_bus() {
        let now = 40;
        let mut a = ChipBus::new(&config(), &Topology::new(&config()));
        for b in &mut a.bius {
            *b = Biu::new(4, 2, Some(1));
        }
        a.bius[2].push(0, true);
        a.bius[2].push(1, true);
        a.bius[7].push(2, false);
        a.command_bus.select::<true>(now - 2, &a.bius, 2);
        let drive = |c: &mut ChipBus| {
            (0..6)
                .map(|i| {
                    let t = now + 2 * i;
                    let r = c.command_bus.select::<true>(t, &c.bius, 2)?;
                    c.bius[r.idx()].pop::<true>(t);
                    Some((r, i))
                })
                .collect::<Vec<_>>()
        };
        let mut b = a.clone();
        b.command_bus.accepted += 10;
        assert_eq!(rule_holds(&a, &b, now, drive), RuleCase::SameFuture);
        let decide: [Perturb<ChipBus>; 4] = [
            ("rr", |c| c.command_bus.rr = 7),
            ("next_free", |c| c.command_bus.next_free += 2),
            ("outstanding", |c| c.bius[7].outstanding = 2),
            ("cb_wake", |c| c.cb_wake = Some(44)),
        ];
        each_in_shape(&a, now, drive, &decide);
    }
}
