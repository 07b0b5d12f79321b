//! Behaviour digest: runs a fixed set of scenarios and prints, for each, the
//! final cycle, every thread's end and exit value, every counter and a hash of
//! the simulated bytes. Two builds simulate identically only if their digests
//! are byte-identical; performance work checks this after every change.
//!
//! `cargo run --release --example digest > digest.txt`

use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, MachineConfig, Spu};
use cellsim_programs::kernels::{dma_bench, stream, Dir, DmaBench, Stream};

/// Main memory hashed by every scenario (everything the scenarios touch).
const MEM_HASHED: usize = 0x60_0000;

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            let n = c.len();
            c.copy_from_slice(&v[..n]);
        }
    }
}

fn fnv(h: &mut u64, bytes: &[u8]) {
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        *h ^= u64::from_le_bytes(w);
        *h = h.wrapping_mul(0x100_0000_01b3).rotate_left(29);
    }
}

thread_local! {
    /// Whether scenarios record every EIB reservation (second pass).
    static LOG: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn machine(preset: &str, overrides: &[&str], seed: u64) -> Machine {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let mut m = Machine::new(MachineConfig::load(preset, &o).unwrap(), seed);
    if LOG.with(|l| l.get()) {
        m.enable_checks();
    }
    m
}

/// Fills every local store (above the reserved area) and the hashed memory
/// with seeded bytes so that moved data shows in the hash.
fn fill(m: &mut Machine, seed: u64) {
    let mut rng = SplitMix(seed ^ 0xDA7A);
    let ls_bytes = m.timing().ls_bytes as usize;
    for s in 0..m.spe_count() as u32 {
        let mut img = vec![0u8; ls_bytes - 0x4000];
        rng.fill(&mut img);
        m.local_store(s).unwrap().write(0x4000, &img);
    }
    let mut mem = vec![0u8; MEM_HASHED];
    rng.fill(&mut mem);
    m.memory().write(0, &mem);
}

fn report(name: &str, m: &Machine) {
    println!("== {name}");
    let s = m.summary();
    println!("cycles {}", s.cycles);
    for t in &s.threads {
        println!(
            "thread {} spe {:?}/{:?} {:?}",
            t.id, t.spe, t.physical, t.state
        );
    }
    println!("placement {:?}", m.placement());
    println!("counters {:?}", m.counters());
    let e = &m.eib().stats;
    println!("eib transfers {} bytes {}", e.transfers, e.bytes);
    for (i, r) in e.segment_busy.iter().enumerate() {
        println!("segment_busy[{i}] {r:?}");
    }
    println!("sent {:?}", e.sent);
    println!("received {:?}", e.received);
    println!("mic {:?}", m.mic().stats);
    println!("arbiter {:?}", m.arbiter_stats());
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let ls_bytes = m.timing().ls_bytes as usize;
    let mut buf = vec![0u8; ls_bytes];
    for sp in 0..m.spe_count() as u32 {
        m.local_store(sp).unwrap().read(0, &mut buf);
        fnv(&mut h, &buf);
    }
    let mut mem = vec![0u8; MEM_HASHED];
    m.memory().read(0, &mut mem);
    fnv(&mut h, &mem);
    println!("bytes hash {h:016x}");
    if let Some(log) = &m.eib().log {
        // Every reservation in grant order: what was granted when.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut word = |v: u64| {
            h ^= v;
            h = h.wrapping_mul(0x100_0000_01b3).rotate_left(29);
        };
        for &(r, s, a, b) in &log.segments {
            word(((r as u64) << 8 | s as u64) ^ a << 16 ^ b << 40);
        }
        for v in [&log.sends, &log.receives] {
            for &(r, a, b) in v {
                word(r as u64 ^ a << 8 ^ b << 36);
            }
        }
        for &(r, a, b) in &log.transfers {
            word(r as u64 ^ a << 8 ^ b << 36);
        }
        for &(a, b) in &log.commands {
            word(a ^ (b as u64) << 40);
        }
        println!(
            "log {} grants {} commands, hash {h:016x}, verify {:?}",
            log.sends.len(),
            log.commands.len(),
            m.verify()
        );
    }
}

fn run(name: &str, mut m: Machine) {
    match m.run() {
        Ok(_) => report(name, &m),
        Err(e) => {
            report(name, &m);
            println!("error {e}");
        }
    }
}

fn saturation(pairs: u32) {
    let mut m = machine("qs20-1chip", &[], 1);
    fill(&mut m, 1);
    for s in 0..8u32 {
        let p = Stream::to_partner(s, pairs);
        m.spawn_native(s, 0, 0, move |spu| stream(spu, p)).unwrap();
    }
    run(&format!("saturation pairs {pairs}"), m);
}

fn seed000(preset: &str, dir: Dir, to_memory: bool, size: u32, batch: u32, count: u32) {
    let mut m = machine(preset, &[], 7);
    fill(&mut m, 7);
    let ea = if to_memory {
        0x10_0000
    } else {
        MemoryMap::ls_ea(1) + 0x10000
    };
    let p = DmaBench {
        dir,
        ea,
        size,
        batch,
        count,
    };
    m.spawn_native(0, 0, 0, move |spu| dma_bench(spu, p))
        .unwrap();
    run(
        &format!(
            "{preset} 1 SPE {dir:?} {} size {size} batch {batch} count {count}",
            if to_memory { "memory" } else { "LS" }
        ),
        m,
    );
}

fn hot_spot(to_memory: bool, dir: Dir, size: u32) {
    let mut m = machine("qs20-1chip", &[], 3);
    fill(&mut m, 3);
    for s in 1..8u32 {
        let ea = if to_memory {
            0x10_0000 + s as u64 * 0x4_0000
        } else {
            MemoryMap::ls_ea(0) + 0x4000 + (s as u64 - 1) * 0x4000
        };
        let p = DmaBench {
            dir,
            ea,
            size,
            batch: 0,
            count: (65536 / size).clamp(4, 64),
        };
        m.spawn_native(s, 0, 0, move |spu| dma_bench(spu, p))
            .unwrap();
    }
    run(
        &format!(
            "hot spot 7 SPEs {dir:?} {} size {size}",
            if to_memory { "memory" } else { "LS 0" }
        ),
        m,
    );
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Dma {
        get: bool,
        flavour: u8,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
    },
    Barrier,
    Wait {
        mask: u32,
        any: bool,
    },
    Compute(u64),
}

async fn program(spu: Spu, steps: Vec<Step>) -> u32 {
    let mut acc = 0u32;
    for st in steps {
        match st {
            Step::Dma {
                get,
                flavour,
                lsa,
                ea,
                size,
                tag,
            } => match (get, flavour) {
                (true, 1) => spu.mfc_getf(lsa, ea, size, tag).await,
                (true, 2) => spu.mfc_getb(lsa, ea, size, tag).await,
                (true, _) => spu.mfc_get(lsa, ea, size, tag).await,
                (false, 1) => spu.mfc_putf(lsa, ea, size, tag).await,
                (false, 2) => spu.mfc_putb(lsa, ea, size, tag).await,
                (false, _) => spu.mfc_put(lsa, ea, size, tag).await,
            },
            Step::Barrier => spu.mfc_barrier(0).await,
            Step::Wait { mask, any } => {
                spu.mfc_write_tag_mask(mask).await;
                let st = if any {
                    spu.mfc_read_tag_status_any().await
                } else {
                    spu.mfc_read_tag_status_all().await
                };
                acc = acc.rotate_left(5) ^ st;
            }
            Step::Compute(c) => spu.compute(c).await,
        }
    }
    spu.mfc_write_tag_mask(u32::MAX).await;
    let st = spu.mfc_read_tag_status_all().await;
    acc = acc.rotate_left(5) ^ st;
    acc ^ spu.spu_read_decrementer().await
}

fn random_mix(preset: &str, overrides: &[&str], seed: u64, dmas: usize) {
    let mut m = machine(preset, overrides, seed);
    fill(&mut m, seed);
    let spes = m.spe_count() as u64;
    let ls_bytes = m.timing().ls_bytes as u64;
    let mut rng = SplitMix(seed);
    let mut programs = vec![Vec::new(); spes as usize];
    for _ in 0..dmas {
        let spe = rng.below(spes) as usize;
        let prog: &mut Vec<Step> = &mut programs[spe];
        let size = match rng.below(10) {
            0 => [1u32, 2, 4, 8][rng.below(4) as usize],
            1..=3 => 16 * (1 + rng.below(8) as u32),
            4..=6 => 128 * (1 + rng.below(16) as u32),
            7 | 8 => 16 * (1 + rng.below(1024) as u32),
            _ => 16384,
        };
        let low = if size < 16 {
            rng.below(16 / size as u64) as u32 * size
        } else {
            0
        };
        let lsa = 0x4000 + 16 * rng.below((ls_bytes - 0x4000 - 16384) / 16) as u32 + low;
        let ea = if rng.below(10) < 4 {
            0x10_0000 + 16 * rng.below(0x40_0000 / 16) + low as u64
        } else {
            let mut other = rng.below(spes) as u32;
            if other as usize == spe {
                other = (other + 1) % spes as u32;
            }
            MemoryMap::ls_ea(other)
                + 0x4000
                + 16 * rng.below((ls_bytes - 0x4000 - 16384) / 16)
                + low as u64
        };
        let tag = if rng.below(4) == 0 {
            rng.below(32) as u32
        } else {
            rng.below(4) as u32
        };
        let flavour = match rng.below(9) {
            0 => 1,
            1 => 2,
            2 => {
                prog.push(Step::Barrier);
                0
            }
            _ => 0,
        };
        prog.push(Step::Dma {
            get: rng.below(2) == 0,
            flavour,
            lsa,
            ea,
            size,
            tag,
        });
        match rng.below(12) {
            0 => prog.push(Step::Wait {
                mask: (rng.next() as u32).max(1),
                any: rng.below(2) == 0,
            }),
            1 => prog.push(Step::Wait {
                mask: 1 << tag,
                any: rng.below(2) == 0,
            }),
            2 => prog.push(Step::Compute(rng.below(2000))),
            _ => {}
        }
    }
    for (s, p) in programs.into_iter().enumerate() {
        m.spawn_native(s as u32, 0, 0, move |spu| program(spu, p))
            .unwrap();
    }
    run(
        &format!("random mix {preset} {overrides:?} seed {seed} dmas {dmas}"),
        m,
    );
}

fn synthetic(preset: &str, rate: f64, cycles: u64) {
    let mut m = machine(preset, &[], 1);
    cellsim_programs::traffic::start_uniform(&mut m, rate).unwrap();
    m.run_for(cycles).unwrap();
    report(
        &format!("synthetic {preset} rate {rate} cycles {cycles}"),
        &m,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "uniform" {
        // Synthetic traffic only, for instruction counts: `digest uniform RATE CYCLES`.
        let mut m = machine("qs20-1chip", &[], 1);
        cellsim_programs::traffic::start_uniform(&mut m, args[2].parse().unwrap()).unwrap();
        m.run_for(args[3].parse().unwrap()).unwrap();
        println!("transfers {}", m.eib().stats.transfers);
        return;
    }
    for log in [false, true] {
        LOG.with(|l| l.set(log));
        println!("######## reservation log {log}");
        scenarios();
    }
}

fn scenarios() {
    saturation(20);
    for to_memory in [true, false] {
        for dir in [Dir::Get, Dir::Put] {
            for size in [8, 128, 1024, 16384] {
                for batch in [1, 0] {
                    let count = if size >= 16384 { 8 } else { 32 };
                    seed000("qs20-1chip", dir, to_memory, size, batch, count);
                }
            }
        }
    }
    seed000("ps3", Dir::Get, true, 4096, 0, 16);
    seed000("qs22", Dir::Put, false, 2048, 2, 16);
    for to_memory in [false, true] {
        hot_spot(to_memory, Dir::Put, 16384);
        hot_spot(to_memory, Dir::Put, 128);
    }
    hot_spot(true, Dir::Get, 4096);
    for seed in 1..=6 {
        random_mix("qs20-1chip", &[], seed, 400);
    }
    random_mix("qs20-1chip", &["eib.arbiter_window=3"], 11, 400);
    random_mix(
        "qs20-1chip",
        &["mic.write_buffer_lines=2", "biu.max_outstanding=4"],
        12,
        300,
    );
    random_mix("ps3", &[], 13, 300);
    for rate in [0.01, 0.03, 0.1] {
        synthetic("qs20-1chip", rate, 200_000);
    }
    synthetic("qs20-1chip", 0.03, 3_000);
}
