//! A round of a chip's data arbiter: it grants the rings to waiting
//! transfers (see [`super::arbiter`]) and schedules what each grant decides —
//! its completion (a get when its data is in the local store, a put when the
//! memory controller or the remote local store or register has it and the
//! acknowledgement is back), or on a two-chip machine its crossing of the
//! BIF. The round reads and changes, outside its chip's bus, only what its
//! context ([`Round`]) lends it.

use super::chip_bus::ChipBus;
use super::command_bus::Biu;
use crate::bif::Bif;
use crate::bus::{BusOp, Leg, OpKind, Owner, Slab, Space};
use crate::calendar::Calendar;
use crate::config::Timing;
use crate::machine::{Event, SpeUnit};
use crate::mic::Mic;
use crate::numa::Numa;
use crate::time::Cycle;
use crate::topology::{Topology, RAMPS};
use crate::trace::{Trace, Track};

/// What a round of the data arbiter reads and changes outside its chip's
/// bus: the calendar and the request slab, the memory controllers (a put's
/// write buffer, a read's window slot), the BIF, the trace.
pub(crate) struct Round<'a> {
    pub now: Cycle,
    pub chip: usize,
    pub calendar: &'a mut Calendar<Event>,
    pub ops: &'a mut Slab<BusOp>,
    pub mics: &'a mut [Mic],
    pub bif: &'a mut Option<Bif>,
    pub trace: &'a mut Option<Trace>,
    pub topo: &'a Topology,
    pub numa: &'a Numa,
    pub timing: &'a Timing,
    /// For the trace: which MFC command a transfer belongs to.
    pub spes: &'a [SpeUnit],
}

/// What a round leaves to the machine.
pub(crate) struct RoundEnd {
    /// When the arbiter must run again (`Cycle::MAX`: when a request comes).
    pub retry: Option<Cycle>,
    /// The earliest an outbound put line frees (`Cycle::MAX`: none; variant
    /// `biu.put_flow = "lines"`): the command bus looks again then.
    pub line_free: Cycle,
}

/// A round's put flow control: whether puts need a receiver's credit or an
/// outbound line, the BIUs holding the lines, and the earliest a line frees.
struct Flow<'a> {
    credits: bool,
    lines: bool,
    bius: &'a mut [Biu; RAMPS],
    line_free: Cycle,
}

impl ChipBus {
    /// One round of the data arbiter (see the module docs); `FLOW`: whether
    /// puts may need a receiver's credit (variant `eib.put_flow`) or an
    /// outbound line (variant `biu.put_flow`), checked at each grant then;
    /// `RETRY`: whether a grant frees its target's command slot (variant
    /// `eib.command_retry`, see [`super::retry`]).
    // Always inlined into the machine's out-of-line round: the same code as
    // when it was written there.
    #[inline(always)]
    pub(crate) fn arbiter_round<const FLOW: bool, const RETRY: bool>(
        &mut self,
        cx: Round<'_>,
    ) -> RoundEnd {
        let Round {
            now,
            chip,
            calendar,
            ops,
            mics,
            bif,
            trace,
            topo,
            numa,
            timing,
            spes,
        } = cx;
        let ChipBus {
            arbiter,
            eib,
            bius,
            put_lines,
            retries,
            ..
        } = self;
        // The put flow-control state the grants read, one capture of the
        // closure (without the variants, a round builds no more than before).
        let mut flow = Flow {
            credits: FLOW && eib.credits(),
            lines: FLOW && *put_lines,
            bius,
            line_free: Cycle::MAX,
        };
        let flow_at = &mut flow;
        let rings = eib.ring_count() as u8;
        let retry = arbiter.arbitrate(now, move |id| {
            let op = &ops[id];
            let (src, dst) = op.leg_ends(topo);
            let node = match op.remote {
                Space::Memory(a) => Some(numa.node_of(a)),
                _ => None,
            };
            let last_leg = op.leg != Leg::ToBif;
            let to_memory = op.kind == OpKind::Write && node.is_some();
            if to_memory && last_leg {
                mics[chip].write_buffer(now)?;
            }
            let to_ls = FLOW
                && flow_at.credits
                && op.kind == OpKind::Write
                && last_leg
                && matches!(op.remote, Space::Ls { .. });
            if to_ls {
                eib.put_room(now, dst.local())?;
            }
            let g = eib.try_grant(now, src.local(), dst.local(), op.size)?;
            if to_ls {
                eib.hold_put_buffer(dst.local(), g.arrive);
            }
            if RETRY {
                // The command's target is done with it when its data has
                // left it (a get) or arrived (a put): its slot frees then.
                let at_target = match op.kind {
                    OpKind::Read => op.leg != Leg::FromBif,
                    OpKind::Write => op.leg != Leg::ToBif,
                };
                let r = retries.as_mut().expect("retries on");
                let t = op.target.local().idx();
                if at_target && r.frees_at_grant(t) {
                    let free = match op.kind {
                        OpKind::Read => g.start + g.beats_time,
                        OpKind::Write => g.arrive,
                    };
                    r.granted(t, op.kind == OpKind::Write, free);
                }
            }
            let from_requester = op.leg != Leg::FromBif && matches!(op.owner, Owner::Mfc { .. });
            if FLOW && flow_at.lines && op.kind == OpKind::Write && from_requester {
                // The put's line frees when its data has left the port.
                let t = g.start + g.beats_time;
                flow_at.bius[src.local().idx()].free_line_at(t);
                flow_at.line_free = flow_at.line_free.min(t);
            }
            if last_leg {
                // A write crossing the chips is acknowledged back over the BIF.
                let ack_back = if op.requester.chip() == chip {
                    0
                } else {
                    timing.bif_latency
                };
                let done = match (op.kind, op.remote) {
                    (_, Space::None) => g.arrive,
                    (OpKind::Read, _) => {
                        g.arrive
                            + if matches!(op.owner, Owner::Ppe { .. } | Owner::PpeCache { .. }) {
                                0
                            } else {
                                timing.ls_access
                            }
                    }
                    (OpKind::Write, Space::Memory(_)) => {
                        let Space::Memory(a) = op.remote else {
                            unreachable!("a write to memory has a memory address")
                        };
                        mics[chip].write(g.arrive, a, op.size);
                        g.arrive + timing.mic_accept + timing.put_ack + ack_back
                    }
                    (OpKind::Write, Space::Ls { .. }) => {
                        g.arrive + timing.ls_access + timing.put_ack + ack_back
                    }
                    (OpKind::Write, Space::Ps { .. }) => {
                        g.arrive + timing.mmio_access + timing.put_ack + ack_back
                    }
                };
                calendar.schedule(done, Event::Complete(id));
            } else {
                // The first leg of a transfer between the chips: at IOIF0 the
                // data cross the BIF, and ask the other chip for a ring.
                let bif = bif.as_mut().expect("two chips have a BIF");
                let there = bif.link(chip).carry(g.arrive, op.size);
                calendar.schedule(there, Event::DataReady(id));
            }
            if let (OpKind::Read, Some(n)) = (op.kind, node) {
                // The data left the memory controller: its window slot frees.
                if n == chip && src.local() == topo.mic(0) {
                    if let Some(next) = mics[n].release(op.requester.idx()) {
                        crate::mic::window_slot_taken(
                            &mut mics[n],
                            &ops[next],
                            next,
                            now,
                            timing.bif_latency,
                            calendar,
                        );
                    }
                }
            }
            if let Some(tr) = trace.as_mut() {
                // The lane is free again when the last beat leaves the last segment.
                let end = (g.arrive - timing.hop).max(g.start + g.beats_time);
                let ring = chip as u8 * rings + g.ring;
                tr.push_with(Track::Ring(ring, g.lane), g.start, end, || {
                    let name = format!("{}->{} {} B", topo.name(src), topo.name(dst), op.size);
                    let clockwise = g.ring < rings / 2;
                    let mut args = vec![
                        ("bytes", op.size as u64),
                        ("ring", ring as u64),
                        ("clockwise", clockwise as u64),
                        ("hops", g.hops as u64),
                        ("arrive", g.arrive),
                    ];
                    args.extend(
                        crate::machine::command_of(spes, op.owner)
                            .into_iter()
                            .flatten(),
                    );
                    (name, args)
                });
            }
            if !last_leg {
                ops[id].leg = Leg::FromBif;
            }
            Ok(g.start + g.beats_time)
        });
        RoundEnd {
            retry,
            line_free: flow.line_free,
        }
    }
}
