//! The PPE's caches and the SPU's local-store loops in the whole machine
//! (issue 7): what fits a cache level is served without misses, nothing
//! passes the 16 B/cycle path, two threads never lose to one on loads, an
//! SPE's put takes the PPE's copy, loops and single accesses time alike, and
//! bad loops are clear errors.

use crate::util::machine_of;
use cellsim_engine::program::{LoopOp, LsAccessLoop, PpeLoop};
use cellsim_engine::{Cycle, Machine, SimError};
use std::cell::RefCell;
use std::rc::Rc;

fn lp(op: LoopOp, ea: u64, dst: u64, bytes: u64, elem: u8, threads: u8) -> PpeLoop {
    PpeLoop {
        op,
        ea,
        dst,
        bytes,
        elem,
        stride: 0,
        threads,
        dependent: false,
        fill: 0x5a,
    }
}

/// Runs `loops` one after another in one PPE program (the first ones warm
/// the caches up); returns each one's cycles and the cache counters after
/// each.
fn run_loops(m: &mut Machine, loops: Vec<PpeLoop>) -> Vec<Cycle> {
    let out = Rc::new(RefCell::new(Vec::new()));
    let o = out.clone();
    m.spawn_ppe_native(move |ppe| async move {
        for l in loops {
            let c = ppe.access_loop(l).await;
            o.borrow_mut().push(c);
        }
        0
    });
    m.run().unwrap();
    let v = out.borrow().clone();
    v
}

fn blade() -> Machine {
    machine_of("blade21", &["numa.policy=\"node0\""], 1)
}

#[test]
fn a_buffer_that_fits_a_level_is_served_without_misses_there() {
    for (bytes, level) in [(16 * 1024u64, 1), (256 * 1024, 2)] {
        let mut m = blade();
        let a = m.alloc(bytes, 4096).unwrap();
        run_loops(&mut m, vec![lp(LoopOp::Load, a, 0, bytes, 16, 1)]);
        let before = m.ppe_cache_stats().clone();
        run_loops(
            &mut m,
            vec![
                lp(LoopOp::Load, a, 0, bytes, 8, 1),
                lp(LoopOp::Load, a, 0, bytes, 1, 2),
            ],
        );
        let s = m.ppe_cache_stats();
        assert_eq!(s.l2_misses, before.l2_misses, "L2-resident: no L2 miss");
        assert_eq!(s.prefetches, before.prefetches);
        if level == 1 {
            assert_eq!(s.l1_misses, before.l1_misses, "L1-resident: no L1 miss");
        } else {
            assert!(s.l1_misses > before.l1_misses, "256 KB does not fit the L1");
        }
    }
}

#[test]
fn no_loop_passes_the_16_byte_per_cycle_path() {
    let mut m = blade();
    let a = m.alloc(64 * 1024, 4096).unwrap();
    let b = m.alloc(64 * 1024, 4096).unwrap();
    let mut loops = vec![lp(LoopOp::Load, a, 0, 16 * 1024, 16, 1)];
    let mut moved = vec![0];
    for op in [LoopOp::Load, LoopOp::Store, LoopOp::Copy] {
        for elem in [1u8, 2, 4, 8, 16] {
            for threads in [1u8, 2] {
                for bytes in [8 * 1024u64, 64 * 1024] {
                    loops.push(lp(op, a, b, bytes, elem, threads));
                    moved.push(bytes * if op == LoopOp::Copy { 2 } else { 1 });
                }
            }
        }
    }
    let cycles = run_loops(&mut m, loops.clone());
    for ((l, c), b) in loops.iter().zip(cycles).zip(moved).skip(1) {
        assert!(
            b as f64 / c as f64 <= 16.0,
            "{:?} {} B x{}: {b} B in {c} cycles",
            l.op,
            l.elem,
            l.threads
        );
    }
}

#[test]
fn two_threads_never_lose_to_one_on_loads() {
    for bytes in [16 * 1024u64, 256 * 1024, 1 << 20] {
        for elem in [1u8, 4, 8, 16] {
            let mut c = [0; 2];
            for threads in [1u8, 2] {
                let mut m = blade();
                let a = m.alloc(bytes, 4096).unwrap();
                let warm = lp(LoopOp::Load, a, 0, bytes.min(256 * 1024), 16, 1);
                let bytes = if bytes > 256 * 1024 {
                    64 * 1024 * elem as u64
                } else {
                    bytes
                };
                let v = run_loops(
                    &mut m,
                    vec![warm, lp(LoopOp::Load, a, 0, bytes, elem, threads)],
                );
                c[threads as usize - 1] = v[1];
            }
            assert!(
                c[1] <= c[0],
                "{bytes} B of {elem} B loads: 2 threads {} > 1 thread {}",
                c[1],
                c[0]
            );
        }
    }
}

#[test]
fn an_spe_put_takes_the_ppes_copy_of_the_line() {
    let mut m = blade();
    let flag = m.alloc(128, 128).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let l2 = log.clone();
    // The PPE reads the line (it is cached), waits, reads it again after the
    // SPE's put: the second read misses both levels and sees the new value.
    m.spawn_ppe_native(move |ppe| async move {
        let v0 = ppe.load(flag, 4).await;
        ppe.compute(20_000).await;
        let v1 = ppe.load(flag, 4).await;
        l2.borrow_mut().extend([v0, v1]);
        0
    });
    m.spawn_native_after(0, flag, 0, 5_000, |spu| async move {
        let ls = spu.ls_alloc(128, 128).unwrap();
        spu.ls_write_u32(ls, 42);
        spu.mfc_put(ls, spu.argp(), 128, 0).await;
        spu.mfc_write_tag_mask(1).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    m.run().unwrap();
    assert_eq!(*log.borrow(), vec![0, 42]);
    let s = m.ppe_cache_stats();
    assert_eq!(s.snoop_invalidations, 1, "{s:?}");
    assert_eq!(s.l2_misses, 2, "the line came from memory twice: {s:?}");
    assert_eq!(
        m.ppe_cache_holds(flag),
        (true, true),
        "cached again after the second read"
    );
}

#[test]
fn a_ppe_store_to_a_reserved_line_kills_the_spes_reservation() {
    let mut m = blade();
    let line = m.alloc(128, 128).unwrap();
    m.spawn_native(0, line, 0, |spu| async move {
        let ls = spu.ls_alloc(128, 128).unwrap();
        spu.mfc_getllar(ls, spu.argp()).await;
        spu.mfc_read_atomic_status().await;
        spu.compute(10_000).await;
        spu.mfc_putllc(ls, spu.argp()).await;
        spu.mfc_read_atomic_status().await // 1: the putllc failed
    })
    .unwrap();
    m.spawn_ppe_native(move |ppe| async move {
        ppe.compute(3_000).await;
        ppe.store(line, 4, 7).await;
        0
    });
    let s = m.run().unwrap();
    assert_eq!(
        crate::util::exit_code(&s, 0),
        1,
        "the PPE's store took the reservation"
    );
}

#[test]
fn single_loads_time_like_a_dependent_loop() {
    let stride = 136u64; // a new line almost every access
    let n = 200u64;
    let mut a = blade();
    let buf = a.alloc(n * stride, 4096).unwrap();
    let mut l = lp(LoopOp::Load, buf, 0, n * 8, 8, 1);
    l.stride = stride;
    l.dependent = true;
    let looped = run_loops(&mut a, vec![l])[0];
    let mut b = blade();
    let buf = b.alloc(n * stride, 4096).unwrap();
    let t = Rc::new(RefCell::new(0));
    let t2 = t.clone();
    b.spawn_ppe_native(move |ppe| async move {
        for i in 0..n {
            ppe.load(buf + i * stride, 8).await;
        }
        0
    });
    let s = b.run().unwrap();
    *t2.borrow_mut() = crate::util::end_cycle(&s, 0);
    assert_eq!(
        looped,
        *t.borrow(),
        "a loop of dependent loads == the same loads one by one"
    );
    // And stores, which are posted.
    let mut c = blade();
    let buf = c.alloc(64 * 1024, 4096).unwrap();
    let looped = run_loops(&mut c, vec![lp(LoopOp::Store, buf, 0, 4096, 4, 1)])[0];
    let mut d = blade();
    let buf = d.alloc(64 * 1024, 4096).unwrap();
    d.spawn_ppe_native(move |ppe| async move {
        for i in 0..1024 {
            ppe.store(buf + 4 * i, 4, 0x5a5a_5a5a).await;
        }
        0
    });
    let s = d.run().unwrap();
    assert_eq!(looped, crate::util::end_cycle(&s, 0));
}

fn loop_error(l: PpeLoop) -> String {
    let mut m = blade();
    m.spawn_ppe_native(move |ppe| async move {
        ppe.access_loop(l).await;
        0
    });
    match m.run() {
        Err(SimError::Usage(msg)) => msg,
        other => panic!("expected an error for {l:?}, got {other:?}"),
    }
}

#[test]
fn bad_loops_are_errors_naming_the_value() {
    let m = blade();
    let top = m.memory_map().memory_bytes;
    let e = loop_error(lp(LoopOp::Load, 0x10008, 0, 64, 16, 1));
    assert!(
        e.contains("0x10008") && e.contains("0x10000") && e.contains("VMX"),
        "{e}"
    );
    let e = loop_error(lp(LoopOp::Copy, 0x10000, 0x20004, 64, 16, 1));
    assert!(e.contains("0x20004") && e.contains("destination"), "{e}");
    let e = loop_error(lp(LoopOp::Load, top - 64, 0, 128, 8, 1));
    assert!(
        e.contains(&format!("0x{:x}", top - 64)) && e.contains("outside main memory"),
        "{e}"
    );
    let e = loop_error(lp(LoopOp::Load, 0x10000, 0, 128, 8, 3));
    assert!(e.contains("threads=3"), "{e}");
    let e = loop_error(lp(LoopOp::Load, 0x10000, 0, 0, 8, 1));
    assert!(e.contains("bytes=0"), "{e}");
    let e = loop_error(lp(LoopOp::Load, 0x10000, 0, 96, 32, 1));
    assert!(e.contains("32 B"), "{e}");
    let e = loop_error(lp(LoopOp::Store, 0x10000, 0, 100, 8, 1));
    assert!(e.contains("bytes=100"), "{e}");
    let ls = cellsim_engine::memory_map::LS_MAP_BASE;
    let e = loop_error(lp(LoopOp::Load, ls, 0, 128, 8, 1));
    assert!(e.contains("local store"), "{e}");
}

/// One SPU loop on SPE 0, optionally while SPE 1 streams 16 KB puts into
/// SPE 0's local store; returns the loop's cycles.
fn ls_loop_cycles(op: LoopOp, elem: u8, dma: bool) -> Cycle {
    let mut m = machine_of("blade21", &["placement=identity"], 0);
    let out = Rc::new(RefCell::new(0));
    let o = out.clone();
    m.spawn_native(0, 0, 0, move |spu| async move {
        spu.compute(3_000).await; // the partner's puts are flowing by then
        let c = spu
            .ls_access_loop(LsAccessLoop {
                op,
                lsa: 0x10000,
                dst: 0x20000,
                bytes: 32 * 1024,
                elem,
                fill: 1,
            })
            .await;
        *o.borrow_mut() = c;
        0
    })
    .unwrap();
    if dma {
        let ea = cellsim_engine::memory_map::MemoryMap::ls_ea(0) + 0x30000;
        m.spawn_native(1, ea, 0, |spu| async move {
            let ls = spu.ls_alloc(16384, 128).unwrap();
            for _ in 0..16 {
                spu.mfc_put(ls, spu.argp(), 16384, 0).await;
            }
            spu.mfc_write_tag_mask(1).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
    }
    m.run().unwrap();
    let c = *out.borrow();
    c
}

#[test]
fn the_spu_moves_16_bytes_per_cycle_and_dma_into_its_store_slows_it() {
    let quiet = ls_loop_cycles(LoopOp::Load, 16, false);
    assert_eq!(
        quiet,
        2048 + 5,
        "16 B per cycle and the last load's 6-cycle latency"
    );
    assert_eq!(ls_loop_cycles(LoopOp::Store, 16, false), 2048);
    assert_eq!(ls_loop_cycles(LoopOp::Load, 4, false), 8192 * 2 + 4);
    let busy = ls_loop_cycles(LoopOp::Load, 16, true);
    // Puts arrive at 16 B per bus cycle: one 128-byte line every 16 cycles
    // takes a port cycle.
    let lost = (busy - quiet) as f64 / quiet as f64;
    assert!(
        (0.03..0.1).contains(&lost),
        "DMA cost the SPU {:.1}%",
        100.0 * lost
    );
}
