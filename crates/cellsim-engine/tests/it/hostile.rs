//! Hostile programs (issue 22): DMA-list elements rewritten after issue,
//! problem-state registers reached through lists, durations that overflow
//! simulated time, runs that poll forever. Each ends in a `SimError` naming
//! the value and the rule: never a panic, never wrong bytes, never a hang.
//! A proptest drives random (often invalid) commands and list rewrites
//! through the decoder and the list-element path.

use crate::util::qs20;
use cellsim_engine::memory_map::{ps, MemoryMap};
use cellsim_engine::mfc::list::ListElement;
use cellsim_engine::storage::Storage;
use cellsim_engine::{Machine, MfcCommand, MfcErrorKind, Opcode, Request, SimError, Spu};
use proptest::prelude::*;

/// Writes element `i` of the list at `list`.
fn put_element(spu: &Spu, list: u32, i: u32, size: u32, eal: u32, stall: bool) {
    let e = ListElement {
        stall_and_notify: stall,
        size,
        eal,
    };
    spu.ls_write(list + 8 * i, &e.encode().to_be_bytes());
}

/// A 4-element get list of 128-byte elements from `src`, with element 2
/// rewritten (size, low EA) right after the issue, before the MFC fetches it.
fn rewritten_list(size: u32, eal: Option<u32>) -> (Machine, Result<(), SimError>) {
    let mut m = qs20(&[], 3);
    let src = m.alloc(4096, 128).unwrap();
    m.spawn_native(1, src, 0, move |spu| async move {
        let list = spu.ls_alloc(32, 8).unwrap();
        let buf = spu.ls_alloc(4 * 128, 128).unwrap();
        for i in 0..4 {
            put_element(&spu, list, i, 128, spu.argp() as u32 + 128 * i, false);
        }
        spu.mfc_getl(buf, spu.argp(), list, 32, 3).await;
        let eal = eal.unwrap_or(spu.argp() as u32 + 256);
        put_element(&spu, list, 2, size, eal, false);
        spu.mfc_write_tag_mask(1 << 3).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    let r = m.run().map(|_| ());
    (m, r)
}

fn list_fault(size: u32, eal: Option<u32>) -> cellsim_engine::MfcError {
    match rewritten_list(size, eal).1 {
        Err(SimError::Mfc(e)) => e,
        other => panic!("expected an MFC error at fetch, got {other:?}"),
    }
}

/// An element rewritten to a bad size is refused when fetched, with the
/// error it would have raised at issue, naming the element.
#[test]
fn element_rewritten_to_a_bad_size_is_refused_at_fetch() {
    let e = list_fault(24, None);
    assert_eq!(e.kind, MfcErrorKind::List, "{e}");
    let text = e.to_string();
    for needle in [
        "mfc_getl",
        "list element 2",
        "fetched by the MFC",
        "size 24",
        "rewritten",
    ] {
        assert!(text.contains(needle), "{needle:?} missing: {text}");
    }
    assert_eq!(e.spe, Some(1));
}

/// Rewritten to an unmapped address: refused, no zeros moved silently.
#[test]
fn element_rewritten_to_an_unmapped_address_is_refused_at_fetch() {
    let e = list_fault(128, Some(0xF000_0000));
    assert_eq!(e.kind, MfcErrorKind::Unmapped, "{e}");
    assert!(e.to_string().contains("not mapped"), "{e}");
}

/// Rewritten to a misaligned address or a size running past the local
/// store (the cases that panicked in the storage copy before).
#[test]
fn element_rewritten_past_the_local_store_or_misaligned_is_refused() {
    let e = list_fault(128, Some(8));
    assert_eq!(e.kind, MfcErrorKind::Alignment, "{e}");
    let mut m = qs20(&[], 4);
    let src = m.alloc(64 * 1024, 128).unwrap();
    m.spawn_native(0, src, 0, move |spu| async move {
        // The list's data ends 256 bytes before the end of the local store.
        let list = 0x3_0000;
        let buf = 256 * 1024 - 3 * 128 - 128;
        for i in 0..3 {
            put_element(&spu, list, i, 128, spu.argp() as u32, false);
        }
        spu.mfc_getl(buf, spu.argp(), list, 24, 0).await;
        put_element(&spu, list, 1, 16384, spu.argp() as u32, false);
        spu.mfc_write_tag_mask(1).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => assert_eq!(e.kind, MfcErrorKind::LsRange, "{e}"),
        other => panic!("expected an ls_range error, got {other:?}"),
    }
}

/// A rewrite to another valid element is legal: the MFC moves what the
/// element says when it is fetched.
#[test]
fn element_rewritten_to_a_valid_one_is_used() {
    let (m, r) = rewritten_list(128, None);
    r.unwrap();
    let mut got = [0u8; 1];
    m.local_store(1)
        .unwrap()
        .read(0x4000 + 0x80 + 256, &mut got);
    assert_eq!(got[0], 0);
}

/// List elements obey the register rule of single DMAs: 4 bytes to a mailbox.
/// (It was not checked for lists before.)
#[test]
fn list_element_to_a_register_must_be_four_bytes() {
    let mut m = qs20(&[], 5);
    m.spawn_native(0, 0, 0, move |spu| async move {
        let list = spu.ls_alloc(8, 8).unwrap();
        let buf = spu.ls_alloc(16, 16).unwrap();
        let ea = MemoryMap::ps_ea(1) + ps::SPU_IN_MBOX as u64;
        // 2 bytes, aligned like the register: only the register rule is broken.
        put_element(&spu, list, 0, 2, ea as u32, false);
        spu.mfc_putl(buf + (ea as u32 & 0xF), ea, list, 8, 0).await;
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => {
            assert_eq!(e.kind, MfcErrorKind::Size, "{e}");
            assert!(e.to_string().contains("4 bytes at a time"), "{e}");
        }
        other => panic!("expected a register-size error, got {other:?}"),
    }
}

/// A zero-length element with stall-and-notify stalls the list (the flag
/// applies whatever the element's size).
#[test]
fn zero_length_stall_and_notify_element_stalls() {
    let mut m = qs20(&[], 6);
    let src = m.alloc(4096, 128).unwrap();
    let t = m
        .spawn_native(0, src, 0, |spu| async move {
            let list = spu.ls_alloc(24, 8).unwrap();
            let buf = spu.ls_alloc(2 * 128, 128).unwrap();
            put_element(&spu, list, 0, 128, spu.argp() as u32, false);
            put_element(&spu, list, 1, 0, spu.argp() as u32, true);
            put_element(&spu, list, 2, 128, spu.argp() as u32 + 128, false);
            spu.mfc_getl(buf, spu.argp(), list, 24, 7).await;
            let stalled = spu.mfc_read_list_stall_status().await;
            spu.mfc_write_tag_mask(1 << 7).await;
            let before = spu.mfc_read_tag_status_immediate().await;
            spu.mfc_write_list_stall_ack(7).await;
            spu.mfc_read_tag_status_all().await;
            (stalled == 1 << 7 && before == 0) as u32
        })
        .unwrap();
    let s = m.run().unwrap();
    assert_eq!(crate::util::exit_code(&s, t), 1);
}

/// `compute(2**64 - 1)` after some cycles would wrap simulated time; at
/// cycle 0 it would read as "never" and give a bogus deadlock. Both are an
/// error naming the value.
#[test]
fn compute_past_the_end_of_time_is_an_error() {
    for warmup in [0u64, 100] {
        let mut m = qs20(&[], 7);
        m.spawn_native(0, 0, 0, move |spu| async move {
            spu.compute(warmup).await;
            spu.compute(u64::MAX).await;
            0
        })
        .unwrap();
        match m.run() {
            Err(SimError::Usage(msg)) => {
                assert!(msg.contains("compute(18446744073709551615)"), "{msg}");
                assert!(msg.contains("past the last cycle"), "{msg}");
            }
            other => panic!("expected a usage error, got {other:?}"),
        }
    }
    let mut m = qs20(&[], 7);
    assert!(matches!(
        m.spawn_external_after(0, u64::MAX),
        Err(SimError::Usage(_))
    ));
    assert!(matches!(m.run_for(u64::MAX), Err(SimError::Usage(_))));
}

/// A program that polls is never blocked; the watchdog stops it, and the
/// report says what it was polling.
#[test]
fn the_watchdog_stops_a_polling_program_and_names_the_poll() {
    let mut m = qs20(&[], 8);
    m.spawn_native(2, 0, 0, |spu| async move {
        while spu.spu_stat_in_mbox().await == 0 {
            spu.compute(50).await;
        }
        0
    })
    .unwrap();
    let mut checks = 0;
    m.set_watchdog(Box::new(move || {
        checks += 1;
        if checks < 3 {
            Ok(())
        } else {
            Err("host-time limit reached".into())
        }
    }));
    match m.run() {
        Err(e @ SimError::Stopped { .. }) => {
            let text = e.to_string();
            assert!(text.starts_with("host-time limit reached"), "{text}");
            assert!(text.contains("SPE 2"), "{text}");
            assert!(
                text.contains("polling spu_readchcnt(spu_read_in_mbox)"),
                "{text}"
            );
        }
        other => panic!("expected the watchdog to stop the run, got {other:?}"),
    }
}

/// The simulated-time limit's error carries the same livelock report.
#[test]
fn the_time_limit_reports_what_each_program_polls() {
    let mut m = qs20(&[], 9);
    m.set_time_limit(100_000);
    m.spawn_native(0, 0, 0, |spu| async move {
        while spu.spu_stat_in_mbox().await == 0 {}
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Runaway { activity, .. }) => {
            assert_eq!(activity.len(), 1);
            assert!(activity[0].doing.starts_with("polling"), "{activity:?}");
        }
        other => panic!("expected a runaway, got {other:?}"),
    }
}

/// A memory size the host cannot allocate is a configuration error.
#[test]
fn unallocatable_storage_is_refused_not_a_panic() {
    assert!(Storage::try_new(usize::MAX).is_none());
    assert!(Storage::try_new(1 << 20).is_some());
}

/// One random command, as a program could issue it from raw register values.
#[derive(Debug, Clone)]
struct RawCommand {
    opcode: u32,
    lsa: u32,
    ea: u64,
    size: u32,
    tag: u32,
    list: u32,
    elements: Vec<(u32, u32, bool)>,
    rewrite: Option<(u32, u32, u32)>,
}

fn raw_command() -> impl Strategy<Value = RawCommand> {
    let opcode = prop_oneof![
        Just(0x20u32),
        Just(0x40),
        Just(0x24),
        Just(0x44),
        Just(0xA0),
        Just(0xD0),
        Just(0xB4),
        Just(0xC0),
        any::<u32>()
    ];
    let small_u32 = prop_oneof![0u32..0x4_0000, any::<u32>()];
    let ea = prop_oneof![
        Just(0x1_0000u64),
        0u64..0x100_0000,
        Just(MemoryMap::ls_ea(1)),
        Just(MemoryMap::ps_ea(1) + ps::SPU_IN_MBOX as u64),
        any::<u64>()
    ];
    let element = (
        prop_oneof![Just(0u32), Just(4), Just(16), Just(128), 0u32..0x8000],
        prop_oneof![Just(0x1_0000u32), 0u32..0x20_0000, any::<u32>()],
        any::<bool>(),
    );
    (
        opcode,
        small_u32.clone(),
        ea,
        prop_oneof![Just(16u32), Just(128), Just(24), 0u32..0x5000, any::<u32>()],
        prop_oneof![0u32..32, any::<u32>()],
        prop_oneof![Just(0x3_0000u32), small_u32],
        proptest::collection::vec(element, 1..6),
        proptest::option::of((0u32..6, 0u32..0x8000, any::<u32>())),
    )
        .prop_map(
            |(opcode, lsa, ea, size, tag, list, elements, rewrite)| RawCommand {
                opcode,
                lsa,
                ea,
                size,
                tag,
                list,
                elements,
                rewrite,
            },
        )
}

/// Issues `c` from an external program on SPE 0 and runs to the end: a
/// result or an error, never a panic.
fn drive(c: &RawCommand) -> Result<(), SimError> {
    let mut m = qs20(&[], 11);
    m.set_time_limit(2_000_000);
    let t = m.spawn_external(0)?;
    let ls = m.local_store(0)?.clone();
    for (i, &(size, eal, stall)) in c.elements.iter().enumerate() {
        let e = ListElement {
            stall_and_notify: stall,
            size,
            eal,
        };
        ls.write_u64_be(0x3_0000 + 8 * i, e.encode());
    }
    let Some(op) = Opcode::from_code(c.opcode) else {
        return Ok(()); // the binding refuses unknown opcodes before the engine
    };
    let cmd = MfcCommand {
        op,
        lsa: c.lsa,
        ea: c.ea,
        size: if op.is_list() {
            8 * c.elements.len() as u32
        } else {
            c.size
        },
        tag: c.tag,
        list: if op.is_list() { 0x3_0000 } else { c.list },
    };
    m.advance()?;
    m.submit(t, Request::Mfc(cmd))?;
    m.advance()?;
    if let Some((i, size, eal)) = c.rewrite {
        let e = ListElement {
            stall_and_notify: false,
            size,
            eal,
        };
        ls.write_u64_be(0x3_0000 + 8 * i as usize, e.encode());
    }
    m.submit(t, Request::WriteTagMask(u32::MAX))?;
    m.advance()?;
    m.submit(
        t,
        Request::WriteChannel(cellsim_engine::program::Channel::ListStallAck, c.tag),
    )?;
    m.advance()?;
    m.submit(t, Request::Exit(0))?;
    m.advance().map(|_| ())
}

proptest! {
    // 256 cases by default; `PROPTEST_CASES=100000` (make fuzz) for long runs.
    /// Random commands and list rewrites through the decoder and the
    /// list-element path: an `MfcError`, a usage error, a deadlock (a
    /// stalled list nobody acknowledges) or success, never a panic.
    #[test]
    fn random_commands_never_panic(c in raw_command()) {
        let r = std::panic::catch_unwind(|| drive(&c));
        prop_assert!(r.is_ok(), "panicked on {c:?}");
    }
}

/// An external program makes one request each time `advance` hands it
/// back: a second one (found by the binding fuzzer: two proxy DMAs in a
/// row made the engine panic) is refused.
#[test]
fn a_request_from_a_thread_not_handed_back_is_refused() {
    let mut m = qs20(&[], 12);
    let t = m.spawn_ppe_external();
    assert!(matches!(
        m.submit(t, Request::Compute(5)),
        Err(SimError::Usage(_))
    ));
    assert!(matches!(
        m.advance(),
        Ok(cellsim_engine::Step::Resume { .. })
    ));
    m.submit(t, Request::Compute(5)).unwrap();
    match m.submit(t, Request::Compute(5)) {
        Err(SimError::Usage(msg)) => assert!(msg.contains("cannot make a request now"), "{msg}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
}
