//! Probe: blocking and nonblocking DMA latency/bandwidth on qs20 (development aid).
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, MachineConfig};
use cellsim_programs::kernels::{dma_bench, Dir, DmaBench};

fn point(dir: Dir, ls: bool, size: u32, batch: u32, count: u32) -> (f64, f64) {
    let cfg = MachineConfig::load("qs20-1chip", &[]).unwrap();
    let mut m = Machine::new(cfg, 1);
    let ea = if ls {
        MemoryMap::ls_ea(1) + 0x8000
    } else {
        m.alloc(16384, 128).unwrap()
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
    let s = m.run().unwrap();
    let ticks = match s.threads[0].state {
        cellsim_engine::ThreadState::Finished { code, .. } => code,
        _ => 0,
    };
    let ns = ticks as f64 * 40.0;
    let per = ns / count as f64;
    (per, size as f64 * count as f64 / ns)
}

fn main() {
    for (name, dir, ls) in [
        ("get mem", Dir::Get, false),
        ("put mem", Dir::Put, false),
        ("get ls", Dir::Get, true),
        ("put ls", Dir::Put, true),
    ] {
        print!("{name:8}");
        for size in [8u32, 128, 512, 2048, 16384] {
            let (lat, bw) = point(dir, ls, size, 1, 200);
            print!(" {size}:{lat:.1}ns/{bw:.1}");
        }
        println!();
        print!("{name:8} nb");
        for size in [128u32, 512, 2048, 16384] {
            let (_, bw) = point(dir, ls, size, 0, 2000);
            print!(" {size}:{bw:.1}");
        }
        println!();
    }
}
