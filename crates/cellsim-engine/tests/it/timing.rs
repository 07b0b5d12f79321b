//! Timing probes, read like a datasheet: latencies and bandwidths of single
//! DMAs against Kistler et al. 2006's published numbers, and the MFC's issue and queue
//! costs. Measured with the decrementer at `timebase_mhz=3200`, so one tick is
//! one SPU cycle, exactly as the paper's benchmarks timed themselves.

use crate::util::{end_cycle, exit_code, gbs, qs20, TB_CYCLES};
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, Spu};
use std::cell::RefCell;
use std::rc::Rc;

/// Kistler et al. 2006 Table 1: an inter-SPE put of 128 bytes takes 290 cycles.
const TABLE1_CYCLES: f64 = 290.0;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Get,
    Put,
}

/// One blocking DMA timed by the decrementer, in ticks (= cycles here).
async fn blocking(spu: Spu, dir: Dir, ea: u64, size: u32) -> u32 {
    let lsa = spu.ls_alloc(16384, 128).unwrap() + (ea % 16) as u32;
    spu.mfc_write_tag_mask(1 << 5).await;
    let t0 = spu.spu_read_decrementer().await;
    match dir {
        Dir::Get => spu.mfc_get(lsa, ea, size, 5).await,
        Dir::Put => spu.mfc_put(lsa, ea, size, 5).await,
    }
    spu.mfc_read_tag_status_all().await;
    let t1 = spu.spu_read_decrementer().await;
    t0.wrapping_sub(t1)
}

/// Runs one blocking DMA on logical SPE `spe` of a fresh identity-placed qs20.
fn blocking_cycles(spe: u32, dir: Dir, ea_of: impl FnOnce(&mut Machine) -> u64, size: u32) -> u32 {
    let mut m = qs20(&[TB_CYCLES, "placement=identity"], 1);
    let ea = ea_of(&mut m);
    m.spawn_native(spe, 0, 0, move |spu| blocking(spu, dir, ea, size))
        .unwrap();
    let s = m.run().unwrap();
    exit_code(&s, 0)
}

/// A 128-byte blocking put into another SPE's local store takes Table 1's
/// 290 cycles (within 10%) for every ordered pair of SPEs.
#[test]
fn inter_spe_put_128_bytes_matches_table1() {
    for src in 0..8u32 {
        for dst in (0..8u32).filter(|&d| d != src) {
            let c = blocking_cycles(src, Dir::Put, |_| MemoryMap::ls_ea(dst) + 0x8000, 128);
            let err = (c as f64 - TABLE1_CYCLES).abs() / TABLE1_CYCLES;
            assert!(
                err <= 0.10,
                "put 128 B SPE {src} -> LS of SPE {dst}: {c} cycles, Table 1 says 290 (off by {:.1}%)",
                err * 100.0
            );
        }
    }
}

/// The decrementer at 3200 MHz counts SPU cycles: the measured latency agrees
/// with the thread's own end cycle in the run summary.
#[test]
fn decrementer_at_core_clock_agrees_with_thread_end() {
    let mut m = qs20(&[TB_CYCLES], 3);
    let ea = MemoryMap::ls_ea(1) + 0x4000;
    m.spawn_native(0, 0, 0, move |spu| blocking(spu, Dir::Put, ea, 128))
        .unwrap();
    let s = m.run().unwrap();
    let ticks = exit_code(&s, 0) as u64;
    let end = end_cycle(&s, 0);
    // Before the first read: the tag-mask write; after the last: nothing but the
    // read's own channel cost. Both are a few cycles.
    assert!(
        ticks < end && end - ticks <= 8,
        "decrementer says {ticks} cycles, the thread ran {end}"
    );
}

/// At the board's 25 MHz timebase (Kistler et al. 2006) the decrementer ticks once per
/// 128 SPU cycles (40 ns).
#[test]
fn decrementer_ticks_every_128_cycles_at_25_mhz() {
    let mut m = qs20(&[], 1);
    m.spawn_native(0, 0, 0, |spu| async move {
        let t0 = spu.spu_read_decrementer().await;
        spu.compute(128 * 1000).await;
        let t1 = spu.spu_read_decrementer().await;
        t0.wrapping_sub(t1)
    })
    .unwrap();
    let s = m.run().unwrap();
    let ticks = exit_code(&s, 0);
    assert!(
        (1000..=1001).contains(&ticks),
        "{ticks} ticks for 128000 cycles"
    );
    let ns = s.ns;
    assert!((ns - 40_000.0).abs() < 10.0, "run took {ns} ns");
}

/// A blocking 8-byte get from main memory is under 100 ns (320 cycles) from
/// every SPE (Kistler et al. 2006 Fig 4a).
#[test]
fn small_memory_get_is_under_100_ns() {
    for spe in 0..8u32 {
        let c = blocking_cycles(spe, Dir::Get, |m| m.alloc(128, 128).unwrap() + 8, 8);
        assert!(
            c < 320,
            "8-byte get from memory on SPE {spe}: {c} cycles (>= 100 ns)"
        );
        // ...and it is a real round trip, not free.
        assert!(
            c > 200,
            "8-byte get from memory on SPE {spe}: only {c} cycles"
        );
    }
}

/// A blocking 16 KB get from another SPE's local store moves at least
/// 20 GB/s (Kistler et al. 2006 Fig 4b: 22.5 GB/s).
#[test]
fn large_ls_get_reaches_20_gbs() {
    for spe in 0..8u32 {
        let other = (spe + 3) % 8;
        let c = blocking_cycles(spe, Dir::Get, |_| MemoryMap::ls_ea(other) + 0x10000, 16384);
        let bw = gbs(16384, c as u64);
        assert!(
            bw >= 20.0,
            "16 KB get SPE {spe} <- LS {other}: {bw:.1} GB/s"
        );
        assert!(
            bw <= 25.6,
            "16 KB get beats the 25.6 GB/s port: {bw:.1} GB/s"
        );
    }
}

/// Blocking 16 KB DMAs with main memory (Kistler et al. 2006 Fig 4b): puts near
/// 22.5 GB/s, gets near 15 GB/s — the MIC's per-requester read window.
#[test]
fn large_memory_dmas_match_fig4b() {
    let put = gbs(
        16384,
        blocking_cycles(0, Dir::Put, |m| m.alloc(16384, 128).unwrap(), 16384) as u64,
    );
    let get = gbs(
        16384,
        blocking_cycles(0, Dir::Get, |m| m.alloc(16384, 128).unwrap(), 16384) as u64,
    );
    assert!(
        (20.0..=25.6).contains(&put),
        "16 KB put to memory: {put:.1} GB/s (paper 22.5)"
    );
    assert!(
        (13.0..=17.0).contains(&get),
        "16 KB get from memory: {get:.1} GB/s (paper 15)"
    );
}

/// Streams `n` 16 KB gets (or puts) without waiting in between; returns ticks.
async fn stream(spu: Spu, dir: Dir, ea: u64, n: u32) -> u32 {
    let lsa = spu.ls_alloc(16384, 128).unwrap();
    spu.mfc_write_tag_mask(1).await;
    let t0 = spu.spu_read_decrementer().await;
    for _ in 0..n {
        match dir {
            Dir::Get => spu.mfc_get(lsa, ea, 16384, 0).await,
            Dir::Put => spu.mfc_put(lsa, ea, 16384, 0).await,
        }
    }
    spu.mfc_read_tag_status_all().await;
    t0.wrapping_sub(spu.spu_read_decrementer().await)
}

/// Aggregate get bandwidth from memory of the first `spes` SPEs streaming
/// together.
fn memory_get_bandwidth(spes: u32) -> f64 {
    const N: u32 = 12;
    let mut m = qs20(&[TB_CYCLES, "placement=identity"], 1);
    let mut total = 0u64;
    for spe in 0..spes {
        let ea = m.alloc(16384, 128).unwrap();
        m.spawn_native(spe, 0, 0, move |spu| stream(spu, Dir::Get, ea, N))
            .unwrap();
        total += N as u64 * 16384;
    }
    let s = m.run().unwrap();
    gbs(total, s.threads_end())
}

/// Two SPEs streaming 16 KB gets from memory together move more than one
/// alone: one requester is limited by its MIC read window, two saturate the
/// memory (Kistler et al. 2006: "two or more get sources saturate the bandwidth") —
/// but never beyond the 25.6 GB/s of the XDR memory.
#[test]
fn two_memory_readers_beat_one() {
    let one = memory_get_bandwidth(1);
    let two = memory_get_bandwidth(2);
    let four = memory_get_bandwidth(4);
    assert!(
        two > 1.2 * one,
        "one reader {one:.1} GB/s, two {two:.1} GB/s"
    );
    assert!(two >= 22.0, "two readers only reach {two:.1} GB/s");
    for (n, bw) in [(1, one), (2, two), (4, four)] {
        assert!(
            bw <= 25.6 * 1.001,
            "{n} readers exceed DRAM peak: {bw:.2} GB/s"
        );
    }
}

/// Nonblocking 2 KB puts to memory and to a local store reach about the
/// asymptotic 25.6 GB/s (Kistler et al. 2006 Fig 5b, 5f).
#[test]
fn nonblocking_2k_puts_reach_port_bandwidth() {
    for to_ls in [false, true] {
        let mut m = qs20(&[TB_CYCLES, "placement=identity"], 1);
        let ea = if to_ls {
            MemoryMap::ls_ea(1) + 0x8000
        } else {
            m.alloc(2048, 128).unwrap()
        };
        m.spawn_native(0, 0, 0, move |spu| async move {
            let lsa = spu.ls_alloc(2048, 128).unwrap();
            spu.mfc_write_tag_mask(1).await;
            let t0 = spu.spu_read_decrementer().await;
            for _ in 0..200 {
                spu.mfc_put(lsa, ea, 2048, 0).await;
            }
            spu.mfc_read_tag_status_all().await;
            t0.wrapping_sub(spu.spu_read_decrementer().await)
        })
        .unwrap();
        let s = m.run().unwrap();
        let bw = gbs(200 * 2048, exit_code(&s, 0) as u64);
        assert!(
            (23.0..=25.6).contains(&bw),
            "2 KB nonblocking puts to {}: {bw:.1} GB/s",
            if to_ls { "LS" } else { "memory" }
        );
    }
}

/// Issue costs of `k` DMAs in a row, each measured between two decrementer
/// reads, minus the cost of two back-to-back reads.
fn issue_costs(overrides: &[&str], k: usize) -> (Vec<u32>, u32) {
    let mut o = vec![TB_CYCLES];
    o.extend_from_slice(overrides);
    let mut m = qs20(&o, 1);
    let ea = m.alloc(16384, 128).unwrap();
    let costs = Rc::new(RefCell::new(Vec::new()));
    let out = costs.clone();
    m.spawn_native(0, 0, 0, move |spu| async move {
        let lsa = spu.ls_alloc(16384, 128).unwrap();
        let a = spu.spu_read_decrementer().await;
        let b = spu.spu_read_decrementer().await;
        let read = a.wrapping_sub(b);
        for i in 0..k {
            let t0 = spu.spu_read_decrementer().await;
            spu.mfc_get(lsa, ea, 16384, (i % 32) as u32).await;
            let t1 = spu.spu_read_decrementer().await;
            out.borrow_mut().push(t0.wrapping_sub(t1) - read);
        }
        read
    })
    .unwrap();
    let s = m.run().unwrap();
    let read = exit_code(&s, 0);
    let v = costs.borrow().clone();
    (v, read)
}

/// With room in the queue a DMA costs the SPU exactly `mfc.issue_cycles`
/// (Table 1's 10 cycles, or an overridden value), for each of the 16 entries.
#[test]
fn issue_costs_issue_cycles_when_the_queue_has_room() {
    let (costs, read) = issue_costs(&[], 16);
    assert_eq!(read, 2, "a decrementer read costs spu.channel_cycles");
    assert_eq!(costs, vec![10; 16]);
    let (costs, _) = issue_costs(&["mfc.issue_cycles=25"], 16);
    assert_eq!(costs, vec![25; 16]);
}

/// The 17th outstanding DMA stalls the SPU until a queue entry frees; the
/// queue depth is a machine parameter.
#[test]
fn seventeenth_dma_stalls_until_an_entry_frees() {
    for depth in [16u32, 4] {
        let ov = format!("mfc.queue_depth={depth}");
        let mut m = qs20(&[TB_CYCLES, &ov], 1);
        let ea = m.alloc(16384, 128).unwrap();
        let log = Rc::new(RefCell::new(Vec::new()));
        let out = log.clone();
        m.spawn_native(0, 0, 0, move |spu| async move {
            let lsa = spu.ls_alloc(16384, 128).unwrap();
            let mut costs = Vec::new();
            for tag in 0..depth {
                let t0 = spu.spu_read_decrementer().await;
                spu.mfc_get(lsa, ea, 16384, tag).await;
                costs.push(t0.wrapping_sub(spu.spu_read_decrementer().await));
            }
            let all = (1u32 << depth) - 1;
            spu.mfc_write_tag_mask(all).await;
            let before = spu.mfc_read_tag_status_immediate().await;
            let t0 = spu.spu_read_decrementer().await;
            spu.mfc_get(lsa, ea, 128, depth).await;
            let stall = t0.wrapping_sub(spu.spu_read_decrementer().await);
            let after = spu.mfc_read_tag_status_immediate().await;
            out.borrow_mut().push((costs, before, stall, after));
            spu.mfc_write_tag_mask(all | 1 << depth).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
        m.run().unwrap();
        let (costs, before, stall, after) = log.borrow()[0].clone();
        assert_eq!(
            costs,
            vec![12; depth as usize],
            "depth {depth}: issue + one read each"
        );
        assert_eq!(before, 0, "depth {depth}: nothing can be done yet");
        // A 16 KB get from memory takes over 3000 cycles; the stall lasts until
        // the first one retires.
        assert!(
            stall > 2000,
            "depth {depth}: the extra DMA only took {stall} cycles"
        );
        assert!(
            after != 0,
            "depth {depth}: the SPU resumed but no tag group completed (status {after:#x})"
        );
        assert_eq!(
            after.count_ones(),
            1,
            "depth {depth}: exactly one entry freed ({after:#x})"
        );
    }
}

/// `n` SPEs (logical 0..n, identity placement) each stream 64 DMAs of 4 KB to
/// or from one hot spot; returns (aggregate GB/s, each SPE's end cycle).
fn hot_spot(n: u32, get: bool, memory: bool) -> (f64, Vec<u64>) {
    let mut m = qs20(&[TB_CYCLES, "placement=identity"], 1);
    let hot = if memory {
        m.alloc(4096, 128).unwrap()
    } else {
        MemoryMap::ls_ea(7) + 0x10000
    };
    let tids: Vec<usize> = (0..n)
        .map(|spe| {
            m.spawn_native(spe, 0, 0, move |spu| async move {
                spu.mfc_write_tag_mask(1).await;
                for _ in 0..64 {
                    if get {
                        spu.mfc_get(0x8000, hot, 4096, 0).await;
                    } else {
                        spu.mfc_put(0x8000, hot, 4096, 0).await;
                    }
                }
                spu.mfc_read_tag_status_all().await;
                0
            })
            .unwrap()
        })
        .collect();
    let s = m.run().unwrap();
    let ends = tids.iter().map(|&t| end_cycle(&s, t)).collect();
    (gbs(n as u64 * 64 * 4096, s.cycles), ends)
}

/// A hot spot (one local store, or memory) is served at its asymptotic
/// 25.6 GB/s as soon as two or more SPEs get from it (Kistler et al. 2006 Fig 6a: "two
/// or more get sources saturate the bandwidth"); puts into it lose a little,
/// the receiving port's turn to another sender after each transfer (one bus
/// cycle in nine: "a minor performance degradation"), so gets outperform puts.
#[test]
fn hot_spot_gets_saturate_puts_lose_the_port_switches() {
    for memory in [false, true] {
        for n in [2u32, 4, 7] {
            let (get, _) = hot_spot(n, true, memory);
            let (put, _) = hot_spot(n, false, memory);
            let place = if memory { "memory" } else { "one LS" };
            assert!(
                (24.0..=25.6 * 1.001).contains(&get),
                "{n} SPEs get from {place}: {get:.2} GB/s"
            );
            assert!(
                (25.6 * 8.0 / 9.0 * 0.98..25.6 * 0.95).contains(&put),
                "{n} SPEs put to {place}: {put:.2} GB/s"
            );
        }
    }
}

/// Max over min of the SPEs' finishing times.
fn spread(ends: &[u64]) -> f64 {
    *ends.iter().max().unwrap() as f64 / *ends.iter().min().unwrap() as f64
}

/// Seven SPEs reading one hot spot share it fairly: they all finish within a
/// few percent of each other (Kistler et al. 2006 Fig 7: no measurable difference).
#[test]
fn hot_spot_gets_are_shared_fairly() {
    for memory in [false, true] {
        let (_, ends) = hot_spot(7, true, memory);
        assert!(
            spread(&ends) < 1.05,
            "memory={memory}: finishing times {ends:?}"
        );
    }
}

/// Seven SPEs writing one hot spot should share it fairly too (the data
/// arbiter is round-robin apart from the MIC).
#[test]

fn hot_spot_puts_are_shared_fairly() {
    for memory in [false, true] {
        let (_, ends) = hot_spot(7, false, memory);
        assert!(
            spread(&ends) < 1.25,
            "memory={memory}: finishing times {ends:?}"
        );
    }
}

/// Active SPEs streaming get+put pairs with a passive partner's local store:
/// couples do not disturb each other, so 2 and 4 couples move 2x and 4x what
/// one does (Jiménez-González et al. 2007 Fig 13), and one SPE moves more than one port's worth.
#[test]
fn couples_scale_linearly() {
    let one = couples(1);
    assert!(
        one > 25.6,
        "get+put of one SPE: {one:.1} GB/s (one direction's port is 25.6)"
    );
    for k in [2u32, 4] {
        let bw = couples(k);
        assert!(
            bw >= 0.97 * k as f64 * one,
            "{k} couples: {bw:.1} GB/s vs one: {one:.1}"
        );
    }
}

/// One active SPE with 32 get+put pairs in flight to a passive partner reaches
/// almost the 2 x 25.6 GB/s of its two ports for elements of 1 KB and more
/// (Jiménez-González et al. 2007 Fig 11, "almost peak").
#[test]

fn one_active_spe_get_put_reaches_almost_peak() {
    let bw = couples(1);
    assert!(bw >= 0.9 * 51.2, "one active SPE get+put: {bw:.1} GB/s");
}

/// Aggregate GB/s of `k` couples (active SPE i, passive SPE i+4), each
/// streaming 1 MB of 2 KB get+put pairs.
fn couples(k: u32) -> f64 {
    let mut m = qs20(&[TB_CYCLES, "placement=identity"], 1);
    for a in 0..k {
        let ea = MemoryMap::ls_ea(a + 4) + 0x10000;
        m.spawn_native(a, 0, 0, move |spu| async move {
            spu.mfc_write_tag_mask(3).await;
            for _ in 0..512 {
                spu.mfc_get(0x8000, ea, 2048, 0).await;
                spu.mfc_put(0xC000, ea + 0x8000, 2048, 1).await;
            }
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
    }
    let s = m.run().unwrap();
    gbs(k as u64 * 2 * 512 * 2048, s.cycles)
}

/// A 64-element DMA list of 16-byte gets from another SPE's local store under each choice of
/// `mfc.list_fetch`: cycles from the command to its tag status, and the bytes.
fn list_of_small_gets(choice: &str) -> (u32, Vec<u8>) {
    use cellsim_engine::mfc::list::ListElement;
    const N: u32 = 64;
    let setting = format!("mfc.list_fetch={choice}");
    let mut m = qs20(&[TB_CYCLES, "placement=identity", &setting], 1);
    let src = MemoryMap::ls_ea(1) + 0x10000;
    let bytes: Vec<u8> = (0..N as usize * 128)
        .map(|i| (i * 13 % 251) as u8)
        .collect();
    m.spawn_native(0, src, 0, move |spu| async move {
        let list = spu.ls_alloc(8 * N, 8).unwrap();
        let buf = spu.ls_alloc(16 * N, 128).unwrap();
        for i in 0..N {
            // Every element in a line of its own: each is one bus request.
            let e = ListElement {
                stall_and_notify: false,
                size: 16,
                eal: (spu.argp() + 128 * i as u64) as u32,
            };
            spu.ls_write(list + 8 * i, &e.encode().to_be_bytes());
        }
        spu.mfc_write_tag_mask(1 << 2).await;
        let t0 = spu.spu_read_decrementer().await;
        spu.mfc_getl(buf, spu.argp() & !0xFFFF_FFFF, list, 8 * N, 2)
            .await;
        spu.mfc_read_tag_status_all().await;
        let t1 = spu.spu_read_decrementer().await;
        t0.wrapping_sub(t1)
    })
    .unwrap();
    m.spawn_native(1, 0, 0, |_| async { 0 }).unwrap();
    m.local_store(1).unwrap().write(0x10000, &bytes);
    let s = m.run().unwrap();
    let mut out = vec![0u8; 16 * N as usize];
    m.local_store(0).unwrap().read(0x4000 + 0x200, &mut out); // after the 512-byte list
    (exit_code(&s, 0), out)
}

/// `mfc.list_fetch`: fetching each element only when it is needed costs a
/// list of small elements the unrolling of each element beyond fetching
/// ahead; reselecting each element costs it the DMAC's command set-up per
/// element (qs20: 96 cycles). The bytes moved are the same.
#[test]
fn list_fetch_choices_cost_what_they_say_and_move_the_same_bytes() {
    let (ahead, bytes) = list_of_small_gets("ahead");
    let (each, bytes_each) = list_of_small_gets("each");
    let (reselect, bytes_reselect) = list_of_small_gets("reselect");
    assert!(bytes.iter().any(|&b| b != 0));
    assert_eq!(bytes, bytes_each);
    assert_eq!(bytes, bytes_reselect);
    // Ahead, elements follow each other one fetch (10 cycles) apart at most.
    // Ahead, a fetch overlaps the unrolling of the element before it; each,
    // it starts after it: one unroll time (a bus cycle, 2 cycles) more per element.
    assert!(each >= ahead + 63 * 2, "each {each} against ahead {ahead}");
    assert!(reselect >= 63 * 96, "reselect: {reselect} cycles");
}
