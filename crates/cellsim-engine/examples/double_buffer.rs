//! Example: double-buffered streaming from memory on 8 SPEs, as a native Rust
//! program (the twin of `examples/double_buffer.py`).
//!
//! Each SPE squares its share of a big-endian f32 array: while it works on one
//! 16 KB buffer, the MFC fetches the next into the other (`mfc_getb` keeps the
//! fetch behind the put still draining that buffer). The program checks its
//! results and prints the simulated time.
//!
//! Run: `cargo run --release -p cellsim-engine --example double_buffer`

use cellsim_engine::{Machine, MachineConfig, Spu};

const SPES: u32 = 8;
const CHUNK: u32 = 16384;
const CHUNKS_PER_SPE: u32 = 16;
const CYCLES_PER_CHUNK: u64 = CHUNK as u64 / 16 * 2;

async fn wait(spu: &Spu, tag: u32) {
    spu.mfc_write_tag_mask(1 << tag).await;
    spu.mfc_read_tag_status_all().await;
}

/// The SPE program: `argp` is this SPE's source; the destination follows the
/// whole source array at a fixed distance (`envp`).
async fn spe_main(spu: Spu) -> u32 {
    let (src, dst) = (spu.argp(), spu.argp() + spu.envp());
    let buf = [
        spu.ls_alloc(CHUNK, 128).unwrap(),
        spu.ls_alloc(CHUNK, 128).unwrap(),
    ];
    spu.mfc_get(buf[0], src, CHUNK, 0).await;
    for i in 0..CHUNKS_PER_SPE {
        let (cur, nxt) = ((i % 2) as usize, ((i + 1) % 2) as usize);
        if i + 1 < CHUNKS_PER_SPE {
            spu.mfc_getb(buf[nxt], src + ((i + 1) * CHUNK) as u64, CHUNK, nxt as u32)
                .await;
        }
        wait(&spu, cur as u32).await;
        let mut data = vec![0u8; CHUNK as usize];
        spu.ls_read(buf[cur], &mut data);
        for w in data.chunks_exact_mut(4) {
            let x = f32::from_be_bytes([w[0], w[1], w[2], w[3]]);
            w.copy_from_slice(&(x * x).to_be_bytes());
        }
        spu.ls_write(buf[cur], &data);
        spu.compute(CYCLES_PER_CHUNK).await;
        spu.mfc_put(buf[cur], dst + (i * CHUNK) as u64, CHUNK, cur as u32)
            .await;
    }
    spu.mfc_write_tag_mask(0b11).await;
    spu.mfc_read_tag_status_all().await;
    0
}

fn main() {
    let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
    let share = (CHUNKS_PER_SPE * CHUNK) as u64;
    let bytes = share * SPES as u64;
    let data = m.alloc(bytes, 128).unwrap();
    let out = m.alloc(bytes, 128).unwrap();
    let floats = (bytes / 4) as usize;
    for i in 0..floats {
        let x = (i % 1000) as f32;
        m.memory().write(data as usize + 4 * i, &x.to_be_bytes());
    }
    for spe in 0..SPES {
        m.spawn_native(spe, data + spe as u64 * share, out - data, spe_main)
            .unwrap();
    }
    let r = m.run().unwrap();
    for i in 0..floats {
        let mut b = [0u8; 4];
        m.memory().read(out as usize + 4 * i, &mut b);
        let x = (i % 1000) as f32;
        assert_eq!(f32::from_be_bytes(b), x * x, "float {i}");
    }
    let moved = 2 * bytes;
    println!(
        "{SPES} SPEs squared {floats} floats ({} MB moved) in {:.1} us simulated",
        moved >> 20,
        r.ns / 1000.0
    );
    println!(
        "memory bandwidth used: {:.1} GB/s (the XDR peak is 25.6 GB/s)",
        moved as f64 / r.ns
    );
}
