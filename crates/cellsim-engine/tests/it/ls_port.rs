//! A computation that shares its local-store port with DMA
//! (`Spu::compute_ls`): DMA takes the port first, so its lines delay the
//! SPU's loads and stores by the share of cycles the SPU wanted the port.

use crate::util::{end_cycle, qs20};
use cellsim_engine::Spu;

const COMPUTE: u64 = 40_000;

/// Gets 16 KB (128 lines) and computes meanwhile with `accesses` port uses
/// (taken from envp), then waits for the get.
async fn get_while_computing(spu: Spu) -> u32 {
    let ls = spu.ls_alloc(16384, 128).unwrap();
    spu.mfc_get(ls, spu.argp(), 16384, 1).await;
    spu.compute_ls(COMPUTE, spu.envp()).await;
    spu.mfc_write_tag_mask(1 << 1).await;
    spu.mfc_read_tag_status_all().await;
    0
}

fn end_with(accesses: u64) -> u64 {
    let mut m = qs20(&[], 1);
    let ea = m.alloc(16384, 128).unwrap();
    let tid = m
        .spawn_native(0, ea, accesses, get_while_computing)
        .unwrap();
    let s = m.run().unwrap();
    end_cycle(&s, tid)
}

#[test]
fn without_accesses_it_is_a_plain_compute() {
    async fn plain(spu: Spu) -> u32 {
        let ls = spu.ls_alloc(16384, 128).unwrap();
        spu.mfc_get(ls, spu.argp(), 16384, 1).await;
        spu.compute(COMPUTE).await;
        spu.mfc_write_tag_mask(1 << 1).await;
        spu.mfc_read_tag_status_all().await;
        0
    }
    let mut m = qs20(&[], 1);
    let ea = m.alloc(16384, 128).unwrap();
    let tid = m.spawn_native(0, ea, 0, plain).unwrap();
    let s = m.run().unwrap();
    assert_eq!(end_with(0), end_cycle(&s, tid));
}

#[test]
fn each_dma_line_delays_a_compute_that_always_wants_the_port() {
    // The 128 lines of the get land during the compute, one port cycle each.
    let base = end_with(0);
    assert_eq!(end_with(COMPUTE) - base, 128);
    // Wanting the port every other cycle loses half of them.
    assert_eq!(end_with(COMPUTE / 2) - base, 64);
    // More accesses than cycles are one per cycle (the SPU has one load/store pipe).
    assert_eq!(end_with(4 * COMPUTE), end_with(COMPUTE));
}

#[test]
fn a_compute_without_dma_is_not_delayed() {
    async fn alone(spu: Spu) -> u32 {
        spu.compute_ls(COMPUTE, COMPUTE).await;
        0
    }
    let mut m = qs20(&[], 1);
    let tid = m.spawn_native(0, 0, 0, alone).unwrap();
    let s = m.run().unwrap();
    assert_eq!(end_cycle(&s, tid), COMPUTE);
}
