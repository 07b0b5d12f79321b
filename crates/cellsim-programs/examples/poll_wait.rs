//! Host time of declared polls (`Spu::mfc_poll`) against the plain loop they
//! stand for, where SPUs wait long: one SPE puts a count into a row of memory
//! every 200,000 cycles, seven poll it every 200 cycles until the last count.
//! Same simulated cycles both ways; prints the host time of each, twice.
//!
//!     cargo run -q --release -p cellsim-programs --example poll_wait
use cellsim_engine::{Machine, MachineConfig, PollRow, Spu};
use std::time::Instant;

const ROW: u64 = 0x1_0000;

async fn writer(spu: Spu, rounds: u32, gap: u64) -> u32 {
    for n in 1..=rounds {
        spu.compute(gap).await;
        spu.ls_write_u32(0x9000, n);
        spu.mfc_put(0x9000, ROW, 16, 0).await;
        spu.mfc_write_tag_mask(1).await;
        spu.mfc_read_tag_status_all().await;
    }
    0
}

async fn plain(spu: &Spu, pause: u64, r: PollRow) {
    let mut seen = vec![0; 128];
    spu.ls_read(r.lsa, &mut seen);
    let mut now = vec![0; 128];
    loop {
        spu.compute(pause).await;
        spu.mfc_get(r.lsa, r.ea, r.size, r.tag).await;
        spu.mfc_write_tag_mask(1 << r.tag).await;
        spu.mfc_read_tag_status_all().await;
        spu.ls_read(r.lsa, &mut now);
        if now != seen {
            return;
        }
    }
}

async fn poller(spu: Spu, rounds: u32, declared: bool) -> u32 {
    let r = PollRow {
        lsa: 0x8000,
        ea: ROW,
        size: 128,
        tag: 2,
    };
    loop {
        if spu.ls_read_u32(0x8000) == rounds {
            return 0;
        }
        if declared {
            spu.mfc_poll(200, &[r]).await;
        } else {
            plain(&spu, 200, r).await;
        }
    }
}

fn main() {
    for declared in [false, true, false, true] {
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
        m.spawn_native(0, 0, 0, |spu| writer(spu, 100, 200_000))
            .unwrap();
        for s in 1..8 {
            m.spawn_native(s, 0, 0, move |spu| poller(spu, 100, declared))
                .unwrap();
        }
        let t = Instant::now();
        let s = m.run().unwrap();
        println!(
            "declared {declared}: {:.3} s host, {} cycles, {} declared polls",
            t.elapsed().as_secs_f64(),
            s.cycles,
            m.declared_polls()
        );
    }
}
