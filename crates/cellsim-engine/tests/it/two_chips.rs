//! The two-chip blade: 16 SPEs, the BIF between the chips, memory on both
//! chips' MICs (NUMA), and the MFC's TLB.

use crate::mix::{build, check_data, load, mix_strategy, MEM_DST, MEM_DST_LEN};
use crate::util::{exit_code, machine_of, TB_CYCLES};
use cellsim_engine::config::NumaPolicy;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::program::{LoopOp, PpeLoop};
use cellsim_engine::{Machine, ThreadState};
use proptest::prelude::*;

/// A qs20 blade whose SPE contexts land on both chips, memory interleaved.
fn blade(seed: u64) -> Machine {
    machine_of(
        "qs20",
        &["placement=\"random\"", "numa.policy=\"interleave\""],
        seed,
    )
}

/// Random conflict-free mixes on up to 16 SPEs of both chips, between local
/// stores and memory on both nodes: every byte lands as the reference model
/// says, no EIB is overbooked and neither direction of the BIF carries more
/// than its bandwidth.
fn run_blade_mix(
    spes: usize,
    specs: &[crate::mix::Spec],
    data_seed: u64,
    seed: u64,
) -> Result<(), String> {
    let mix = build(spes, specs);
    let mut m = blade(seed);
    // Place the mix's memory areas: with interleaving, pages on both chips.
    m.alloc(MEM_DST + MEM_DST_LEN, 128)
        .map_err(|e| e.to_string())?;
    m.enable_checks();
    let (exp, tids) = load(&mut m, &mix, data_seed);
    let s = m.run().map_err(|e| e.to_string())?;
    check_data(&m, &mix, &exp)?;
    for &t in &tids {
        if !matches!(s.threads[t].state, ThreadState::Finished { code: 0, .. }) {
            return Err(format!("thread {t}: {:?}", s.threads[t].state));
        }
    }
    m.verify().map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 100,
        ..ProptestConfig::default()
    })]

    #[test]
    fn bytes_cross_the_chips_intact(
        (spes, specs) in mix_strategy(48),
        extra in 0..=8usize,
        data_seed in any::<u64>(),
        seed in any::<u64>(),
    ) {
        if let Err(e) = run_blade_mix(spes + extra, &specs, data_seed, seed) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// `spe` (logical) gets or puts `bytes` in 16 KB DMAs from `ea`, nonblocking;
/// returns GB/s at 3.2 GHz.
fn stream(m: &mut Machine, spe: u32, ea: u64, bytes: u64, get: bool) -> f64 {
    let tid = m
        .spawn_native(spe, ea, bytes, move |spu| async move {
            let ls = spu.ls_alloc(16384, 128).unwrap();
            spu.mfc_write_tag_mask(1).await;
            let t0 = spu.spu_read_decrementer().await;
            for off in (0..spu.envp()).step_by(16384) {
                if get {
                    spu.mfc_get(ls, spu.argp() + off, 16384, 0).await;
                } else {
                    spu.mfc_put(ls, spu.argp() + off, 16384, 0).await;
                }
            }
            spu.mfc_read_tag_status_all().await;
            t0.wrapping_sub(spu.spu_read_decrementer().await)
        })
        .unwrap();
    let s = m.run().unwrap();
    bytes as f64 / exit_code(&s, tid) as f64 * 3.2
}

/// One blocking 128-byte get's cycles from logical SPE `spe`.
fn small_get(m: &mut Machine, spe: u32, ea: u64) -> u32 {
    let tid = m
        .spawn_native(spe, ea, 0, move |spu| async move {
            let ls = spu.ls_alloc(128, 128).unwrap();
            spu.mfc_write_tag_mask(1).await;
            let t0 = spu.spu_read_decrementer().await;
            spu.mfc_get(ls, spu.argp(), 128, 0).await;
            spu.mfc_read_tag_status_all().await;
            t0.wrapping_sub(spu.spu_read_decrementer().await)
        })
        .unwrap();
    exit_code(&m.run().unwrap(), tid)
}

/// SPEs 0-7 of a blade are chip 0's, 8-15 chip 1's (identity placement).
fn identity_blade(overrides: &[&str]) -> Machine {
    let mut o = vec![TB_CYCLES, "placement=\"identity\""];
    o.extend_from_slice(overrides);
    machine_of("qs20", &o, 1)
}

#[test]
fn memory_of_the_other_chip_is_farther_and_behind_the_link() {
    // Latency: the data cross the BIF back (the request's crossing overlaps
    // the command phase, which both pay: the other chip snoops every
    // coherent command).
    let get_from = |node: u8| {
        let mut m = identity_blade(&[]);
        let ea = m
            .alloc_placed(4096, 128, Some(NumaPolicy::Node(node)), false)
            .unwrap();
        small_get(&mut m, 0, ea)
    };
    let (near, far) = (get_from(0), get_from(1));
    let cfg = cellsim_engine::MachineConfig::load("qs20", &[]).unwrap();
    let t = cfg.timing();
    assert!(
        far as u64 >= near as u64 + t.bif_latency,
        "128 B get: {near} cycles from chip 0's memory, {far} from chip 1's"
    );
    // Bandwidth: a stream from the other chip's memory is held to the link.
    let mut m = identity_blade(&["bif.link_gbs=5.0"]);
    let ea = m
        .alloc_placed(1 << 20, 128, Some(NumaPolicy::Node(1)), false)
        .unwrap();
    let gbs = stream(&mut m, 0, ea, 1 << 20, true);
    assert!(
        (4.0..=5.0).contains(&gbs),
        "{gbs:.2} GB/s through a 5 GB/s link"
    );
    assert_eq!(
        m.bif().unwrap().links[1].bytes,
        1 << 20,
        "every byte crossed chip 1 -> 0"
    );
    assert_eq!(m.bif().unwrap().links[0].bytes, 0);
}

#[test]
fn an_spe_on_the_other_chip_reaches_a_local_store_over_the_bif() {
    let mut m = identity_blade(&[]);
    m.enable_checks();
    let ea = MemoryMap::ls_ea(9) + 0x8000; // SPE 9 is on chip 1
    m.local_store(9).unwrap().write(0x8000, &[0x5A; 4096]);
    let tid = m
        .spawn_native(2, ea, 0, |spu| async move {
            let ls = spu.ls_alloc(4096, 128).unwrap();
            spu.mfc_get(ls, spu.argp(), 4096, 3).await;
            spu.mfc_write_tag_mask(1 << 3).await;
            spu.mfc_read_tag_status_all().await;
            let mut b = [0u8; 4096];
            spu.ls_read(ls, &mut b);
            b.iter().all(|&x| x == 0x5A) as u32
        })
        .unwrap();
    let s = m.run().unwrap();
    assert_eq!(exit_code(&s, tid), 1);
    m.verify().unwrap();
    let b = m.bif().unwrap();
    assert_eq!((b.links[0].bytes, b.links[1].bytes), (0, 4096));
}

#[test]
fn a_put_from_the_other_chip_takes_the_ppes_cached_copy() {
    let mut m = identity_blade(&[]);
    let ea = m
        .alloc_placed(4096, 128, Some(NumaPolicy::Node(0)), false)
        .unwrap();
    // The PPE (chip 0) loads the line into its caches.
    m.spawn_ppe_native(move |ppe| async move {
        ppe.access_loop(PpeLoop {
            op: LoopOp::Load,
            ea,
            dst: 0,
            bytes: 128,
            elem: 8,
            threads: 1,
            stride: 0,
            dependent: false,
            fill: 0,
        })
        .await;
        0
    });
    m.run().unwrap();
    assert_eq!(m.ppe_cache_holds(ea), (true, true));
    // SPE 12, on chip 1, puts to that line in chip 0's memory.
    m.spawn_native(12, ea, 0, |spu| async move {
        let ls = spu.ls_alloc(128, 128).unwrap();
        spu.mfc_put(ls, spu.argp(), 128, 0).await;
        spu.mfc_write_tag_mask(1).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    m.run().unwrap();
    assert_eq!(m.ppe_cache_holds(ea), (false, false));
}

#[test]
fn numa_policies_place_pages_and_refuse_what_cannot_be() {
    let mut m = machine_of("qs20", &[], 1);
    let page = 64 * 1024;
    let a = m.alloc(4 * page, page).unwrap();
    assert!(
        (0..4).all(|i| m.memory_node(a + i * page) == 0),
        "first touch: chip 0"
    );
    let b = m
        .alloc_placed(4 * page, page, Some(NumaPolicy::Interleave), false)
        .unwrap();
    let nodes: Vec<usize> = (0..4).map(|i| m.memory_node(b + i * page)).collect();
    assert!(nodes.contains(&0) && nodes.contains(&1), "{nodes:?}");
    let e = m
        .alloc_placed(page, page, Some(NumaPolicy::Node(2)), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("node 2") && e.contains("2 nodes"), "{e}");
    let e = m
        .alloc_placed(600 << 20, 128, Some(NumaPolicy::Node(1)), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("node 1") && e.contains("512 MB"), "{e}");
    let h = m.alloc_placed(100, 128, None, true).unwrap();
    assert_eq!(h % (16 << 20), 0, "huge pages are 16 MB aligned");
}

#[test]
fn the_tlb_costs_a_walk_per_page_and_nothing_when_off() {
    // 4 MB read twice from memory, 16 KB at a time (blocking: a stream with
    // its queue full hides the walks behind the other commands' data): with
    // 4 KB pages (1 MB of reach) the second pass misses on every page again;
    // with 64 KB pages it hits.
    let run = |page_kb: &str, entries: &str| {
        let mut m = machine_of(
            "qs20",
            &[TB_CYCLES, "placement=\"identity\"", page_kb, entries],
            1,
        );
        let ea = m.alloc(4 << 20, 65536).unwrap();
        let tid = m
            .spawn_native(0, ea, 0, |spu| async move {
                let ls = spu.ls_alloc(16384, 128).unwrap();
                spu.mfc_write_tag_mask(1).await;
                for _pass in 0..2 {
                    for off in (0..4u64 << 20).step_by(16384) {
                        spu.mfc_get(ls, spu.argp() + off, 16384, 0).await;
                        spu.mfc_read_tag_status_all().await;
                    }
                }
                0
            })
            .unwrap();
        let s = m.run().unwrap();
        exit_code(&s, tid);
        (m.tlb_stats(0).unwrap().unwrap_or((0, 0)), s.cycles)
    };
    let ((lookups, small), t_small) = run("numa.page_kb=4", "tlb.entries=256");
    // One lookup each time a 16 KB command reaches another page.
    assert_eq!(lookups, 2 * 1024);
    assert_eq!(
        small,
        2 * 1024,
        "4 KB pages: every page misses on both passes"
    );
    let ((_, large), t_large) = run("numa.page_kb=64", "tlb.entries=256");
    assert_eq!(
        large, 64,
        "64 KB pages: 64 misses, then the second pass hits"
    );
    let ((off, _), t_off) = run("numa.page_kb=4", "tlb.entries=0");
    assert_eq!(off, 0);
    assert!(
        t_off < t_large && t_large < t_small,
        "{t_off} {t_large} {t_small}"
    );
}

#[test]
fn sixteen_spes_run_on_a_blade_and_eight_stay_on_chip_zero_by_default() {
    let m = machine_of("qs20", &[], 7);
    assert_eq!(m.spe_count(), 16);
    let place = m.placement();
    assert!(place[..8].iter().all(|&p| p < 8), "{place:?}");
    assert!(place[8..].iter().all(|&p| p >= 8), "{place:?}");
    let r = blade(7).placement();
    assert!(
        r[..8].iter().any(|&p| p >= 8),
        "random placement uses both chips: {r:?}"
    );
    let e = machine_of("qs20", &[], 1)
        .spawn_native(16, 0, 0, |_| async { 0 })
        .unwrap_err()
        .to_string();
    assert!(e.contains("SPE 16") && e.contains("16 SPEs"), "{e}");
}

#[test]
fn a_blade_run_is_deterministic() {
    let once = |seed| {
        let specs: Vec<crate::mix::Spec> = (0..32)
            .map(|i| crate::mix::Spec {
                spe: i % 16,
                get: i % 3 != 0,
                remote: if i % 2 == 0 { None } else { Some((i * 5) % 16) },
                size: 4096,
                low: 0,
                pad: 0,
                src_pos: (i as u32).wrapping_mul(2654435761) >> 16,
                tag: (i % 4) as u32,
                order: crate::mix::Order::Plain,
                wait: None,
            })
            .collect();
        let mix = build(16, &specs);
        let mut m = blade(seed);
        m.alloc(MEM_DST + MEM_DST_LEN, 128).unwrap();
        let _ = load(&mut m, &mix, 3);
        let s = m.run().unwrap();
        (s.cycles, m.placement(), m.bif().unwrap().links[0].bytes)
    };
    assert_eq!(once(5), once(5));
}
