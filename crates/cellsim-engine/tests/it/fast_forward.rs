//! The steady-state fast-forward against the reference path: every run is
//! made twice, with `set_exact_reference(true)` (one event per transfer)
//! and with the fast-forward on, and everything observable must be equal:
//! the end cycle, every thread's end and exit value, every counter of the
//! buses, memory controllers and BIF, each DMA command's latencies and every
//! byte of memory and of the local stores.

use crate::util::{machine_of, stream, SplitMix, Stream};
use cellsim_engine::machine::FastForwardStats;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, MfcCommand, Opcode, Spu};
use proptest::prelude::*;

/// Main memory compared (everything the workloads touch).
const MEM: usize = 0x40_0000;
/// Local-store bytes used by the workloads (above the reserved area).
const LS_LOW: u32 = 0x4000;
const LS_HIGH: u32 = 0x4_0000;

#[derive(Debug, Clone, Copy)]
enum Step {
    Dma {
        get: bool,
        barrier: bool,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
    },
    Wait(u32),
    Compute(u64),
}

/// Everything observable about a finished run.
pub(crate) fn observe(m: &Machine, outcome: Result<(), String>) -> String {
    let s = m.summary();
    let mut out = format!("{outcome:?}\ncycles {}\n", s.cycles);
    for t in &s.threads {
        out += &format!("{t:?}\n");
    }
    out += &format!("{:?}\n", m.counters());
    for e in m.eibs() {
        let st = &e.stats;
        out += &format!(
            "eib {} {} {:?} {:?} {:?}\n",
            st.transfers, st.bytes, st.segment_busy, st.sent, st.received
        );
    }
    for mic in m.mics() {
        out += &format!("{:?}\n", mic.stats);
    }
    out += &format!("arbiter {:?}\n", m.arbiter_stats());
    if let Some(b) = m.bif() {
        for l in &b.links {
            out += &format!("bif {} {}\n", l.bytes, l.busy);
        }
    }
    for spe in 0..m.spe_count() as u32 {
        out += &format!("latencies {spe} {:?}\n", m.dma_latencies(spe).unwrap());
    }
    let mut h = SplitMix(0);
    let mut fold = |bytes: &[u8]| {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h.0 ^= u64::from_le_bytes(w);
            h.next_u64();
        }
    };
    let mut buf = vec![0u8; LS_HIGH as usize];
    for spe in 0..m.spe_count() as u32 {
        m.local_store(spe).unwrap().read(0, &mut buf);
        fold(&buf);
    }
    let mut mem = vec![0u8; MEM];
    m.memory().read(0, &mut mem);
    fold(&mem);
    out += &format!("bytes {:016x}\n", h.0);
    out
}

/// Runs `setup`'s machine both ways; returns what was seen and the jumps made.
fn both_ways(setup: impl Fn(bool) -> Machine) -> (String, String, u64) {
    let (reference, fast, stats) = both_ways_stats(setup);
    (reference, fast, stats.jumps)
}

/// [`both_ways`], with what the fast-forward did.
pub(crate) fn both_ways_stats(
    setup: impl Fn(bool) -> Machine,
) -> (String, String, FastForwardStats) {
    let mut runs = Vec::new();
    let mut stats = FastForwardStats::default();
    for reference in [true, false] {
        let mut m = setup(reference);
        let outcome = m.run().map(|_| ()).map_err(|e| e.to_string());
        stats = m.fast_forward_stats();
        let jumps = stats.jumps;
        if reference {
            assert_eq!(jumps, 0, "the reference path never jumps");
        }
        runs.push(observe(&m, outcome));
    }
    let fast = runs.pop().unwrap();
    (runs.pop().unwrap(), fast, stats)
}

pub(crate) fn prepared(preset: &str, overrides: &[&str], seed: u64, reference: bool) -> Machine {
    let mut m = machine_of(preset, overrides, seed);
    m.set_exact_reference(reference);
    assert_eq!(m.exact_reference(), reference);
    m.record_dma_latencies();
    let mut rng = SplitMix(seed ^ 0xF00D);
    for spe in 0..m.spe_count() as u32 {
        let img = rng.bytes((LS_HIGH - LS_LOW) as usize);
        m.local_store(spe).unwrap().write(LS_LOW as usize, &img);
    }
    m.memory().write(0, &rng.bytes(MEM));
    m
}

async fn program(spu: Spu, steps: Vec<Step>) -> u32 {
    for st in steps {
        match st {
            Step::Dma {
                get,
                barrier,
                lsa,
                ea,
                size,
                tag,
            } => match (get, barrier) {
                (true, false) => spu.mfc_get(lsa, ea, size, tag).await,
                (true, true) => spu.mfc_getb(lsa, ea, size, tag).await,
                (false, false) => spu.mfc_put(lsa, ea, size, tag).await,
                (false, true) => spu.mfc_putb(lsa, ea, size, tag).await,
            },
            Step::Wait(mask) => {
                spu.mfc_write_tag_mask(mask).await;
                spu.mfc_read_tag_status_all().await;
            }
            Step::Compute(c) => spu.compute(c).await,
        }
    }
    spu.mfc_write_tag_mask(u32::MAX).await;
    spu.mfc_read_tag_status_all().await;
    spu.spu_read_decrementer().await
}

/// Random streaming programs: mostly long DMAs between local stores and
/// memory (what makes steady states), some short ones, waits and compute.
/// Buffers may overlap: the order of the byte moves then shows in the bytes.
/// `streaming`: every SPE takes part and nearly all DMAs are 16 KB.
fn random_programs(spes: usize, seed: u64, dmas: usize, streaming: bool) -> Vec<Vec<Step>> {
    let mut rng = SplitMix(seed);
    let mut below = |n: u64| rng.next_u64() % n;
    let active = if streaming {
        spes.min(8)
    } else {
        1 + below(spes as u64) as usize
    };
    let mut programs = vec![Vec::new(); spes];
    for i in 0..dmas {
        let spe = if streaming {
            i % active
        } else {
            below(active as u64) as usize
        };
        let size = match below(if streaming { 5 } else { 10 }) {
            0..=4 => 16384,
            5 | 6 => 128 * (1 + below(64) as u32),
            7 | 8 => 16 * (1 + below(1024) as u32),
            _ => [1, 2, 4, 8][below(4) as usize],
        };
        let align = if size < 16 { size as u64 } else { 16 };
        let lsa = (LS_LOW as u64 + below((LS_HIGH - LS_LOW - 16384) as u64) / align * align) as u32;
        let ea = if below(if streaming { 5 } else { 2 }) == 0 {
            0x1_0000 + below(MEM as u64 - 0x1_0000 - 16384) / align * align
        } else {
            let other = (spe + 1 + below(spes as u64 - 1) as usize) % spes;
            MemoryMap::ls_ea(other as u32)
                + LS_LOW as u64
                + below((LS_HIGH - LS_LOW - 16384) as u64) / align * align
        };
        // Small transfers keep the low address bits of LS and EA equal.
        let ea = if size < 16 {
            ea & !15 | lsa as u64 & 15
        } else {
            ea
        };
        let tag = below(4) as u32;
        programs[spe].push(Step::Dma {
            get: below(2) == 0,
            barrier: below(12) == 0,
            lsa,
            ea,
            size,
            tag,
        });
        match below(16) {
            0 => programs[spe].push(Step::Wait(1 << tag)),
            1 => programs[spe].push(Step::Compute(below(3000))),
            _ => {}
        }
    }
    programs
}

fn random_mix(preset: &str, seed: u64, dmas: usize, streaming: bool) -> (String, String, u64) {
    both_ways(|reference| {
        let mut m = prepared(preset, &[], seed, reference);
        let spes = m.spe_count();
        for (s, p) in random_programs(spes, seed, dmas, streaming)
            .into_iter()
            .enumerate()
        {
            if !p.is_empty() {
                m.spawn_native(s as u32, 0, 0, move |spu| program(spu, p))
                    .unwrap();
            }
        }
        m
    })
}

/// One SPE's regular stream: `pairs` times a get and a put of `size` bytes
/// (either may be left out), buffers anywhere, even overlapping.
#[derive(Debug, Clone, Copy)]
struct Regular {
    get: Option<(u32, u64)>,
    put: Option<(u32, u64)>,
    size: u32,
    pairs: u32,
}

async fn regular(spu: Spu, r: Regular) -> u32 {
    for _ in 0..r.pairs {
        if let Some((lsa, ea)) = r.get {
            spu.mfc_get(lsa, ea, r.size, 0).await;
        }
        if let Some((lsa, ea)) = r.put {
            spu.mfc_put(lsa, ea, r.size, 1).await;
        }
    }
    spu.mfc_write_tag_mask(3).await;
    spu.mfc_read_tag_status_all().await;
    spu.spu_read_decrementer().await
}

/// Regular streams on random SPEs: random sizes (whole lines or not),
/// partners (local stores or memory) and buffers (overlapping at times).
/// `long`: every stream moves whole 16 KB or 8 KB DMAs between local
/// stores, many of them (the steady states worth jumping over).
fn regular_streams(preset: &str, seed: u64, long: bool) -> (String, String, u64) {
    both_ways(|reference| {
        let mut m = prepared(preset, &[], seed, reference);
        let spes = m.spe_count() as u64;
        let mut rng = SplitMix(seed);
        let mut below = |n: u64| rng.next_u64() % n;
        let size = match below(4) {
            _ if long => 8192 << below(2),
            0 | 1 => 16384,
            2 => 128 * (8 + below(121) as u32),
            _ => 16 * (64 + below(961) as u32),
        };
        let active = if long {
            2 * (1 + below(4))
        } else {
            1 + below(spes.min(8))
        };
        for s in 0..active {
            let mut end = || {
                let lsa = (LS_LOW as u64 + below(8) * 0x4000) as u32;
                let ea = if long {
                    // Partners in pairs, as in the speed benchmark.
                    MemoryMap::ls_ea((s ^ 1) as u32) + LS_LOW as u64 + below(8) * 0x4000
                } else if below(3) == 0 {
                    0x1_0000 + below(0x30) * 0x1_0000
                } else {
                    MemoryMap::ls_ea(((s + 1 + below(spes - 1)) % spes) as u32)
                        + LS_LOW as u64
                        + below(8) * 0x4000
                };
                (lsa, ea)
            };
            let (g, p) = (end(), end());
            let r = Regular {
                get: (long || below(4) != 0).then_some(g),
                put: (long || below(4) != 0).then_some(p),
                size,
                pairs: if long { 16 } else { 4 + below(12) as u32 },
            };
            m.spawn_native(s as u32, 0, 0, move |spu| regular(spu, r))
                .unwrap();
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Regular streams (what the fast-forward jumps over) on one- and
    /// two-chip machines: identical with and without it.
    #[test]
    fn regular_streams_are_identical(seed in any::<u64>(), preset in 0..3usize) {
        let preset = ["qs20-1chip", "qs20", "ps3"][preset];
        let (reference, fast, _) = regular_streams(preset, seed, false);
        prop_assert_eq!(reference, fast);
    }

    /// Random streaming DMA programs on random SPEs of one- and two-chip
    /// machines: identical with and without the fast-forward.
    #[test]
    fn random_workloads_are_identical(seed in any::<u64>(), preset in 0..4usize, dmas in 8..48usize) {
        let preset = ["qs20-1chip", "ps3", "qs20", "qs22"][preset];
        let (reference, fast, _) = random_mix(preset, seed, dmas, false);
        prop_assert_eq!(reference, fast);
    }
}

/// Regular streams: identical, and the fast-forward did jump in most of
/// them (else the comparison would prove little).
#[test]
fn regular_streams_jump_and_stay_identical() {
    let mut jumped = 0;
    for seed in 1..=8u64 {
        let preset = ["qs20-1chip", "qs20"][seed as usize % 2];
        let (reference, fast, jumps) = regular_streams(preset, seed * 7919, true);
        assert_eq!(reference, fast, "seed {seed} on {preset}");
        jumped += (jumps > 0) as u32;
    }
    assert!(jumped >= 2, "only {jumped} of 8 workloads jumped");
}

/// The speed benchmark's load (eight SPEs streaming 16 KB gets and puts
/// between partners): almost all of it is jumped over, with the same result.
#[test]
fn saturation_jumps_and_stays_identical() {
    for preset in ["qs20-1chip", "qs20"] {
        let (reference, fast, jumps) = both_ways(|reference| {
            let mut m = prepared(preset, &[], 1, reference);
            for s in 0..8u32 {
                let p = Stream {
                    get_ea: MemoryMap::ls_ea(s ^ 1) + 0x20000,
                    put_ea: MemoryMap::ls_ea(s ^ 1) + 0x30000,
                    size: 16384,
                    pairs: 12,
                };
                m.spawn_native(s, 0, 0, move |spu| stream(spu, p)).unwrap();
            }
            m
        });
        assert_eq!(reference, fast, "{preset}");
        assert!(jumps > 0, "{preset}: no jump");
    }
}

/// A stream to and from memory across DRAM refreshes: the jumps stop short
/// of each refresh.
#[test]
fn memory_streams_across_refreshes_stay_identical() {
    let overrides = [];
    let (reference, fast, jumps) = both_ways(|reference| {
        let mut m = prepared("qs20-1chip", &overrides, 1, reference);
        for s in 0..1u32 {
            let p = Stream {
                get_ea: 0x10_0000 + s as u64 * 0x4_0000,
                put_ea: 0x20_0000 + s as u64 * 0x4_0000,
                size: 16384,
                pairs: 16,
            };
            m.spawn_native(s, 0, 0, move |spu| stream(spu, p)).unwrap();
        }
        m
    });
    assert_eq!(reference, fast);
    assert!(jumps > 0, "no jump");
}

/// The same stream with noisy read latencies (`mic.latency_noise`): a run
/// whose future is not its past's repeat is never jumped over, and the same
/// seed still gives the same run.
#[test]
fn memory_streams_with_latency_noise_never_jump_and_repeat_by_seed() {
    let noisy = ["mic.latency_noise=uniform", "mic.latency_noise_ns=10"];
    let run = |overrides: &[&str]| {
        both_ways(|reference| {
            let mut m = prepared("qs20-1chip", overrides, 1, reference);
            let p = Stream {
                get_ea: 0x10_0000,
                put_ea: 0x20_0000,
                size: 16384,
                pairs: 16,
            };
            m.spawn_native(0, 0, 0, move |spu| stream(spu, p)).unwrap();
            m
        })
    };
    let (reference, fast, jumps) = run(&noisy);
    assert_eq!(jumps, 0, "a noisy run is never steady");
    assert_eq!(reference, fast);
    assert_eq!(run(&noisy).0, reference, "the same seed, the same run");
    assert_ne!(run(&[]).0, reference, "the noise moves the run");
}

/// One SPE's declared command loop (`Spu::mfc_repeat`): a body of up to four
/// gets and puts (some with barriers), started after some computing.
#[derive(Debug, Clone)]
struct Declared {
    delay: u64,
    body: Vec<MfcCommand>,
    times: u64,
    /// Issue the commands one by one instead (the plain loop).
    plain: bool,
}

async fn declared(spu: Spu, d: Declared) -> u32 {
    if d.delay > 0 {
        spu.compute(d.delay).await;
    }
    if d.plain {
        for _ in 0..d.times {
            for c in &d.body {
                let (lsa, ea, size, tag) = (c.lsa, c.ea, c.size, c.tag);
                match c.op {
                    Opcode::Get => spu.mfc_get(lsa, ea, size, tag).await,
                    Opcode::GetB => spu.mfc_getb(lsa, ea, size, tag).await,
                    Opcode::Put => spu.mfc_put(lsa, ea, size, tag).await,
                    _ => spu.mfc_putb(lsa, ea, size, tag).await,
                }
            }
        }
    } else {
        spu.mfc_repeat(&d.body, d.times).await;
    }
    spu.mfc_write_tag_mask(u32::MAX).await;
    spu.mfc_read_tag_status_all().await;
    spu.spu_read_decrementer().await
}

/// Declared loops on random SPEs, staggered: partners in pairs between
/// local stores (`long`: 16 KB commands, many of them), or anywhere,
/// memory included, with random sizes and overlapping buffers.
fn declared_loops(spes: usize, seed: u64, long: bool, plain: bool) -> Vec<Declared> {
    let mut rng = SplitMix(seed);
    let mut below = |n: u64| rng.next_u64() % n;
    let spes = spes as u64;
    let active = if long {
        2 * (1 + below(spes / 2))
    } else {
        1 + below(spes)
    };
    (0..active)
        .map(|s| {
            // Long: a get and a put, as the speed benchmark's stream.
            let len = if long { 2 } else { 1 + below(4) as usize };
            let size = if long || below(2) == 0 {
                16384
            } else {
                128 * (1 + below(128) as u32)
            };
            let body = (0..len)
                .map(|i| {
                    let get = if long { i % 2 == 0 } else { below(2) == 0 };
                    let barrier = !long && below(8) == 0;
                    let op = match (get, barrier) {
                        (true, false) => Opcode::Get,
                        (true, true) => Opcode::GetB,
                        (false, false) => Opcode::Put,
                        (false, true) => Opcode::PutB,
                    };
                    let lsa = (LS_LOW as u64 + below(8) * 0x4000) as u32;
                    let ea = if long {
                        MemoryMap::ls_ea((s ^ 1) as u32) + LS_LOW as u64 + below(8) * 0x4000
                    } else if below(3) == 0 {
                        0x1_0000 + below(0x30) * 0x1_0000
                    } else {
                        MemoryMap::ls_ea(((s + 1 + below(spes - 1)) % spes) as u32)
                            + LS_LOW as u64
                            + below(8) * 0x4000
                    };
                    MfcCommand::single(op, lsa, ea, size, below(4) as u32)
                })
                .collect();
            Declared {
                delay: below(4) * below(3000),
                body,
                times: if long { 150 } else { below(20) },
                plain,
            }
        })
        .collect()
}

fn run_declared(preset: &str, seed: u64, long: bool) -> (String, String, FastForwardStats) {
    both_ways_stats(|reference| {
        let mut m = prepared(preset, &[], seed, reference);
        let spes = m.spe_count();
        for (s, d) in declared_loops(spes, seed, long, false)
            .into_iter()
            .enumerate()
        {
            m.spawn_native(s as u32, 0, 0, move |spu| declared(spu, d))
                .unwrap();
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Declared command loops (whose commands retire and are issued again
    /// within a jump) on one- and two-chip machines: identical with and
    /// without the fast-forward.
    #[test]
    fn declared_loops_are_identical(seed in any::<u64>(), preset in 0..4usize) {
        let preset = ["qs20-1chip", "ps3", "qs20", "qs22"][preset];
        let (reference, fast, _) = run_declared(preset, seed, false);
        prop_assert_eq!(reference, fast);
    }
}

/// Declared loops of short commands (one to eight lines) repeated many
/// times over a few buffers: periods that replace every command, each
/// moving bytes to the same places, which a jump replays once (or not at
/// all, when the period simulated wrote the same bytes already); the
/// buffers of different SPEs overlap or not, so that a period may read what
/// it writes, or land bytes read before it.
fn fixed_loops(spes: usize, seed: u64) -> Vec<Declared> {
    let mut rng = SplitMix(seed);
    let mut below = |n: u64| rng.next_u64() % n;
    let spes = spes as u64;
    let active = 2 + below(spes - 1);
    let apart = below(2) == 0;
    let (len, size) = (1 + below(4) as usize, 128 * (1 + below(8) as u32));
    (0..active)
        .map(|s| {
            let body = (0..len)
                .map(|_| {
                    let op = [Opcode::Get, Opcode::Put][below(2) as usize];
                    let slot = |b: u64| b * 0x400 + if apart { s * 0x2000 } else { 0 };
                    let lsa = LS_LOW + slot(below(4)) as u32;
                    let ea = if below(4) == 0 {
                        0x1_0000 + slot(below(4))
                    } else {
                        let to = (s + 1 + below(spes - 1)) % spes;
                        MemoryMap::ls_ea(to as u32) + (LS_LOW as u64) + slot(below(4))
                    };
                    MfcCommand::single(op, lsa, ea, size, below(4) as u32)
                })
                .collect();
            Declared {
                delay: 0,
                body,
                times: 200 + below(200),
                plain: false,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Fixed periods, replayed once or not at all: identical.
    #[test]
    fn fixed_loops_are_identical(seed in any::<u64>(), preset in 0..4usize) {
        let preset = ["qs20-1chip", "qs20-1chip", "qs20-1chip", "qs20"][preset];
        let (reference, fast, _) = both_ways_stats(|reference| {
            let mut m = prepared(preset, &[], seed, reference);
            for (s, d) in fixed_loops(m.spe_count(), seed).into_iter().enumerate() {
                m.spawn_native(s as u32, 0, 0, move |spu| declared(spu, d))
                    .unwrap();
            }
            m
        });
        prop_assert_eq!(reference, fast);
    }
}

/// A declared loop runs exactly as the plain loop it stands for.
#[test]
fn a_declared_loop_is_the_plain_loop() {
    for seed in 1..=6u64 {
        let preset = ["qs20-1chip", "qs22"][seed as usize % 2];
        let runs: Vec<String> = [false, true]
            .iter()
            .map(|&plain| {
                let mut m = prepared(preset, &[], seed, true);
                let spes = m.spe_count();
                for (s, d) in declared_loops(spes, seed * 31, seed % 3 == 0, plain)
                    .into_iter()
                    .enumerate()
                {
                    m.spawn_native(s as u32, 0, 0, move |spu| declared(spu, d))
                        .unwrap();
                }
                let outcome = m.run().map(|_| ()).map_err(|e| e.to_string());
                observe(&m, outcome)
            })
            .collect();
        assert_eq!(runs[0], runs[1], "seed {seed} on {preset}");
    }
}

/// Staggered declared streams between partners (the Python speed
/// benchmark's load): the jumps span retirements and new issues, and most
/// transfers are jumped over, with the same result.
#[test]
fn staggered_declared_streams_jump_over_retirements() {
    let mut jumped = 0;
    for seed in 1..=4u64 {
        let preset = ["qs20-1chip", "qs20"][seed as usize % 2];
        let (reference, fast, ff) = run_declared(preset, seed * 104_729, true);
        assert_eq!(reference, fast, "seed {seed} on {preset}");
        jumped += (ff.commands > 0) as u32;
    }
    assert!(
        jumped >= 2,
        "only {jumped} of 4 workloads jumped over new commands"
    );
}

/// Every SPE of a two-chip qs20 streaming to its partner (`cellsim bench
/// speed`'s default load; the seed places the SPEs, some pairs across the
/// BIF): the 16 queues turn over at different rates, so the state repeats
/// only with each queue's slots named by issue order, and it is found by
/// looks aligned on one SPE's retirements. Jumps span new commands, with the
/// same result.
fn two_chip_saturation(seed: u64, pairs: u32, size: u32) -> (String, String, FastForwardStats) {
    both_ways_stats(|reference| {
        let mut m = prepared("qs20", &[], seed, reference);
        for s in 0..m.spe_count() as u32 {
            // The `stream` kernel's loop, declared.
            let cmd = |op, lsa, ea, tag| MfcCommand::single(op, lsa, ea, size, tag);
            let d = Declared {
                delay: 0,
                body: vec![
                    cmd(Opcode::Get, LS_LOW, MemoryMap::ls_ea(s ^ 1) + 0x20000, 0),
                    cmd(
                        Opcode::Put,
                        LS_LOW + 0x4000,
                        MemoryMap::ls_ea(s ^ 1) + 0x30000,
                        1,
                    ),
                ],
                times: pairs as u64,
                plain: false,
            };
            m.spawn_native(s, 0, 0, move |spu| declared(spu, d))
                .unwrap();
        }
        m
    })
}

/// The period is long (75,264 bus transfers here), and jumped as soon as
/// found: its first one is simulated once, after the start settles (here
/// about half a period, the queues' latencies included), and the jump comes
/// at its end, not after a second period recorded.
#[test]
fn two_chip_saturation_jumps_over_new_commands() {
    let (reference, fast, ff) = two_chip_saturation(1, 100, 16384);
    assert_eq!(reference, fast);
    assert!(ff.commands > 0, "no jump over new commands: {ff:?}");
    let (before, period) = ff.first.expect("a jump");
    assert!(period > 10_000, "a long period: {ff:?}");
    assert!(before < 2 * period, "jumped a period late: {ff:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4))]

    /// The same on other placements and command sizes.
    #[test]
    fn two_chip_saturation_is_identical(seed in any::<u64>(), pairs in 8..40u32, lines in 1..=128u32) {
        let (reference, fast, _) = two_chip_saturation(seed, pairs, 128 * lines);
        prop_assert_eq!(reference, fast);
    }
}
