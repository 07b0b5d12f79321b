//! An SPU's loads and stores to its own local store, and their contention
//! with DMA.
//!
//! The SPU moves 16 bytes per cycle between its registers and its local
//! store, with a 6-cycle load latency (architecture notes). Its ISA has only
//! quadword (16-byte) loads and stores (Jiménez-González et al. 2007): a narrower load is a
//! quadword load and a rotate, a narrower store a quadword load, a
//! shuffle-control generation, a shuffle and a quadword store. All of these
//! issue on the odd pipeline, one per cycle, so an element costs one issue
//! slot at 16 bytes and `narrow_load` / `narrow_store` slots below.
//!
//! The local store has one port. A DMA bus request (up to 128 bytes) reads or
//! writes it in `dma_cycles` cycles and goes first; an SPU load or store that
//! wants the port in such a cycle waits for the next one. The machine records
//! the cycles DMA traffic takes from an SPE's local store while a loop runs
//! there; [`LsLoop::run`] replays them.

use crate::ppu::LoopOp;
use crate::storage::Storage;
use crate::time::Cycle;
use std::collections::VecDeque;

/// Timing of SPU local-store accesses.
#[derive(Debug, Clone, Copy)]
pub struct LsParams {
    /// Load latency, cycles.
    pub load_latency: Cycle,
    /// Issue slots of a load narrower than 16 bytes.
    pub narrow_load: u64,
    /// Issue slots of a store narrower than 16 bytes (the first and last use the port).
    pub narrow_store: u64,
    /// Port cycles of one DMA bus request.
    pub dma_cycles: u64,
}

/// A loop of loads or stores an SPU runs over its local store.
#[derive(Debug, Clone, Copy)]
pub struct LsLoop {
    /// The waiting program.
    pub owner: usize,
    /// Its physical SPE.
    pub spe: u8,
    op: LoopOp,
    lsa: u32,
    dst: u32,
    count: u64,
    elem: u8,
    fill: u8,
    /// Next element and issue slot within it.
    i: u64,
    slot: u64,
    /// Next issue cycle.
    t: Cycle,
    start: Cycle,
    last_load: Cycle,
}

/// A computation that shares its SPE's local-store port with DMA.
///
/// The program says how many cycles it computes and how many of them use the
/// port; the SPU spreads those accesses evenly, so each cycle DMA holds the
/// port delays it with the probability `accesses / cycles`. The delays are
/// added as a fraction carried from one span to the next (deterministic, no
/// draw), and the added cycles are themselves a span DMA may take the port in.
#[derive(Debug, Clone, Copy)]
pub struct PortShare {
    /// Its physical SPE.
    pub spe: u8,
    /// Start of the span not yet charged.
    pub from: Cycle,
    accesses: u64,
    cycles: Cycle,
    carry: u64,
}

impl PortShare {
    /// A computation of `cycles` cycles with `accesses` port uses, from `now`.
    pub fn new(spe: u8, cycles: Cycle, accesses: u64, now: Cycle) -> PortShare {
        PortShare {
            spe,
            from: now,
            accesses: accesses.min(cycles),
            cycles,
            carry: 0,
        }
    }

    /// The cycles by which `busy` cycles of DMA on the port delay it.
    pub fn stall(&mut self, busy: u64) -> Cycle {
        let n = busy as u128 * self.accesses as u128 + self.carry as u128;
        self.carry = (n % self.cycles as u128) as u64;
        (n / self.cycles as u128) as Cycle
    }
}

/// What [`LsLoop::run`] got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LsProgress {
    /// Not done at the horizon.
    Running,
    /// Done: the program goes on at this cycle.
    Done(Cycle),
}

impl LsLoop {
    /// A loop of `bytes / elem` accesses starting at `now`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        owner: usize,
        spe: u8,
        op: LoopOp,
        lsa: u32,
        dst: u32,
        bytes: u32,
        elem: u8,
        fill: u8,
        now: Cycle,
    ) -> LsLoop {
        LsLoop {
            owner,
            spe,
            op,
            lsa,
            dst,
            count: (bytes / elem as u32) as u64,
            elem,
            fill,
            i: 0,
            slot: 0,
            t: now,
            start: now,
            last_load: now,
        }
    }

    /// When the loop began.
    pub fn start(&self) -> Cycle {
        self.start
    }

    /// Slots of one element, and whether slot `k` uses the port (and loads).
    fn slots(&self, p: &LsParams) -> (u64, u64) {
        let narrow = self.elem < 16;
        let load = if narrow { p.narrow_load } else { 1 };
        let store = if narrow { p.narrow_store } else { 1 };
        match self.op {
            LoopOp::Load => (load, 0),
            LoopOp::Store => (0, store),
            LoopOp::Copy => (load, store),
        }
    }

    /// Issues slots until the loop ends or the next one is at or after
    /// `horizon`. `busy` holds the cycles DMA takes from the port (ascending);
    /// entries before the loop's time are dropped. With `dry`, nothing is
    /// changed and the result says when the loop would end.
    pub fn run(
        &mut self,
        p: &LsParams,
        ls: &Storage,
        busy: &mut VecDeque<Cycle>,
        horizon: Cycle,
        dry: bool,
    ) -> LsProgress {
        let mut s = *self;
        let (loads, stores) = s.slots(p);
        let per = loads + stores;
        let mut k = 0; // index into busy (dry runs do not pop)
        let mut progress = LsProgress::Running;
        while s.i < s.count {
            let mut c = s.t;
            let is_load = s.slot < loads;
            let port = if is_load {
                s.slot == 0
            } else {
                let j = s.slot - loads;
                j == 0 || j + 1 == stores
            };
            if port {
                // Cycles DMA holds the port come first.
                while let Some(&b) = busy.get(k) {
                    if b < c {
                        k += 1;
                    } else if b == c {
                        k += 1;
                        c += 1;
                    } else {
                        break;
                    }
                }
            }
            if c >= horizon {
                s.t = c;
                break;
            }
            if port && is_load {
                s.last_load = c;
            }
            if !dry && port && !is_load && s.slot + 1 == per {
                // The element's store: the bytes land now.
                let n = s.elem as usize;
                let at = (s.lsa + (s.i as u32) * n as u32) as usize;
                match s.op {
                    LoopOp::Store => ls.write(at, &[s.fill; 16][..n]),
                    LoopOp::Copy => {
                        let mut b = [0u8; 16];
                        ls.read(at, &mut b[..n]);
                        ls.write((s.dst + (s.i as u32) * n as u32) as usize, &b[..n]);
                    }
                    LoopOp::Load => {}
                }
            }
            s.t = c + 1;
            s.slot += 1;
            if s.slot == per {
                s.slot = 0;
                s.i += 1;
            }
        }
        if s.i == s.count {
            // A load loop ends when its last value is in a register; a copy's
            // stores wait for their loads' values, which unrolling hides but
            // for the last group.
            let end = if loads > 0 {
                s.t.max(s.last_load + p.load_latency)
            } else {
                s.t
            };
            progress = LsProgress::Done(end);
        }
        if !dry {
            *self = s;
            busy.drain(..k);
        }
        progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: LsParams = LsParams {
        load_latency: 6,
        narrow_load: 2,
        narrow_store: 4,
        dma_cycles: 1,
    };

    fn run(op: LoopOp, elem: u8, busy: &[Cycle]) -> Cycle {
        let ls = Storage::new(256 * 1024);
        let mut l = LsLoop::new(0, 0, op, 0x4000, 0x8000, 4096, elem, 9, 100);
        let mut b: VecDeque<Cycle> = busy.iter().copied().collect();
        match l.run(&P, &ls, &mut b, Cycle::MAX, false) {
            LsProgress::Done(end) => end - 100,
            LsProgress::Running => unreachable!(),
        }
    }

    #[test]
    fn sixteen_byte_accesses_move_16_bytes_per_cycle() {
        assert_eq!(
            run(LoopOp::Load, 16, &[]),
            256 + 5,
            "256 loads and the last one's latency"
        );
        assert_eq!(run(LoopOp::Store, 16, &[]), 256);
        assert_eq!(
            run(LoopOp::Copy, 16, &[]),
            510 + 6,
            "the last store waits for its load"
        );
    }

    #[test]
    fn narrow_accesses_cost_more_slots() {
        assert_eq!(run(LoopOp::Load, 4, &[]), 1024 * 2 + 4);
        assert_eq!(run(LoopOp::Store, 1, &[]), 4096 * 4);
    }

    #[test]
    fn dma_cycles_delay_port_slots_only() {
        // Busy at the loop's first two cycles: the first load waits two cycles.
        assert_eq!(run(LoopOp::Load, 16, &[100, 101]), 256 + 5 + 2);
        // A narrow load's rotate does not need the port.
        assert_eq!(run(LoopOp::Load, 4, &[101]), 1024 * 2 + 4);
    }

    #[test]
    fn stores_and_copies_move_the_bytes() {
        let ls = Storage::new(256 * 1024);
        ls.write(0x4000, &[1, 2, 3, 4]);
        let mut l = LsLoop::new(0, 0, LoopOp::Copy, 0x4000, 0x8000, 4, 2, 0, 0);
        let mut b = VecDeque::new();
        l.run(&P, &ls, &mut b, Cycle::MAX, false);
        let mut out = [0u8; 4];
        ls.read(0x8000, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
    }

    #[test]
    fn a_loop_stops_at_the_horizon_and_goes_on() {
        let ls = Storage::new(256 * 1024);
        let mut l = LsLoop::new(0, 0, LoopOp::Load, 0, 0, 4096, 16, 0, 0);
        let mut b = VecDeque::new();
        assert_eq!(l.run(&P, &ls, &mut b, 100, true), LsProgress::Running);
        assert_eq!(l.run(&P, &ls, &mut b, 100, false), LsProgress::Running);
        assert_eq!(
            l.run(&P, &ls, &mut b, Cycle::MAX, true),
            LsProgress::Done(261)
        );
        assert_eq!(
            l.run(&P, &ls, &mut b, Cycle::MAX, false),
            LsProgress::Done(261)
        );
    }
}
