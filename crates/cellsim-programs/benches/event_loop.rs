//! Criterion benchmarks of the event loop: the saturation stream (8 SPEs
//! moving 16 KB gets and puts between partner local stores), synthetic uniform
//! traffic on the rings, and the calendar alone.
//!
//! Run with `cargo bench -p cellsim-engine`. The numbers that matter to users
//! (transfers per second) are printed by `cellsim bench speed`.

use cellsim_engine::calendar::Calendar;
use cellsim_engine::{Machine, MachineConfig};
use cellsim_programs::kernels::{stream, Stream};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn saturation(c: &mut Criterion) {
    let mut g = c.benchmark_group("saturation");
    let pairs = 20u32;
    g.throughput(Throughput::Elements(8 * 2 * pairs as u64 * 128)); // 128-byte transfers
    g.bench_function("8 SPEs, 16 KB get+put to partner LS", |b| {
        b.iter(|| {
            let mut m = Machine::new(MachineConfig::load("qs20", &[]).unwrap(), 1);
            for s in 0..8u32 {
                let p = Stream::to_partner(s, pairs);
                m.spawn_native(s, 0, 0, move |spu| stream(spu, p)).unwrap();
            }
            m.run().unwrap()
        })
    });
    g.finish();
}

fn uniform(c: &mut Criterion) {
    let mut g = c.benchmark_group("uniform");
    let bus_cycles = 100_000u64;
    g.throughput(Throughput::Elements(bus_cycles));
    for rate in [0.01, 0.03] {
        g.bench_function(format!("rate {rate}, bus cycles"), |b| {
            b.iter(|| {
                let mut m = Machine::new(MachineConfig::load("qs20", &[]).unwrap(), 1);
                cellsim_programs::traffic::start_uniform(&mut m, rate).unwrap();
                m.run_for(bus_cycles * 2).unwrap();
                m.eib().stats.transfers
            })
        });
    }
    g.finish();
}

fn calendar(c: &mut Criterion) {
    let mut g = c.benchmark_group("calendar");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("schedule+drain 10k near events", |b| {
        let mut buf = Vec::new();
        // One warm calendar, as in a run: slot vectors keep their capacity.
        let mut cal: Calendar<u32> = Calendar::new();
        b.iter(|| {
            let base = cal.now();
            for i in 0..10_000u64 {
                cal.schedule(base + i / 4 + (i * 37) % 200, i as u32);
            }
            let mut n = 0;
            while let Some(t) = cal.next_time() {
                cal.advance_to(t);
                cal.take_due(&mut buf);
                n += buf.len();
                buf.clear();
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, saturation, uniform, calendar);
criterion_main!(benches);
