//! The Element Interconnect Bus: four data rings, the data arbiter and the
//! command bus.
//!
//! - [`ring`]: one 16-byte ring and which of its segments are busy until when.
//! - [`arbiter`]: the data arbiter: memory controller first, round-robin for
//!   the rest, a ring in the short direction whose path is free.
//! - [`command_bus`]: the address concentrator that accepts one command per bus
//!   cycle and answers it after the command phase.
//!
//! [`Eib`] itself owns the rings and the per-element ports (each element sends
//! 16 B and receives 16 B per bus cycle) and grants transfers: a grant reserves
//! every resource the transfer needs for exactly the cycles it uses them, so a
//! later request only has to compare times. The optional [`check`] log records
//! every reservation so tests can prove no link or port was ever overbooked.

pub mod arbiter;
pub mod check;
pub(crate) mod chip_bus;
pub mod command_bus;
pub mod inbound;
pub mod retry;
pub mod ring;
pub(crate) mod round;

use crate::config::{Halfway, MachineConfig};
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;
use crate::topology::{Direction, Ramp, Topology, RAMPS};
use check::OccupancyLog;
use inbound::InboundBuffers;
use ring::Ring;

/// A granted data transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Ring index (clockwise rings first).
    pub ring: u8,
    /// Segments crossed.
    pub hops: u32,
    /// Cycle the first beat leaves the sender.
    pub start: Cycle,
    /// Cycle the last beat has arrived at the receiver.
    pub arrive: Cycle,
    /// Cycles the sender's port is busy (the beats).
    pub beats_time: Cycle,
    /// Which of the ring's concurrent-transfer slots it took.
    pub lane: u8,
}

/// Traffic counters of the EIB.
#[derive(Debug, Clone, Default)]
pub struct EibStats {
    /// Transfers granted.
    pub transfers: u64,
    /// Bytes carried.
    pub bytes: u64,
    /// Busy SPU cycles per ring and segment (a segment carries one beat per bus cycle).
    pub segment_busy: Vec<[Cycle; RAMPS]>,
    /// Bytes sent by each ramp.
    pub sent: [u64; RAMPS],
    /// Bytes received by each ramp.
    pub received: [u64; RAMPS],
}

/// The data side of the EIB: rings and element ports.
#[derive(Debug, Clone)]
pub struct Eib {
    rings: Vec<Ring>,
    /// `routes[src][dst]`: hops, and a bitmask of the rings going the short way.
    routes: [[(u8, u8); RAMPS]; RAMPS],
    send_free: [Cycle; RAMPS],
    recv_free: [Cycle; RAMPS],
    /// Per receiving port, the sender of its last transfer (`RAMPS` = none yet).
    recv_from: [u8; RAMPS],
    /// Cycles a receiving port idles when its next transfer comes from
    /// another sender than its last.
    recv_switch: Cycle,
    hop: Cycle,
    beat: Cycle,
    beat_bytes: u32,
    /// Port time of a full 128-byte line.
    line_time: Cycle,
    /// Counters.
    pub stats: EibStats,
    /// Reservation log for invariant checks (off unless enabled).
    pub log: Option<OccupancyLog>,
    /// The receiving ports' write buffers, when puts need a credit
    /// (`eib.put_flow = "credits"`; see [`inbound`]).
    inbound: Option<InboundBuffers>,
    /// How long after its data is written into the local store a put's
    /// buffer is free again for the arbiter (the credit's trip back).
    credit_return: Cycle,
    /// Cycles between a denied transfer's requests when no ring's path was
    /// free (`eib.ring_conflict = "rerequest"`); 0: it waits at the arbiter.
    rerequest: Cycle,
}

impl Eib {
    /// Builds the rings of a machine.
    pub fn new(cfg: &MachineConfig) -> Eib {
        let t = cfg.timing();
        let n = cfg.eib.rings_per_direction as usize;
        let mut rings = Vec::with_capacity(2 * n);
        for i in 0..2 * n {
            let dir = if i < n {
                Direction::Clockwise
            } else {
                Direction::CounterClockwise
            };
            rings.push(Ring::new(
                dir,
                cfg.eib.max_transfers_per_ring as usize,
                t.ring_start_interval,
            ));
        }
        let mut routes = [[(0u8, 0u8); RAMPS]; RAMPS];
        for (a, row) in routes.iter_mut().enumerate() {
            for (b, route) in row.iter_mut().enumerate() {
                let (hops, dir) = Topology::route(Ramp(a as u8), Ramp(b as u8));
                // A transfer exactly halfway round: the variant `eib.halfway`
                // picks its direction (data only: the grant reads the mask).
                let dir = dir.or(match cfg.eib.halfway {
                    Halfway::Either => None,
                    Halfway::Clockwise => Some(Direction::Clockwise),
                    Halfway::BySource if a % 2 == 0 => Some(Direction::Clockwise),
                    Halfway::BySource => Some(Direction::CounterClockwise),
                });
                let mask = rings
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| dir.is_none_or(|d| d == r.dir))
                    .fold(0u8, |m, (i, _)| m | 1 << i);
                *route = (hops as u8, mask);
            }
        }
        Eib {
            routes,
            stats: EibStats {
                segment_busy: vec![[0; RAMPS]; rings.len()],
                ..Default::default()
            },
            rings,
            send_free: [0; RAMPS],
            recv_free: [0; RAMPS],
            recv_from: [RAMPS as u8; RAMPS],
            recv_switch: t.recv_switch,
            hop: t.hop,
            beat: t.beat,
            beat_bytes: cfg.eib.beat_bytes,
            line_time: 128u32.div_ceil(cfg.eib.beat_bytes).max(1) as Cycle * t.beat,
            log: None,
            inbound: match cfg.eib.put_flow {
                crate::config::PutFlow::None => None,
                crate::config::PutFlow::Credits => Some(InboundBuffers::new(cfg.eib.put_credits)),
            },
            credit_return: t.ls_access + t.put_ack,
            rerequest: match cfg.eib.ring_conflict {
                crate::config::RingConflict::Wait => 0,
                crate::config::RingConflict::Rerequest => {
                    cfg.eib.rerequest_bus_cycles * crate::time::BUS_RATIO
                }
            },
        }
    }

    /// Whether puts need a credit of their receiver (`eib.put_flow = "credits"`).
    #[inline]
    pub(crate) fn credits(&self) -> bool {
        self.inbound.is_some()
    }

    /// Whether a put's transfer to `dst` may start at `now` as far as the
    /// receiver's buffers go (always, unless puts need a credit); if not,
    /// the earliest cycle a buffer frees.
    #[inline]
    pub fn put_room(&mut self, now: Cycle, dst: Ramp) -> Result<(), Cycle> {
        match self.inbound.as_mut() {
            None => Ok(()),
            Some(b) => b.room(now, dst.idx()),
        }
    }

    /// A put's transfer to `dst` was granted and arrives at `arrive`: it
    /// holds one of the receiver's buffers until its credit is back (a
    /// no-op unless puts need a credit).
    #[inline]
    pub fn hold_put_buffer(&mut self, dst: Ramp, arrive: Cycle) {
        if let Some(b) = self.inbound.as_mut() {
            b.take(dst.idx(), arrive + self.credit_return);
        }
    }

    /// When `r`'s send port is free again.
    #[inline]
    pub fn send_free(&self, r: Ramp) -> Cycle {
        self.send_free[r.idx()]
    }

    /// Number of data rings.
    pub fn ring_count(&self) -> usize {
        self.rings.len()
    }

    /// Direction of ring `r`.
    pub fn ring_direction(&self, r: usize) -> Direction {
        self.rings[r].dir
    }

    /// Beats a transfer of `bytes` takes (at least one).
    #[inline]
    pub fn beats(&self, bytes: u32) -> u64 {
        bytes.div_ceil(self.beat_bytes).max(1) as u64
    }

    /// Tries to start a transfer of `bytes` from `src` to `dst` at `now`.
    /// On success every resource is reserved and the grant returned; otherwise
    /// the earliest cycle at which this transfer could start, if nothing else
    /// is granted meanwhile, is returned (a lower bound for a retry).
    // Always inlined: the data arbiter's grant closure has two copies (with
    // and without the put flow variants), and this is most of its work.
    #[inline(always)]
    pub fn try_grant(
        &mut self,
        now: Cycle,
        src: Ramp,
        dst: Ramp,
        bytes: u32,
    ) -> Result<Grant, Cycle> {
        let (hops, mut candidates) = self.routes[src.idx()][dst.idx()];
        let hops = hops as u32;
        let hop_delay = hops as Cycle * self.hop;
        let port_ready = self.send_free[src.idx()].max(
            (self.recv_free[dst.idx()] + self.switch_cost(src, dst)).saturating_sub(hop_delay),
        );
        if port_ready > now {
            // The usual case under load: a port is busy. That alone bounds the retry.
            return Err(port_ready);
        }
        let mut ring_ready = Cycle::MAX;
        let mut chosen = None;
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let t = self.rings[i].earliest_start(now, src, hops, self.hop);
            if t <= now {
                chosen = Some(i);
                ring_ready = now;
                break;
            }
            ring_ready = ring_ready.min(t);
        }
        let earliest = port_ready.max(ring_ready);
        let (Some(r), true) = (chosen, earliest <= now) else {
            return Err(self.after_ring_conflict(now, earliest));
        };
        let duration = if bytes == 128 {
            self.line_time
        } else {
            self.beats(bytes) * self.beat
        };
        // Reserve the segments and count their busy time in one pass.
        let busy = &mut self.stats.segment_busy[r];
        let (end, lane) = self.rings[r].reserve(now, src, hops, self.hop, duration, |seg| {
            busy[seg] += duration
        });
        self.send_free[src.idx()] = now + duration;
        self.recv_free[dst.idx()] = now + hop_delay + duration;
        self.recv_from[dst.idx()] = src.0;
        let grant = Grant {
            ring: r as u8,
            hops,
            start: now,
            arrive: now + hop_delay + duration,
            beats_time: duration,
            lane,
        };
        self.account(grant, src, dst, bytes, end);
        Ok(grant)
    }

    /// When a transfer whose ports are free but no ring's path is (until
    /// `free`) tries again: at once when a path frees, or, asking every
    /// `rerequest` cycles (`eib.ring_conflict = "rerequest"`), at the first
    /// request after it (another transfer may take the path meanwhile).
    #[inline]
    fn after_ring_conflict(&self, now: Cycle, free: Cycle) -> Cycle {
        let free = free.max(now + 1);
        if self.rerequest == 0 {
            return free;
        }
        now + (free - now).div_ceil(self.rerequest) * self.rerequest
    }

    /// The gap a receiving port needs before data from `src` when its last
    /// transfer came from another sender: its ramp turns to another sender's
    /// data (and, usually, ring). Consecutive transfers of one stream pass
    /// without a gap, so a port fed by one sender (a get from the memory
    /// controller or from a hot local store) never pays it; many senders
    /// taking turns into one port (puts into a hot spot) pay it every time.
    #[inline]
    fn switch_cost(&self, src: Ramp, dst: Ramp) -> Cycle {
        let last = self.recv_from[dst.idx()];
        if last == src.0 || last as usize == RAMPS {
            0
        } else {
            self.recv_switch
        }
    }

    #[inline]
    fn account(&mut self, g: Grant, src: Ramp, dst: Ramp, bytes: u32, end: Cycle) {
        let s = &mut self.stats;
        s.transfers += 1;
        s.bytes += bytes as u64;
        s.sent[src.idx()] += bytes as u64;
        s.received[dst.idx()] += bytes as u64;
        if let Some(log) = self.log.as_mut() {
            log.record(&self.rings[g.ring as usize], g, src, dst, self.hop, end);
        }
    }

    /// Turns on the reservation log used by [`check::OccupancyLog::verify`].
    pub fn enable_log(&mut self) {
        self.log = Some(OccupancyLog::default());
    }
}

/// Contract: the rings' and ports' future is decided by each ring's
/// segments (their free times and transfers under way), each port's send and
/// receive free times, the sender each receiving port took last
/// (`recv_from`, for the switch gap) and, with credits, the receiving ports'
/// buffers. Left out: `stats` (counters the jump scales), `log` (a check: a
/// state with one is not fast-forwarded), the routes and timings fixed at
/// build.
impl Part for Eib {
    fn next_wake(&self) -> Option<Cycle> {
        None // the data arbiter grants the rings; they keep no wake-up
    }

    fn shape(&self, s: &mut Shape) {
        // A segment's or a receiving port's free time is compared with the
        // present less a transfer's hops (and plus a switch gap).
        let back = RAMPS as Cycle * self.hop + self.recv_switch;
        self.rings.iter().for_each(|r| r.shape(s, back));
        self.send_free.iter().for_each(|&t| s.time(t));
        self.recv_free.iter().for_each(|&t| s.time_back(t, back));
        self.recv_from.iter().for_each(|&r| s.raw(r as u64));
        if let Some(b) = &self.inbound {
            b.shape(s);
        }
    }

    fn shift(&mut self, _from: Cycle, dt: Cycle) {
        self.rings.iter_mut().for_each(|r| r.shift(dt));
        self.send_free.iter_mut().for_each(|t| shift(t, dt));
        self.recv_free.iter_mut().for_each(|t| shift(t, dt));
        if let Some(b) = self.inbound.as_mut() {
            b.shift(dt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eib() -> Eib {
        Eib::new(&MachineConfig::load("qs20-1chip", &[]).unwrap())
    }

    #[test]
    fn one_transfer_takes_eight_beats_plus_hops() {
        let mut e = eib();
        let g = e.try_grant(0, Ramp(1), Ramp(3), 128).unwrap();
        assert_eq!(g.hops, 2);
        assert_eq!(g.arrive, 2 * 2 + 8 * 2);
    }

    #[test]
    fn a_port_sends_one_transfer_at_a_time() {
        let mut e = eib();
        e.try_grant(0, Ramp(1), Ramp(3), 128).unwrap();
        // Same sender, other direction: the port is busy for 8 bus cycles.
        assert_eq!(e.try_grant(0, Ramp(1), Ramp(11), 128), Err(16));
        assert!(e.try_grant(16, Ramp(1), Ramp(11), 128).is_ok());
    }

    #[test]
    fn a_receiving_port_pays_a_gap_only_when_its_sender_changes() {
        let mut e = eib();
        // Ramp 3 sends to ramp 5, two hops away.
        let a = e.try_grant(0, Ramp(3), Ramp(5), 128).unwrap();
        assert_eq!(a.arrive, 2 * 2 + 16);
        // The same sender follows straight on: its beats arrive back to back.
        let b = e.try_grant(16, Ramp(3), Ramp(5), 128).unwrap();
        assert_eq!(b.arrive, a.arrive + 16);
        // Another sender, one hop away, must leave the port a bus cycle (2
        // SPU cycles) between the streams.
        let retry = e.try_grant(0, Ramp(4), Ramp(5), 128).unwrap_err();
        assert_eq!(retry, b.arrive + 2 - 2);
        let c = e.try_grant(retry, Ramp(4), Ramp(5), 128).unwrap();
        assert_eq!(c.arrive, b.arrive + 2 + 16);
        // Without the mechanism the port would take it at once.
        let mut e = Eib::new(
            &MachineConfig::load("qs20-1chip", &["eib.recv_switch_bus_cycles=0".into()]).unwrap(),
        );
        e.try_grant(0, Ramp(3), Ramp(5), 128).unwrap();
        let c = e.try_grant(0, Ramp(4), Ramp(5), 128).unwrap_err();
        assert_eq!(c, 20 - 2);
    }

    #[test]
    fn a_transfer_denied_a_ring_waits_for_a_path_or_asks_again_on_its_interval() {
        let with = |extra: &[&str]| {
            let mut o = vec!["eib.halfway=clockwise".to_string()];
            o.extend(extra.iter().map(|s| s.to_string()));
            Eib::new(&MachineConfig::load("qs20-1chip", &o).unwrap())
        };
        // Two halfway transfers take both clockwise rings; a third whose
        // ports are free overlaps both paths and is denied.
        let denied = |e: &mut Eib| {
            e.try_grant(0, Ramp(2), Ramp(8), 128).unwrap();
            e.try_grant(0, Ramp(3), Ramp(9), 128).unwrap();
            e.try_grant(0, Ramp(4), Ramp(10), 128).unwrap_err()
        };
        let mut waits = with(&[]);
        let free = denied(&mut waits);
        assert!(waits.try_grant(free, Ramp(4), Ramp(10), 128).is_ok());
        // Asking every 8 bus cycles (16 SPU cycles): the first request at or
        // after the path frees.
        let mut asks = with(&["eib.ring_conflict=rerequest", "eib.rerequest_bus_cycles=8"]);
        let again = denied(&mut asks);
        assert_eq!(again % 16, 0);
        assert!(again >= free && again - free < 16, "{again} against {free}");
        assert!(asks.try_grant(again, Ramp(4), Ramp(10), 128).is_ok());
    }

    #[test]
    fn a_halfway_transfer_goes_the_way_the_variant_says() {
        let with = |h: &str| {
            Eib::new(&MachineConfig::load("qs20-1chip", &[format!("eib.halfway={h}")]).unwrap())
        };
        // Ramps 2 and 8 are six segments apart both ways.
        let cw = |e: &mut Eib, s: u8, d: u8| {
            let g = e.try_grant(0, Ramp(s), Ramp(d), 128).unwrap();
            assert_eq!(g.hops, 6);
            e.ring_direction(g.ring as usize) == Direction::Clockwise
        };
        // Either: the first free ring, clockwise first; with both clockwise
        // rings' segments taken, counter-clockwise.
        let mut e = with("either");
        assert!(cw(&mut e, 2, 8));
        assert!(cw(&mut e, 3, 9));
        assert!(!cw(&mut e, 4, 10));
        let mut e = with("clockwise");
        assert!(cw(&mut e, 2, 8));
        assert!(cw(&mut e, 3, 9));
        assert!(e.try_grant(0, Ramp(4), Ramp(10), 128).is_err());
        let mut e = with("by_source");
        assert!(cw(&mut e, 2, 8));
        assert!(!cw(&mut e, 3, 9));
        // Transfers shorter than halfway are not touched.
        assert_eq!(e.try_grant(0, Ramp(1), Ramp(11), 128).unwrap().hops, 2);
    }

    #[test]
    fn two_rings_each_way_then_the_path_blocks() {
        let mut e = eib();
        // Three transfers over the same segments clockwise: two rings carry two.
        assert!(e.try_grant(0, Ramp(0), Ramp(4), 128).is_ok());
        assert!(e.try_grant(0, Ramp(1), Ramp(3), 128).is_ok());
        assert!(e.try_grant(0, Ramp(2), Ramp(5), 128).is_err());
        // Counter-clockwise rings are untouched.
        assert!(e.try_grant(0, Ramp(6), Ramp(2), 128).is_ok());
    }
}
