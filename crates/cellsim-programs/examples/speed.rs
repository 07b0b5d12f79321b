use cellsim_engine::{Machine, MachineConfig};
use cellsim_programs::kernels::{stream, Stream};
use std::time::Instant;
fn main() {
    // `speed PAIRS x ref|ff [stagger|MACHINE]`: the reference path (no
    // fast-forward); programs started 1000 cycles apart, or every SPE of
    // MACHINE streaming (as `cellsim bench speed` on qs20). `SPEED_SET`
    // (`section.key=value`, comma-separated) overrides machine settings, to
    // measure a model variant on or off (docs/model.md, "Variants").
    let set: Vec<String> = std::env::var("SPEED_SET")
        .map(|v| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let opt = std::env::args().nth(4).unwrap_or_default();
    let stagger = opt == "stagger";
    let machine = if stagger || opt.is_empty() {
        "qs20-1chip"
    } else {
        &opt
    };
    let mut m = Machine::new(MachineConfig::load(machine, &set).unwrap(), 1);
    m.set_exact_reference(std::env::args().nth(3).is_some_and(|a| a == "ref"));
    let n = m.spe_count() as u32 & !1;
    for s in 0..n {
        let pairs = std::env::args().nth(1).map_or(2000, |a| a.parse().unwrap());
        let p = Stream::to_partner(s, pairs);
        let delay = if stagger { s as u64 * 1000 } else { 0 };
        m.spawn_native_after(s, 0, 0, delay, move |spu| stream(spu, p))
            .unwrap();
    }
    let t0 = Instant::now();
    let s = m.run().unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let tr = m.eibs().map(|e| e.stats.transfers).sum::<u64>() as f64;
    eprintln!(
        "rounds {} attempts {} fast-forward {:?}",
        m.arbiter_stats().0,
        m.arbiter_stats().1,
        m.fast_forward_stats()
    );
    println!("cycles {} wall {:.3}s transfers {} -> {:.2} M transfers/s, {:.2} M bus cycles/s, agg {:.1} GB/s, events {}",
        s.cycles, wall, tr, tr / wall / 1e6, s.cycles as f64 / 2.0 / wall / 1e6, m.eibs().map(|e| e.stats.bytes).sum::<u64>() as f64 / s.ns, m.counters().events);
    if std::env::args().nth(2).is_some() {
        return;
    }
    let mut m = Machine::new(MachineConfig::load("qs20-1chip", &set).unwrap(), 1);
    cellsim_programs::traffic::start_uniform(&mut m, 0.01).unwrap();
    let t0 = Instant::now();
    m.run_for(3_000_000).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "uniform 0.01: {:.2} M bus cycles/s transfers {}",
        1.5e6 / wall / 1e6,
        m.eib().stats.transfers
    );
}
