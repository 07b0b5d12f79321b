//! The synchronisation facilities: atomics, mailboxes, signals, DMA lists,
//! proxy DMAs, PPE threads.

use crate::util::exit_code;
use cellsim_engine::memory_map::{ps, MemoryMap};
use cellsim_engine::mfc::list::ListElement;
use cellsim_engine::program::{MFC_GETLLAR_STATUS, MFC_PUTLLC_STATUS};
use cellsim_engine::{Machine, MachineConfig, SimError};

fn qs20(seed: u64) -> Machine {
    Machine::new(
        MachineConfig::load("qs20-1chip", &["placement=identity".into()]).unwrap(),
        seed,
    )
}

/// 8 SPEs x 400 atomic increments of one counter give exactly 3200, whatever the seed.
#[test]
fn atomic_increments_are_never_lost() {
    for seed in [1, 2, 3] {
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), seed);
        let counter = m.alloc(128, 128).unwrap();
        for s in 0..8 {
            m.spawn_native(s, counter, 0, |spu| async move {
                let line = spu.ls_alloc(128, 128).unwrap();
                let mut retries = 0;
                for _ in 0..400 {
                    loop {
                        spu.mfc_getllar(line, spu.argp()).await;
                        assert_eq!(spu.mfc_read_atomic_status().await, MFC_GETLLAR_STATUS);
                        let v = spu.ls_read_u32(line);
                        spu.ls_write_u32(line, v + 1);
                        spu.mfc_putllc(line, spu.argp()).await;
                        if spu.mfc_read_atomic_status().await & MFC_PUTLLC_STATUS == 0 {
                            break;
                        }
                        retries += 1;
                    }
                }
                retries
            })
            .unwrap();
        }
        let run = m.run().unwrap();
        assert_eq!(
            m.memory().read_u32_be(counter as usize),
            3200,
            "seed {seed}"
        );
        let retries: u32 = (0..8).map(|t| exit_code(&run, t)).sum();
        assert!(retries > 0, "contention should make some putllc fail");
    }
}

/// A PPE program and an SPE program talk through the mailboxes.
#[test]
fn ppe_and_spe_exchange_mailbox_messages() {
    let mut m = qs20(1);
    let spu = m
        .spawn_native(2, 0, 0, |spu| async move {
            let mut sum = 0;
            for _ in 0..10 {
                let v = spu.spu_read_in_mbox().await;
                sum += v;
                spu.spu_write_out_mbox(v * 2).await;
            }
            sum
        })
        .unwrap();
    let ppe = m.spawn_ppe_native(|ppe| async move {
        let mut got = 0;
        for i in 1..=10u32 {
            ppe.spe_in_mbox_write(2, i).await;
            got += ppe.spe_out_mbox_read(2).await;
        }
        got
    });
    let run = m.run().unwrap();
    assert_eq!(exit_code(&run, spu), 55);
    assert_eq!(exit_code(&run, ppe), 110);
}

/// Mailbox timing: a PPE-to-SPE message about 150 ns, an SPU-SPU round trip
/// through the inbound mailboxes about 300 ns (Kistler et al. 2006).
#[test]
fn mailbox_latencies_match_seed_000() {
    // PPE -> SPE: the PPE writes at t0, the SPU (already waiting) sees it. A
    // 3.2 GHz timebase makes the decrementer count cycles.
    let mut m = Machine::new(
        MachineConfig::load(
            "qs20-1chip",
            &["placement=identity".into(), "timebase_mhz=3200".into()],
        )
        .unwrap(),
        1,
    );
    let t_spu = m
        .spawn_native(0, 0, 0, |spu| async move {
            spu.spu_write_decrementer(u32::MAX).await;
            spu.spu_read_in_mbox().await;
            u32::MAX - spu.spu_read_decrementer().await
        })
        .unwrap();
    m.spawn_ppe_native(|ppe| async move {
        ppe.compute(1000).await;
        ppe.spe_in_mbox_write(0, 7).await;
        0
    });
    m.set_time_limit(1_000_000);
    let run = m.run().unwrap();
    let cycles = exit_code(&run, t_spu) as f64;
    let ns = (cycles - 1000.0) / 3.2; // the PPE waited 1000 cycles before writing
    assert!(
        (100.0..200.0).contains(&ns),
        "PPE->SPE message took {ns} ns"
    );

    // SPE <-> SPE round trip: each writes the other's inbound mailbox by DMA.
    let mut m = qs20(1);
    let ping = m
        .spawn_native(0, 0, 0, |spu| async move {
            let word = spu.ls_alloc(16, 16).unwrap();
            spu.mfc_write_tag_mask(1).await;
            spu.spu_write_decrementer(u32::MAX).await;
            let t0 = spu.spu_read_decrementer().await;
            let n = 20;
            for i in 0..n {
                spu.ls_write_u32(word + 12, i);
                spu.mfc_put(
                    word + 12,
                    MemoryMap::ps_ea(1) + ps::SPU_IN_MBOX as u64,
                    4,
                    0,
                )
                .await;
                spu.spu_read_in_mbox().await;
            }
            (t0 - spu.spu_read_decrementer().await) * 40 / n
        })
        .unwrap();
    m.spawn_native(1, 0, 0, |spu| async move {
        let word = spu.ls_alloc(16, 16).unwrap();
        for _ in 0..20 {
            let v = spu.spu_read_in_mbox().await;
            spu.ls_write_u32(word + 12, v);
            spu.mfc_put(
                word + 12,
                MemoryMap::ps_ea(0) + ps::SPU_IN_MBOX as u64,
                4,
                0,
            )
            .await;
        }
        0
    })
    .unwrap();
    let run = m.run().unwrap();
    let rt = exit_code(&run, ping);
    assert!(
        (250..=350).contains(&rt),
        "SPU-SPU mailbox round trip {rt} ns"
    );
}

/// Seven SPEs each set their bit in SPE 0's signal register 1 in OR mode; SPE 0
/// gathers them all.
#[test]
fn signal_or_mode_gathers_bits() {
    let mut m = qs20(1);
    m.set_signal_mode(0, 1, true).unwrap();
    let gather = m
        .spawn_native(0, 0, 0, |spu| async move {
            let mut seen = 0;
            while seen != 0b1111_1110 {
                seen |= spu.spu_read_signal1().await;
            }
            seen
        })
        .unwrap();
    for s in 1..8u32 {
        m.spawn_native(s, 0, 0, move |spu| async move {
            let w = spu.ls_alloc(16, 16).unwrap();
            spu.compute(100 * s as u64).await;
            spu.ls_write_u32(w + 12, 1 << s);
            spu.mfc_sndsig(w + 12, MemoryMap::ps_ea(0) + ps::SIG_NOTIFY_1 as u64, 2)
                .await;
            spu.mfc_write_tag_mask(1 << 2).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
    }
    assert_eq!(exit_code(&m.run().unwrap(), gather), 0b1111_1110);
}

/// A DMA list moves exactly the bytes its elements say, like the same
/// transfers issued one by one.
#[test]
fn dma_list_matches_element_by_element() {
    let sizes = [128u32, 16, 4096, 48, 256, 16384, 32];
    let run = |as_list: bool| {
        let mut m = qs20(1);
        let src = m.alloc(64 * 1024, 128).unwrap();
        for i in 0..64 * 1024 {
            m.memory().write(src as usize + i, &[(i * 7 % 251) as u8]);
        }
        m.spawn_native(0, src, 0, move |spu| async move {
            let list = spu.ls_alloc(8 * sizes.len() as u32, 8).unwrap();
            let buf = spu.ls_alloc(64 * 1024, 128).unwrap();
            let mut ea = spu.argp();
            let mut lsa = buf;
            for (i, &sz) in sizes.iter().enumerate() {
                // Scatter the sources: element i comes from 512*i bytes further on.
                let e_ea = ea + 512 * i as u64;
                if as_list {
                    let e = ListElement {
                        stall_and_notify: false,
                        size: sz,
                        eal: e_ea as u32,
                    };
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&e.encode().to_be_bytes());
                    spu.ls_write(list + 8 * i as u32, &b);
                } else {
                    spu.mfc_get(lsa, e_ea, sz, 1).await;
                }
                lsa += sz;
                ea += sz as u64;
            }
            if as_list {
                spu.mfc_getl(
                    buf,
                    spu.argp() & !0xFFFF_FFFF,
                    list,
                    8 * sizes.len() as u32,
                    1,
                )
                .await;
            }
            spu.mfc_write_tag_mask(1 << 1).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
        m.run().unwrap();
        let total: u32 = sizes.iter().sum();
        let ls = m.local_store(0).unwrap();
        let mut out = vec![0u8; total as usize];
        ls.read(0x4000 + 0x80, &mut out); // after the 56-byte list, 128-aligned
        out
    };
    let a = run(true);
    let b = run(false);
    assert_eq!(a, b);
    assert!(a.iter().any(|&x| x != 0));
}

/// Stall-and-notify: the list stops after the marked element until acknowledged.
#[test]
fn list_stall_and_notify_stops_until_acknowledged() {
    let mut m = qs20(1);
    let src = m.alloc(4096, 128).unwrap();
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let list = spu.ls_alloc(24, 8).unwrap();
            let buf = spu.ls_alloc(3 * 128, 128).unwrap();
            for (i, stall) in [(0u32, false), (1, true), (2, false)] {
                let e = ListElement {
                    stall_and_notify: stall,
                    size: 128,
                    eal: spu.argp() as u32 + 128 * i,
                };
                spu.ls_write(list + 8 * i, &e.encode().to_be_bytes());
            }
            spu.mfc_getl(buf, 0, list, 24, 5).await;
            let stalled = spu.mfc_read_list_stall_status().await;
            spu.mfc_write_tag_mask(1 << 5).await;
            let before = spu.mfc_read_tag_status_immediate().await;
            spu.compute(5000).await;
            let still = spu.mfc_read_tag_status_immediate().await;
            spu.mfc_write_list_stall_ack(5).await;
            spu.mfc_read_tag_status_all().await;
            // stalled tag 5; not complete before the ack even after a long wait
            (stalled == 1 << 5 && before == 0 && still == 0) as u32
        })
        .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// A PPE moves data into an SPE's local store with a proxy DMA.
#[test]
fn proxy_dma_from_the_ppe() {
    let mut m = qs20(1);
    let src = m.alloc(1024, 128).unwrap();
    m.memory().write(src as usize, &[9u8; 1024]);
    let spu = m
        .spawn_native(3, 0, 0, |spu| async move {
            spu.spu_read_in_mbox().await; // the PPE says the data is there
            let mut b = [0u8; 1];
            spu.ls_read(0x8000 + 1023, &mut b);
            b[0] as u32
        })
        .unwrap();
    m.spawn_ppe_native(move |ppe| async move {
        ppe.proxy_get(3, 0x8000, src, 1024, 4).await;
        ppe.proxy_wait_all(3, 1 << 4).await;
        ppe.spe_in_mbox_write(3, 1).await;
        0
    });
    assert_eq!(exit_code(&m.run().unwrap(), spu), 9);
}

/// A PPE thread's lwarx/stwcx and SPE putllcs on the same line stay atomic.
#[test]
fn ppe_and_spe_atomics_share_a_counter() {
    let mut m = qs20(2);
    let counter = m.alloc(128, 128).unwrap();
    for s in 0..4 {
        m.spawn_native(s, counter, 0, |spu| async move {
            let line = spu.ls_alloc(128, 128).unwrap();
            for _ in 0..200 {
                loop {
                    spu.mfc_getllar(line, spu.argp()).await;
                    spu.mfc_read_atomic_status().await;
                    let v = spu.ls_read_u32(line);
                    spu.ls_write_u32(line, v + 1);
                    spu.mfc_putllc(line, spu.argp()).await;
                    if spu.mfc_read_atomic_status().await & MFC_PUTLLC_STATUS == 0 {
                        break;
                    }
                }
            }
            0
        })
        .unwrap();
    }
    m.spawn_ppe_native(move |ppe| async move {
        for _ in 0..200 {
            loop {
                let v = ppe.lwarx(counter, 4).await;
                if ppe.stwcx(counter, 4, v + 1).await {
                    break;
                }
            }
        }
        0
    });
    m.run().unwrap();
    assert_eq!(m.memory().read_u32_be(counter as usize), 1000);
}

/// An SPU waiting for a message that nobody will send is reported, naming the call.
#[test]
fn waiting_for_a_mailbox_nobody_fills_is_a_deadlock() {
    let mut m = qs20(1);
    m.spawn_native(4, 0, 0, |spu| async move { spu.spu_read_in_mbox().await })
        .unwrap();
    match m.run() {
        Err(SimError::Deadlock { blocked, .. }) => {
            assert_eq!(blocked.len(), 1);
            assert!(
                blocked[0].waits_on.contains("spu_read_in_mbox"),
                "{blocked:?}"
            );
            assert!(blocked[0].who.contains("SPE 4"));
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// Reading the atomic status with nothing outstanding is an error at the call.
#[test]
fn atomic_status_without_a_command_is_an_error() {
    let mut m = qs20(1);
    m.spawn_native(
        0,
        0,
        0,
        |spu| async move { spu.mfc_read_atomic_status().await },
    )
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => assert!(e.message.contains("no atomic command"), "{e}"),
        other => panic!("expected an MFC error, got {other:?}"),
    }
}

/// A putllc to a line never reserved is a program bug, reported at the call.
#[test]
fn putllc_without_a_reservation_is_an_error() {
    let mut m = qs20(1);
    let line = m.alloc(256, 128).unwrap();
    m.spawn_native(0, line, 0, |spu| async move {
        let ls = spu.ls_alloc(128, 128).unwrap();
        spu.mfc_getllar(ls, spu.argp()).await;
        spu.mfc_read_atomic_status().await;
        spu.mfc_putllc(ls, spu.argp() + 128).await; // another line
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => {
            assert!(e.message.contains("without a reservation"), "{e}");
            assert!(e.command.contains("mfc_putllc"));
        }
        other => panic!("expected an MFC error, got {other:?}"),
    }
}
