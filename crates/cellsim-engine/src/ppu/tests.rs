//! The PPU on its own, with a fixed-latency stand-in for the bus.

use super::*;
use std::sync::Arc;

fn params() -> PpuParams {
    PpuParams {
        l1_bytes: 32 * 1024,
        l1_ways: 4,
        l2_bytes: 512 * 1024,
        l2_ways: 8,
        l1_hit: 3,
        vmx_access: 2,
        load_miss_entries: 4,
        l2_hit: 40,
        line_transfer: 8,
        store_queue_entries: 8,
        l2_store: 32,
        miss_machines: 6,
        castouts: 4,
        prefetch: 4,
        copy_unroll: 8,
        memory_bytes: 64 << 20,
    }
}

/// A PPU whose bus requests all take `bus_latency` cycles.
struct Rig {
    ppu: Ppu,
    mem: Arc<Storage>,
    res: Reservations,
    now: Cycle,
    bus_latency: Cycle,
    pending: Vec<(Cycle, u32)>,
    bus_reads: u64,
    done: Vec<Done>,
}

impl Rig {
    fn new() -> Rig {
        Rig {
            ppu: Ppu::new(params()),
            mem: Storage::new(64 << 20),
            res: Reservations::default(),
            now: 0,
            bus_latency: 300,
            pending: Vec::new(),
            bus_reads: 0,
            done: Vec::new(),
        }
    }

    /// Runs until the PPU is idle and nothing is in flight; returns the cycles it took.
    fn run(&mut self) -> Cycle {
        let start = self.now;
        self.run_until(|_| false);
        // When the program goes on (prefetches may still be in flight).
        self.done.iter().map(|d| d.at).max().unwrap_or(self.now) - start
    }

    /// Runs until `stop(self)` or until nothing is left to do.
    fn run_until(&mut self, stop: impl Fn(&Rig) -> bool) {
        loop {
            if stop(self) {
                return;
            }
            let horizon = self.pending.iter().map(|p| p.0).min().unwrap_or(Cycle::MAX);
            let mut env = Env {
                memory: &self.mem,
                reservations: &mut self.res,
            };
            match self.ppu.step(&mut env, self.now, horizon) {
                StepResult::Acted(t) => {
                    self.now = t;
                    let lat = self.bus_latency;
                    for b in self.ppu.take_bus() {
                        self.bus_reads += !b.write as u64;
                        self.pending.push((t + lat, b.id));
                    }
                    self.done.extend(self.ppu.take_done());
                }
                StepResult::At(_) | StepResult::Idle if horizon != Cycle::MAX => {
                    self.now = horizon;
                    let (due, rest): (Vec<_>, Vec<_>) =
                        self.pending.iter().partition(|p| p.0 == horizon);
                    self.pending = rest;
                    for (_, id) in due {
                        self.ppu.bus_done(id, horizon);
                    }
                }
                StepResult::Idle => return,
                StepResult::At(t) => unreachable!("nothing in flight, yet waiting for {t}"),
            }
        }
    }

    /// Runs one submitted single access to its end (leaving the bus busy);
    /// returns when the program goes on.
    fn single(&mut self, what: Single, addr: u64) -> Cycle {
        self.done.clear();
        let now = self.now;
        self.ppu.submit_single(0, 0, what, addr, 8, now);
        self.run_until(|r| !r.done.is_empty());
        let at = self.done[0].at;
        // Bus completions before the program goes on.
        self.run_until(|r| r.pending.iter().all(|p| p.0 > at));
        self.now = self.now.max(at);
        at
    }

    #[allow(clippy::too_many_arguments)]
    fn looped(
        &mut self,
        hw: Option<usize>,
        op: LoopOp,
        src: u64,
        dst: u64,
        bytes: u64,
        elem: u8,
    ) -> Cycle {
        self.done.clear();
        let now = self.now;
        self.ppu.submit_loop(
            hw,
            0,
            op,
            src,
            dst,
            bytes / elem as u64,
            elem,
            elem as u64,
            false,
            7,
            now,
        );
        self.run()
    }
}

const BUF: u64 = 0x10_0000;

#[test]
fn an_l1_resident_buffer_is_served_without_misses_at_one_access_per_cycle() {
    let mut r = Rig::new();
    r.looped(Some(0), LoopOp::Load, BUF, 0, 16 * 1024, 8); // warm-up lap
    for (elem, per_byte) in [(1u8, 1.0), (2, 0.5), (4, 0.25), (8, 0.125), (16, 0.125)] {
        let before = r.ppu.stats.clone();
        let c = r.looped(Some(0), LoopOp::Load, BUF, 0, 16 * 1024, elem);
        assert_eq!(
            r.ppu.stats.l1_misses, before.l1_misses,
            "{elem} B: no L1 miss"
        );
        let want = 16.0 * 1024.0 * per_byte;
        assert!(
            (c as f64 - want).abs() <= 8.0,
            "{elem} B loads: {c} cycles for 16 KB, want about {want}"
        );
    }
}

#[test]
fn an_l2_resident_buffer_misses_the_l1_only() {
    let mut r = Rig::new();
    r.looped(Some(0), LoopOp::Load, BUF, 0, 256 * 1024, 8);
    let before = r.ppu.stats.clone();
    let c = r.looped(Some(0), LoopOp::Load, BUF, 0, 256 * 1024, 8);
    let s = &r.ppu.stats;
    assert_eq!(s.l2_misses, before.l2_misses, "no L2 miss");
    assert_eq!(s.prefetches, before.prefetches, "nothing to prefetch");
    assert_eq!(
        s.reloads - before.reloads,
        256 * 1024 / 128,
        "one reload per line"
    );
    // Per line: the first 4 loads miss and fill the load-miss queue, the
    // fifth waits for the line (40 cycles), the other 11 hit.
    let per_line = c as f64 / 2048.0;
    assert!((per_line - 52.0).abs() < 1.0, "{per_line} cycles per line");
}

#[test]
fn two_threads_never_lose_to_one_on_loads() {
    for (bytes, elem) in [
        (16 * 1024, 8u8),
        (256 * 1024, 4),
        (256 * 1024, 16),
        (2 << 20, 16),
    ] {
        let mut one = Rig::new();
        one.looped(Some(0), LoopOp::Load, BUF, 0, bytes.min(256 * 1024), 16);
        let c1 = one.looped(Some(0), LoopOp::Load, BUF, 0, bytes, elem);
        let mut two = Rig::new();
        two.looped(Some(0), LoopOp::Load, BUF, 0, bytes.min(256 * 1024), 16);
        let c2 = two.looped(None, LoopOp::Load, BUF, 0, bytes, elem);
        assert!(
            c2 <= c1,
            "{bytes} B in {elem} B loads: 2 threads {c2} > 1 thread {c1}"
        );
    }
}

#[test]
fn no_loop_moves_more_than_16_bytes_per_cycle() {
    for op in [LoopOp::Load, LoopOp::Store, LoopOp::Copy] {
        for elem in [1u8, 2, 4, 8, 16] {
            for hw in [Some(0), None] {
                let mut r = Rig::new();
                r.looped(Some(0), LoopOp::Load, BUF, 0, 16 * 1024, 16);
                r.looped(Some(0), LoopOp::Load, BUF + 0x8000, 0, 8 * 1024, 16);
                let c = r.looped(hw, op, BUF, BUF + 0x8000, 8 * 1024, elem);
                let moved = if op == LoopOp::Copy {
                    16 * 1024
                } else {
                    8 * 1024
                };
                assert!(
                    moved as f64 / c as f64 <= 16.0,
                    "{op:?} {elem} B {hw:?}: {moved} B in {c} cycles"
                );
            }
        }
    }
}

#[test]
fn stores_go_through_the_store_queue_and_are_slower_than_loads() {
    let mut r = Rig::new();
    r.looped(Some(0), LoopOp::Load, BUF, 0, 16 * 1024, 8);
    let load = r.looped(Some(0), LoopOp::Load, BUF, 0, 16 * 1024, 8);
    let store = r.looped(Some(0), LoopOp::Store, 0, BUF, 16 * 1024, 8);
    // 8 entries held 32+ cycles: about one store every 4 cycles.
    assert!(store > 3 * load, "stores {store} vs loads {load}");
    assert_eq!(
        r.mem.read_u32_be(BUF as usize),
        0x0707_0707,
        "the fill byte was stored"
    );
    let two = r.looped(None, LoopOp::Store, 0, BUF, 16 * 1024, 8);
    assert!(
        two * 3 < store * 2,
        "two threads have two store queues: {two} vs {store}"
    );
}

#[test]
fn a_copy_moves_the_bytes() {
    let mut r = Rig::new();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    r.mem.write(BUF as usize, &data);
    r.looped(None, LoopOp::Copy, BUF, BUF + 0x4_0000, 4096, 4);
    let mut out = vec![0u8; 4096];
    r.mem.read((BUF + 0x4_0000) as usize, &mut out);
    assert_eq!(out, data);
}

#[test]
fn memory_loads_fetch_lines_and_prefetch_ahead() {
    let mut r = Rig::new();
    let c = r.looped(Some(0), LoopOp::Load, BUF, 0, 64 * 1024, 8);
    let s = &r.ppu.stats;
    assert!(s.prefetches > 400, "{s:?}");
    assert_eq!(
        r.bus_reads,
        64 * 1024 / 128 + params().prefetch,
        "every line fetched once"
    );
    // The prefetcher keeps the stream close to the L2 rate (0.8 B/cycle).
    let bpc = 64.0 * 1024.0 / c as f64;
    assert!(bpc > 0.5, "{bpc} B/cycle");
}

#[test]
fn a_write_by_someone_else_invalidates_both_levels() {
    let mut r = Rig::new();
    r.looped(Some(0), LoopOp::Load, BUF, 0, 1024, 8);
    assert_eq!(r.ppu.holds(BUF + 256), (true, true));
    r.ppu.snoop_write(BUF + 256, 128);
    assert_eq!(r.ppu.holds(BUF + 256), (false, false));
    assert_eq!(
        r.ppu.holds(BUF + 384),
        (true, true),
        "only the written line"
    );
    assert_eq!(r.ppu.stats.snoop_invalidations, 1);
    let before = r.ppu.stats.l2_misses;
    r.looped(Some(0), LoopOp::Load, BUF + 256, 0, 8, 8);
    assert_eq!(
        r.ppu.stats.l2_misses,
        before + 1,
        "the next load goes to memory"
    );
}

#[test]
fn single_accesses_time_like_a_dependent_loop() {
    // A loop of dependent loads == the same loads one at a time.
    let mut a = Rig::new();
    let now = a.now;
    a.ppu
        .submit_loop(Some(0), 0, LoopOp::Load, BUF, 0, 64, 8, 136, true, 0, now);
    a.run();
    let looped = a.done[0].at;
    let mut b = Rig::new();
    let mut t = 0;
    for i in 0..64 {
        t = b.single(Single::Load, BUF + i * 136);
    }
    assert_eq!(looped, t);
}
