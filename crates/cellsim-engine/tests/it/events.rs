//! The SPU event facility, one event at a time, and the PPE's libspe2 event
//! wait. Each SPU program returns what `spu_read_event_status` gave it (and
//! sometimes when), so a test checks the event bit and the cause.

use crate::util::{end_cycle, exit_code};
use cellsim_engine::memory_map::{ps, MemoryMap};
use cellsim_engine::mfc::list::ListElement;
use cellsim_engine::program::*;
use cellsim_engine::{Machine, MachineConfig, MfcCommand, Opcode, SimError};

fn qs20(overrides: &[&str]) -> Machine {
    let mut o = vec!["placement=identity".to_string()];
    o.extend(overrides.iter().map(|s| s.to_string()));
    Machine::new(MachineConfig::load("qs20-1chip", &o).unwrap(), 1)
}

/// Tg: the event fires when the tag-status update requested with
/// MFC_WrTagUpdate is met (the data is in), and the status read follows.
#[test]
fn tag_group_event_fires_when_the_requested_update_is_met() {
    let mut m = qs20(&[]);
    let src = m.alloc(16384, 128).unwrap();
    m.memory().write(src as usize, &[7u8; 16384]);
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let buf = spu.ls_alloc(16384, 128).unwrap();
            spu.spu_write_event_mask(MFC_TAG_STATUS_UPDATE_EVENT).await;
            spu.mfc_get(buf, spu.argp(), 16384, 3).await;
            spu.mfc_write_tag_mask(1 << 3).await;
            spu.mfc_write_tag_update(2).await;
            let ev = spu.spu_read_event_status().await;
            let mut b = [0u8; 1];
            spu.ls_read(buf + 16383, &mut b);
            spu.spu_write_event_ack(ev).await;
            let status = spu.mfc_read_tag_status_all().await;
            (ev == MFC_TAG_STATUS_UPDATE_EVENT && b[0] == 7 && status == 1 << 3) as u32
        })
        .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// Mb: a message arriving in the empty inbound mailbox wakes the SPU.
#[test]
fn inbound_mailbox_event_wakes_on_a_message() {
    let mut m = qs20(&[]);
    let t = m
        .spawn_native(0, 0, 0, |spu| async move {
            spu.spu_write_event_mask(MFC_IN_MBOX_AVAILABLE_EVENT).await;
            let ev = spu.spu_read_event_status().await;
            spu.spu_write_event_ack(ev).await;
            let v = spu.spu_read_in_mbox().await;
            (ev == MFC_IN_MBOX_AVAILABLE_EVENT && v == 42) as u32
        })
        .unwrap();
    m.spawn_ppe_native(|ppe| async move {
        ppe.compute(2000).await;
        ppe.spe_in_mbox_write(0, 42).await;
        0
    });
    let run = m.run().unwrap();
    assert_eq!(exit_code(&run, t), 1);
    assert!(end_cycle(&run, t) > 2000);
}

/// Le and Me: the PPE emptying a full outbound (interrupt) mailbox.
#[test]
fn outbound_mailbox_events_fire_when_the_ppe_reads() {
    for intr in [false, true] {
        let mut m = qs20(&[]);
        let bit = if intr {
            MFC_OUT_INTR_MBOX_AVAILABLE_EVENT
        } else {
            MFC_OUT_MBOX_AVAILABLE_EVENT
        };
        let t = m
            .spawn_native(0, 0, 0, move |spu| async move {
                if intr {
                    spu.spu_write_out_intr_mbox(1).await;
                } else {
                    spu.spu_write_out_mbox(1).await;
                }
                spu.spu_write_event_mask(bit).await;
                spu.spu_read_event_status().await
            })
            .unwrap();
        m.spawn_ppe_native(move |ppe| async move {
            ppe.compute(3000).await;
            if intr {
                ppe.spe_out_intr_mbox_read(0).await
            } else {
                ppe.spe_out_mbox_read(0).await
            }
        });
        let run = m.run().unwrap();
        assert_eq!(exit_code(&run, t), bit, "interrupt mailbox: {intr}");
        assert!(end_cycle(&run, t) >= 3000, "{intr}: {}", end_cycle(&run, t));
    }
}

/// S1 and S2: a signal written by the PPE; each register its own bit.
#[test]
fn signal_events_name_their_register() {
    for which in [1u8, 2] {
        let mut m = qs20(&[]);
        let t = m
            .spawn_native(0, 0, 0, move |spu| async move {
                let both = MFC_SIGNAL_NOTIFY_1_EVENT | MFC_SIGNAL_NOTIFY_2_EVENT;
                spu.spu_write_event_mask(both).await;
                let ev = spu.spu_read_event_status().await;
                let v = if which == 1 {
                    spu.spu_read_signal1().await
                } else {
                    spu.spu_read_signal2().await
                };
                if v == 9 {
                    ev
                } else {
                    0
                }
            })
            .unwrap();
        m.spawn_ppe_native(move |ppe| async move {
            ppe.compute(1000).await;
            ppe.spe_signal_write(0, which, 9).await;
            0
        });
        let run = m.run().unwrap();
        let want = if which == 1 {
            MFC_SIGNAL_NOTIFY_1_EVENT
        } else {
            MFC_SIGNAL_NOTIFY_2_EVENT
        };
        assert_eq!(exit_code(&run, t), want);
    }
}

/// Tm: the decrementer going negative wakes the SPU at that tick (a 3.2 GHz
/// timebase makes one tick one cycle).
#[test]
fn decrementer_event_fires_when_it_crosses_zero() {
    let mut m = qs20(&["timebase_mhz=3200"]);
    let t = m
        .spawn_native(0, 0, 0, |spu| async move {
            spu.spu_write_decrementer(5000).await;
            spu.spu_write_event_mask(MFC_DECREMENTER_EVENT).await;
            let ev = spu.spu_read_event_status().await;
            let now = spu.spu_read_decrementer().await;
            // negative now, and only just
            (ev == MFC_DECREMENTER_EVENT && now >= 0xFFFF_FF00) as u32
        })
        .unwrap();
    let run = m.run().unwrap();
    assert_eq!(exit_code(&run, t), 1);
    let end = end_cycle(&run, t);
    assert!((5000..5200).contains(&end), "woke at {end}");
}

/// Lr: another SPE's store to the reserved line takes the reservation.
#[test]
fn reservation_lost_event_fires_on_a_foreign_write() {
    let mut m = qs20(&[]);
    let line = m.alloc(128, 128).unwrap();
    let t = m
        .spawn_native(0, line, 0, |spu| async move {
            let ls = spu.ls_alloc(128, 128).unwrap();
            spu.mfc_getllar(ls, spu.argp()).await;
            spu.mfc_read_atomic_status().await;
            spu.spu_write_event_mask(MFC_LLR_LOST_EVENT).await;
            spu.spu_read_event_status().await
        })
        .unwrap();
    m.spawn_native(1, line, 0, |spu| async move {
        let ls = spu.ls_alloc(128, 128).unwrap();
        spu.compute(4000).await;
        spu.mfc_putlluc(ls, spu.argp()).await;
        spu.mfc_read_atomic_status().await;
        0
    })
    .unwrap();
    let run = m.run().unwrap();
    assert_eq!(exit_code(&run, t), MFC_LLR_LOST_EVENT);
    assert!(end_cycle(&run, t) > 4000);
}

/// A program's own successful putllc uses its reservation up: no Lr.
#[test]
fn own_putllc_does_not_raise_reservation_lost() {
    let mut m = qs20(&[]);
    let line = m.alloc(128, 128).unwrap();
    let t = m
        .spawn_native(0, line, 0, |spu| async move {
            let ls = spu.ls_alloc(128, 128).unwrap();
            spu.spu_write_event_mask(MFC_LLR_LOST_EVENT).await;
            spu.mfc_getllar(ls, spu.argp()).await;
            spu.mfc_read_atomic_status().await;
            spu.mfc_putllc(ls, spu.argp()).await;
            let st = spu.mfc_read_atomic_status().await;
            let pending = spu.spu_stat_event_status().await;
            (st == 0 && pending == 0) as u32
        })
        .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// Sn: a list stalling on a stall-and-notify element.
#[test]
fn list_stall_event_fires_on_a_stalled_list() {
    let mut m = qs20(&[]);
    let src = m.alloc(4096, 128).unwrap();
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let list = spu.ls_alloc(16, 8).unwrap();
            let buf = spu.ls_alloc(256, 128).unwrap();
            for (i, stall) in [(0u32, true), (1, false)] {
                let e = ListElement {
                    stall_and_notify: stall,
                    size: 128,
                    eal: spu.argp() as u32 + 128 * i,
                };
                spu.ls_write(list + 8 * i, &e.encode().to_be_bytes());
            }
            spu.spu_write_event_mask(MFC_LIST_STALL_NOTIFY_EVENT).await;
            spu.mfc_getl(buf, 0, list, 16, 4).await;
            let ev = spu.spu_read_event_status().await;
            let stalled = spu.mfc_read_list_stall_status().await;
            spu.mfc_write_list_stall_ack(4).await;
            spu.mfc_write_tag_mask(1 << 4).await;
            spu.mfc_read_tag_status_all().await;
            (ev == MFC_LIST_STALL_NOTIFY_EVENT && stalled == 1 << 4) as u32
        })
        .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// Qv: the full command queue gets a free entry when a command retires.
#[test]
fn command_queue_event_fires_when_a_full_queue_frees_an_entry() {
    let mut m = qs20(&[]);
    let src = m.alloc(16384, 128).unwrap();
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let buf = spu.ls_alloc(16384, 128).unwrap();
            for _ in 0..16 {
                spu.mfc_get(buf, spu.argp(), 16384, 0).await;
            }
            spu.spu_write_event_mask(MFC_COMMAND_QUEUE_AVAILABLE_EVENT)
                .await;
            let ev = spu.spu_read_event_status().await;
            spu.mfc_write_tag_mask(1).await;
            let done = spu.mfc_read_tag_status_immediate().await;
            spu.mfc_read_tag_status_all().await;
            // woken while the later gets still run
            (ev == MFC_COMMAND_QUEUE_AVAILABLE_EVENT && done == 0) as u32
        })
        .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// Pending events are recorded whatever the mask; the read reports only the
/// masked ones, the ack clears them, and the mask reads back.
#[test]
fn mask_filters_and_ack_clears() {
    let mut m = qs20(&[]);
    let t = m
        .spawn_native(0, 0, 0, |spu| async move {
            let (mb, s1) = (MFC_IN_MBOX_AVAILABLE_EVENT, MFC_SIGNAL_NOTIFY_1_EVENT);
            spu.spu_write_event_mask(s1).await;
            spu.compute(5000).await; // the mailbox message and the signal arrive
            let only_s1 = spu.spu_read_event_status().await;
            spu.spu_write_event_mask(mb | s1).await;
            let both = spu.spu_read_event_status().await;
            spu.spu_write_event_ack(s1).await;
            let after_ack = spu.spu_read_event_status().await;
            spu.spu_write_event_ack(mb).await;
            let none = spu.spu_stat_event_status().await;
            let mask = spu.spu_read_event_mask().await;
            let ok = only_s1 == s1 && both == mb | s1 && after_ack == mb && none == 0;
            (ok && mask == mb | s1) as u32
        })
        .unwrap();
    m.spawn_ppe_native(|ppe| async move {
        ppe.compute(500).await;
        ppe.spe_in_mbox_write(0, 1).await;
        ppe.spe_signal_write(0, 1, 1).await;
        0
    });
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// "Tag group done OR mailbox" in one read: whichever comes first wakes it.
#[test]
fn one_read_waits_on_tag_group_or_mailbox() {
    let mut m = qs20(&[]);
    let src = m.alloc(16384, 128).unwrap();
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let buf = spu.ls_alloc(16384, 128).unwrap();
            let want = MFC_TAG_STATUS_UPDATE_EVENT | MFC_IN_MBOX_AVAILABLE_EVENT;
            spu.spu_write_event_mask(want).await;
            spu.mfc_get(buf, spu.argp(), 16384, 0).await;
            spu.mfc_write_tag_mask(1).await;
            spu.mfc_write_tag_update(2).await;
            let first = spu.spu_read_event_status().await;
            spu.spu_write_event_ack(first).await;
            spu.mfc_read_tag_status_all().await;
            let second = spu.spu_read_event_status().await;
            (first == MFC_TAG_STATUS_UPDATE_EVENT && second == MFC_IN_MBOX_AVAILABLE_EVENT) as u32
        })
        .unwrap();
    m.spawn_ppe_native(|ppe| async move {
        ppe.compute(100_000).await;
        ppe.spe_in_mbox_write(0, 1).await;
        0
    });
    assert_eq!(exit_code(&m.run().unwrap(), t), 1);
}

/// A blocking read with an empty mask could never complete: an error.
#[test]
fn reading_events_with_an_empty_mask_is_an_error() {
    let mut m = qs20(&[]);
    m.spawn_native(
        0,
        0,
        0,
        |spu| async move { spu.spu_read_event_status().await },
    )
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => assert!(e.message.contains("event mask is empty"), "{e}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// An event that never comes is a deadlock naming the read.
#[test]
fn an_event_that_never_comes_is_a_deadlock() {
    let mut m = qs20(&[]);
    m.spawn_native(0, 0, 0, |spu| async move {
        spu.spu_write_event_mask(MFC_SIGNAL_NOTIFY_1_EVENT).await;
        spu.spu_read_event_status().await
    })
    .unwrap();
    match m.run() {
        Err(SimError::Deadlock { blocked, .. }) => {
            assert!(blocked[0].waits_on.contains("spu_read_event_status"))
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// libspe2 on the PPE: the out-interrupt mailbox event, then the stop event.
#[test]
fn ppe_waits_for_out_intr_mailbox_and_stop() {
    let mut m = qs20(&[]);
    m.spawn_native(3, 0, 0, |spu| async move {
        spu.compute(2000).await;
        spu.spu_write_out_intr_mbox(5).await;
        spu.compute(2000).await;
        0
    })
    .unwrap();
    let p = m.spawn_ppe_native(|ppe| async move {
        let both = SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_SPE_STOPPED;
        let first = ppe.spe_event_wait(&[(3, both)], true).await;
        let v = ppe.spe_out_intr_mbox_read(3).await;
        let second = ppe.spe_event_wait(&[(3, both)], true).await;
        let ok = first == [(3, SPE_EVENT_OUT_INTR_MBOX)]
            && v == 5
            && second == [(3, SPE_EVENT_SPE_STOPPED)];
        ok as u32
    });
    let run = m.run().unwrap();
    assert_eq!(exit_code(&run, p), 1);
    assert!(end_cycle(&run, p) >= 4000);
}

/// A PPE-to-SPE mailbox write through the memory map also raises Mb.
#[test]
fn a_dma_to_the_inbound_mailbox_raises_the_event() {
    let mut m = qs20(&[]);
    let t = m
        .spawn_native(0, 0, 0, |spu| async move {
            spu.spu_write_event_mask(MFC_IN_MBOX_AVAILABLE_EVENT).await;
            spu.spu_read_event_status().await
        })
        .unwrap();
    m.spawn_native(1, 0, 0, |spu| async move {
        let w = spu.ls_alloc(16, 16).unwrap();
        spu.ls_write_u32(w + 12, 3);
        let ea = MemoryMap::ps_ea(0) + ps::SPU_IN_MBOX as u64;
        spu.mfc_put(w + 12, ea, 4, 0).await;
        0
    })
    .unwrap();
    assert_eq!(exit_code(&m.run().unwrap(), t), MFC_IN_MBOX_AVAILABLE_EVENT);
}

/// Events change no timing of programs that do not use them, and a run
/// with events is deterministic.
#[test]
fn event_runs_are_deterministic() {
    let run = || {
        let mut m = qs20(&[]);
        let src = m.alloc(16384, 128).unwrap();
        m.spawn_native(0, src, 0, |spu| async move {
            let buf = spu.ls_alloc(16384, 128).unwrap();
            spu.spu_write_event_mask(MFC_TAG_STATUS_UPDATE_EVENT).await;
            for _ in 0..20 {
                spu.mfc_get(buf, spu.argp(), 16384, 0).await;
                spu.mfc_write_tag_mask(1).await;
                spu.mfc_write_tag_update(2).await;
                let ev = spu.spu_read_event_status().await;
                spu.spu_write_event_ack(ev).await;
                spu.mfc_read_tag_status_all().await;
            }
            0
        })
        .unwrap();
        m.run().unwrap().cycles
    };
    assert_eq!(run(), run());
}

/// The fast path takes no shape while an SPU tracks events: six SPEs
/// stream (a declared loop, which the fast-forward jumps over when alone)
/// while SPE 7 waits for the end-of-stream message, by event or by a plain
/// mailbox read; either way the run is the reference path's.
#[test]
fn no_fast_forward_jump_while_an_spu_tracks_events() {
    let run = |by_event: bool, reference: bool| {
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
        m.set_exact_reference(reference);
        for s in 0..6u32 {
            m.spawn_native(s, 0, 0, move |spu| async move {
                let peer = MemoryMap::ls_ea(s ^ 1);
                let dma = |op, lsa, ea, tag| MfcCommand::single(op, lsa, ea, 16384, tag);
                let get = dma(Opcode::Get, 0x10000, peer + 0x20000, 0);
                let put = dma(Opcode::Put, 0x14000, peer + 0x30000, 1);
                spu.mfc_repeat(&[get, put], 64).await;
                spu.mfc_write_tag_mask(3).await;
                spu.mfc_read_tag_status_all().await;
                if s == 0 {
                    let ea = MemoryMap::ps_ea(7) + ps::SPU_IN_MBOX as u64;
                    spu.mfc_put(0x18000 + 12, ea, 4, 2).await;
                    spu.mfc_write_tag_mask(1 << 2).await;
                    spu.mfc_read_tag_status_all().await;
                }
                0
            })
            .unwrap();
        }
        m.spawn_native(7, 0, 0, move |spu| async move {
            if by_event {
                spu.spu_write_event_mask(MFC_IN_MBOX_AVAILABLE_EVENT).await;
                spu.spu_read_event_status().await;
            }
            spu.spu_read_in_mbox().await
        })
        .unwrap();
        let cycles = m.run().unwrap().cycles;
        (cycles, m.fast_forward_stats().jumps)
    };
    let (plain, plain_jumps) = run(false, false);
    assert!(plain_jumps > 0, "the streams alone are jumped over");
    assert_eq!(run(false, true).0, plain);
    let (evented, jumps) = run(true, false);
    assert_eq!(jumps, 0, "no jump while SPE 7 tracks events");
    assert_eq!(run(true, true).0, evented);
}
