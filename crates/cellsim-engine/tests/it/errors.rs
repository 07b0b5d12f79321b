//! Bad inputs: each gives the right `SimError`, raised at the call, with a
//! message naming the command, the offending value and the rule.

use crate::util::{machine_of, qs20};
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, MfcError, MfcErrorKind, SimError};

const LS_BYTES: u32 = 256 * 1024;

/// Which DMA a bad-command case issues.
#[derive(Clone, Copy)]
enum Call {
    Get,
    Put,
    GetF,
    PutB,
    Barrier,
}

/// Runs one command on SPE 2 after a valid warm-up DMA, and returns the MFC
/// error it must raise.
fn mfc_error(call: Call, lsa: u32, ea: u64, size: u32, tag: u32) -> MfcError {
    let mut m = qs20(&[], 7);
    let good = m.alloc(128, 128).unwrap();
    m.spawn_native(2, 0, 0, move |spu| async move {
        // A valid command first: the error must come from the bad one.
        spu.mfc_get(0x8000, good, 128, 0).await;
        spu.compute(1000).await;
        match call {
            Call::Get => spu.mfc_get(lsa, ea, size, tag).await,
            Call::Put => spu.mfc_put(lsa, ea, size, tag).await,
            Call::GetF => spu.mfc_getf(lsa, ea, size, tag).await,
            Call::PutB => spu.mfc_putb(lsa, ea, size, tag).await,
            Call::Barrier => spu.mfc_barrier(tag).await,
        }
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => {
            assert_eq!(e.spe, Some(2), "the error names the issuing SPE: {e}");
            assert!(e.cycle >= 1000, "raised at the bad call, not before: {e}");
            e
        }
        other => panic!("expected an MFC error, got {other:?}"),
    }
}

/// Asserts the kind and that the message mentions every needle.
fn check(e: &MfcError, kind: MfcErrorKind, needles: &[&str]) {
    assert_eq!(e.kind, kind, "{e}");
    let text = e.to_string();
    for n in needles {
        assert!(text.contains(n), "message lacks {n:?}: {text}");
    }
    assert!(text.contains("SPE 2"), "message lacks the SPE: {text}");
}

/// A 24-byte transfer breaks the size rule (1, 2, 4, 8 or multiples of 16).
#[test]
fn size_24_is_rejected() {
    let e = mfc_error(Call::Get, 0x4000, 0x10000, 24, 1);
    check(
        &e,
        MfcErrorKind::Size,
        &["mfc_get", "size=24", "size 24", "multiple of 16"],
    );
}

/// Sizes above 16 KB and odd small sizes are rejected as well.
#[test]
fn other_bad_sizes_are_rejected() {
    for size in [3u32, 12, 17, 16400, 32768] {
        let e = mfc_error(Call::Put, 0x4000, 0x10000, size, 1);
        check(
            &e,
            MfcErrorKind::Size,
            &["mfc_put", &format!("size {size}")],
        );
    }
}

/// A 16-byte transfer at ea 0x...8 is not 16-byte aligned.
#[test]
fn sixteen_bytes_at_ea_8_is_misaligned() {
    let e = mfc_error(Call::Get, 0x4008, 0x10008, 16, 1);
    check(
        &e,
        MfcErrorKind::Alignment,
        &["mfc_get", "ea=0x10008", "16-byte aligned"],
    );
}

/// An 8-byte transfer whose local-store and effective addresses differ in
/// their low 4 bits is rejected, though each is 8-byte aligned.
#[test]
fn eight_bytes_with_different_low_bits_is_misaligned() {
    let e = mfc_error(Call::Put, 0x4000, 0x10008, 8, 1);
    check(
        &e,
        MfcErrorKind::Alignment,
        &["mfc_put", "0x4000", "0x10008", "low 4 bits"],
    );
}

/// A small transfer that is not naturally aligned is rejected.
#[test]
fn four_bytes_at_odd_address_is_misaligned() {
    let e = mfc_error(Call::Get, 0x4002, 0x10002, 4, 1);
    check(
        &e,
        MfcErrorKind::Alignment,
        &["mfc_get", "naturally aligned"],
    );
}

/// A local-store range running past 256 KB is rejected.
#[test]
fn ls_range_past_256k_is_rejected() {
    let e = mfc_error(Call::Get, LS_BYTES - 128, 0x10000, 256, 1);
    check(
        &e,
        MfcErrorKind::LsRange,
        &["mfc_get", "ls=0x3ff80", "0x40080", "256 KB"],
    );
}

/// Tag 32 does not exist (tag groups 0-31), for DMAs and for mfc_barrier.
#[test]
fn tag_32_is_rejected() {
    let e = mfc_error(Call::GetF, 0x4000, 0x10000, 128, 32);
    check(
        &e,
        MfcErrorKind::Tag,
        &["mfc_getf", "tag=32", "tag 32", "0-31"],
    );
    let e = mfc_error(Call::Barrier, 0, 0, 0, 32);
    check(&e, MfcErrorKind::Tag, &["mfc_barrier", "tag 32"]);
}

/// An effective address past main memory that is no local-store mapping is
/// unmapped; so is a range straddling the end of memory.
#[test]
fn unmapped_effective_addresses_are_rejected() {
    let e = mfc_error(Call::Get, 0x4000, 0x4000_0000, 128, 1);
    check(
        &e,
        MfcErrorKind::Unmapped,
        &["mfc_get", "0x40000000", "not mapped"],
    );
    let end = 512u64 << 20;
    let e = mfc_error(Call::PutB, 0x4000, end - 64, 128, 1);
    check(
        &e,
        MfcErrorKind::Unmapped,
        &["mfc_putb", &format!("{:#x}", end - 64)],
    );
}

/// The local-store window of a ninth SPE does not exist, and a range running
/// off the end of another SPE's local store is unmapped.
#[test]
fn missing_or_overrun_local_store_mappings_are_rejected() {
    let e = mfc_error(Call::Get, 0x4000, MemoryMap::ls_ea(8), 128, 1);
    check(
        &e,
        MfcErrorKind::Unmapped,
        &["mfc_get", &format!("{:#x}", MemoryMap::ls_ea(8))],
    );
    let ea = MemoryMap::ls_ea(3) + LS_BYTES as u64 - 64;
    let e = mfc_error(Call::Put, 0x4000, ea, 128, 1);
    check(
        &e,
        MfcErrorKind::Unmapped,
        &["mfc_put", &format!("{ea:#x}")],
    );
}

/// On a PS3 only six SPEs exist: the seventh's local-store window is unmapped.
#[test]
fn ps3_has_no_seventh_local_store() {
    let mut m = machine_of("ps3", &[], 1);
    m.spawn_native(0, 0, 0, |spu| async move {
        spu.mfc_get(0x4000, MemoryMap::ls_ea(6), 128, 0).await;
        0
    })
    .unwrap();
    match m.run() {
        Err(SimError::Mfc(e)) => assert_eq!(e.kind, MfcErrorKind::Unmapped, "{e}"),
        other => panic!("expected an unmapped error, got {other:?}"),
    }
}

/// DMA data transfers to a problem-state register are refused with a pointer
/// to the mailbox and signal calls.
#[test]
fn dma_into_problem_state_is_rejected() {
    let e = mfc_error(Call::Put, 0x4000, MemoryMap::ps_ea(1), 16, 1);
    check(&e, MfcErrorKind::Unmapped, &["mfc_put", "problem-state"]);
}

/// An effective address at the very top of the 64-bit space must give an
/// unmapped error, not an arithmetic overflow inside the engine.
#[test]

fn ea_at_top_of_address_space_is_unmapped_not_a_panic() {
    let ea = u64::MAX - 15;
    let r = std::panic::catch_unwind(|| mfc_error(Call::Get, 0x4000, ea, 16, 1));
    let e = r.expect("the engine panicked instead of reporting an MFC error");
    check(
        &e,
        MfcErrorKind::Unmapped,
        &["mfc_get", "0xfffffffffffffff0"],
    );
}

/// A blocking tag-status read with an empty tag mask could never complete:
/// it is a channel error naming the read and the mask.
#[test]
fn blocking_tag_read_with_empty_mask_is_rejected() {
    for any in [false, true] {
        let mut m = qs20(&[], 1);
        m.spawn_native(4, 0, 0, move |spu| async move {
            spu.mfc_write_tag_mask(0).await;
            // The immediate form is fine with an empty mask.
            assert_eq!(spu.mfc_read_tag_status_immediate().await, 0);
            if any {
                spu.mfc_read_tag_status_any().await
            } else {
                spu.mfc_read_tag_status_all().await
            }
        })
        .unwrap();
        let e = match m.run() {
            Err(SimError::Mfc(e)) => e,
            other => panic!("expected a channel error, got {other:?}"),
        };
        assert_eq!(e.kind, MfcErrorKind::Channel, "{e}");
        assert_eq!(e.spe, Some(4));
        let name = if any {
            "mfc_read_tag_status_any"
        } else {
            "mfc_read_tag_status_all"
        };
        let text = e.to_string();
        assert!(text.contains(name) && text.contains("mask=0x0"), "{text}");
        assert!(text.contains("empty"), "{text}");
    }
}

fn usage(r: Result<impl std::fmt::Debug, SimError>) -> String {
    match r {
        Err(SimError::Usage(msg)) => msg,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// An SPE number beyond the machine's SPEs is refused when spawning and when
/// asking for its local store (8 on a qs20, 6 on a ps3).
#[test]
fn spe_beyond_the_machine_is_rejected() {
    for (preset, n) in [("qs20-1chip", 8u32), ("ps3", 6)] {
        let mut m: Machine = machine_of(preset, &[], 1);
        let msg = usage(m.spawn_native(n, 0, 0, |_spu| async { 0 }));
        assert!(
            msg.contains(&format!("SPE {n}")) && msg.contains(preset),
            "{msg}"
        );
        let msg = usage(m.spawn_external(n + 3));
        assert!(msg.contains(&format!("SPE {}", n + 3)), "{msg}");
        let msg = usage(m.local_store(n));
        assert!(msg.contains(&format!("SPE {n}")), "{msg}");
        assert!(m.spawn_native(n - 1, 0, 0, |_spu| async { 0 }).is_ok());
    }
}

/// Two programs on one SPE at once are refused.
#[test]
fn second_program_on_a_busy_spe_is_rejected() {
    let mut m = qs20(&[], 1);
    m.spawn_native(1, 0, 0, |_spu| async { 0 }).unwrap();
    let msg = usage(m.spawn_native(1, 0, 0, |_spu| async { 0 }));
    assert!(
        msg.contains("SPE 1") && msg.contains("already running"),
        "{msg}"
    );
}

/// A native program that panics ends the run with a usage error naming the
/// SPE and the panic message; the test process does not abort.
#[test]
fn panicking_program_is_a_usage_error() {
    let mut m = qs20(&[], 1);
    let ea = m.alloc(128, 128).unwrap();
    m.spawn_native(0, 0, 0, |spu| async move {
        spu.compute(10).await;
        0
    })
    .unwrap();
    m.spawn_native(5, ea, 0, |spu| async move {
        spu.mfc_get(0x4000, spu.argp(), 128, 0).await;
        let v = spu.ls_read_u32(0x4000);
        if v == 0 {
            panic!("checksum mismatch 0x{v:x}");
        }
        v
    })
    .unwrap();
    let msg = usage(m.run());
    assert!(msg.contains("SPE 5") && msg.contains("panicked"), "{msg}");
    assert!(msg.contains("checksum mismatch 0x0"), "{msg}");
    // The machine is still usable for inspection afterwards.
    assert!(m.now() > 0);
}

/// Awaiting a future that is not an SPU call is a usage error, not a hang.
#[test]
fn awaiting_a_foreign_future_is_a_usage_error() {
    let mut m = qs20(&[], 1);
    m.spawn_native(3, 0, 0, |_spu| async move {
        std::future::pending::<()>().await;
        0
    })
    .unwrap();
    let msg = usage(m.run());
    assert!(
        msg.contains("SPE 3") && msg.contains("not an SPU call"),
        "{msg}"
    );
}

/// `run()` refuses machines with external programs, which must be driven
/// with advance/submit.
#[test]
fn run_refuses_external_programs() {
    let mut m = qs20(&[], 1);
    m.spawn_external(0).unwrap();
    let msg = usage(m.run());
    assert!(msg.contains("advance"), "{msg}");
}

mod rules {
    //! The architecture's DMA rules as an independent reference, against
    //! random commands.
    use super::LS_BYTES;
    use crate::util::{qs20, SplitMix};
    use cellsim_engine::memory_map::MemoryMap;
    use cellsim_engine::{MfcErrorKind, SimError};
    use proptest::prelude::*;

    const MEM_BYTES: u64 = 512 << 20;
    /// Where the memory-side test data lives.
    const BASE: u64 = 0x10_0000;

    /// Every rule the command breaks (empty: valid).
    fn broken(lsa: u32, ea: u64, size: u32, tag: u32) -> Vec<MfcErrorKind> {
        let mut v = Vec::new();
        if tag > 31 {
            v.push(MfcErrorKind::Tag);
        }
        let small = matches!(size, 1 | 2 | 4 | 8);
        if !small && (!size.is_multiple_of(16) || size > 16384) {
            v.push(MfcErrorKind::Size);
        }
        let (l, e) = (lsa as u64, ea);
        let aligned = if small {
            l % size as u64 == 0 && e % size as u64 == 0 && l % 16 == e % 16
        } else {
            l % 16 == 0 && e % 16 == 0
        };
        if !aligned {
            v.push(MfcErrorKind::Alignment);
        }
        if l + size as u64 > LS_BYTES as u64 {
            v.push(MfcErrorKind::LsRange);
        }
        let end = ea + size.max(1) as u64;
        let in_memory = end <= MEM_BYTES;
        let in_ls = (0..8).any(|s| {
            let b = MemoryMap::ls_ea(s);
            ea >= b && end <= b + LS_BYTES as u64
        });
        if !in_memory && !in_ls {
            v.push(MfcErrorKind::Unmapped);
        }
        v
    }

    fn command() -> impl Strategy<Value = (bool, u32, u64, u32, u32)> {
        let size = prop_oneof![
            3 => prop::sample::select(vec![1u32, 2, 4, 8]),
            4 => (1..=1024u32).prop_map(|k| k * 16),
            2 => 1..17000u32,
        ];
        let ea = prop_oneof![
            5 => (0..0x1_0000u64).prop_map(|o| BASE + o),
            4 => (0..0x4_0100u64).prop_map(|o| MemoryMap::ls_ea(1) + o),
            1 => (0..0x4000u64).prop_map(|o| MEM_BYTES - 0x2000 + o),
            1 => (0..0x5_0000u64).prop_map(|o| MemoryMap::ls_ea(8) - 0x1_0000 + o),
            1 => (0..0x2_0000u64).prop_map(|o| MemoryMap::ps_ea(2) + o),
        ];
        let lsa =
            prop_oneof![6 => 0x4000..0x3_c000u32, 1 => 0..0x4_0100u32, 2 => 0x3_c000..0x4_0010u32];
        let tag = prop_oneof![6 => 0..32u32, 1 => 32..64u32];
        // 0: as drawn; 1: equal low 4 bits; 2: also aligned to the size.
        let fix = prop_oneof![1 => Just(0u8), 1 => Just(1u8), 3 => Just(2u8)];
        (any::<bool>(), lsa, ea, size, tag, fix).prop_map(|(get, lsa, ea, size, tag, fix)| {
            let mut lsa = lsa;
            let mut ea = ea;
            if fix >= 1 {
                lsa = (lsa & !15) | (ea & 15) as u32;
            }
            if fix >= 2 {
                let a = if matches!(size, 1 | 2 | 4 | 8) {
                    size
                } else {
                    16
                };
                lsa -= lsa % a;
                ea -= ea % a as u64;
            }
            (get, lsa, ea, size, tag)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

        /// A random command is rejected with one of the rules it actually
        /// breaks (naming the command), or, if it breaks none, completes and
        /// moves exactly its bytes.
        #[test]
        fn commands_follow_the_architectures_rules(
            (get, lsa, ea, size, tag) in command(),
            seed in any::<u64>(),
        ) {
            let mut m = qs20(&[], seed);
            let mut rng = SplitMix(seed);
            m.memory().write(BASE as usize, &rng.bytes(0x1_4000));
            m.local_store(0).unwrap().write(0, &rng.bytes(LS_BYTES as usize));
            m.local_store(1).unwrap().write(0, &rng.bytes(LS_BYTES as usize));
            // Where the far end lives, for the data check.
            let far_ls = ea >= MemoryMap::ls_ea(1) && ea < MemoryMap::ls_ea(2);
            let far_off = if far_ls { ea - MemoryMap::ls_ea(1) } else { ea };
            let read_far = |m: &cellsim_engine::Machine, n: usize| {
                let mut v = vec![0u8; n];
                if far_ls {
                    m.local_store(1).unwrap().read(far_off as usize, &mut v);
                } else {
                    m.memory().read(far_off as usize, &mut v);
                }
                v
            };
            let n = size as usize;
            let valid = broken(lsa, ea, size, tag).is_empty();
            let source = if !valid {
                Vec::new()
            } else if get {
                read_far(&m, n)
            } else {
                let mut v = vec![0u8; n];
                m.local_store(0).unwrap().read(lsa as usize, &mut v);
                v
            };
            m.spawn_native(0, 0, 0, move |spu| async move {
                if get {
                    spu.mfc_get(lsa, ea, size, tag).await;
                } else {
                    spu.mfc_put(lsa, ea, size, tag).await;
                }
                spu.mfc_write_tag_mask(1 << (tag % 32)).await;
                spu.mfc_read_tag_status_all().await;
                0
            })
            .unwrap();
            let want = broken(lsa, ea, size, tag);
            match m.run() {
                Ok(_) => {
                    prop_assert!(want.is_empty(), "accepted a command breaking {want:?}");
                    let landed = if get {
                        let mut v = vec![0u8; n];
                        m.local_store(0).unwrap().read(lsa as usize, &mut v);
                        v
                    } else {
                        read_far(&m, n)
                    };
                    prop_assert!(landed == source, "the bytes did not land intact");
                }
                Err(SimError::Mfc(e)) => {
                    prop_assert!(want.contains(&e.kind), "{e} (kind {:?}) but the command breaks {want:?}", e.kind);
                    let name = if get { "mfc_get(" } else { "mfc_put(" };
                    prop_assert!(e.to_string().contains(name), "{e}");
                }
                Err(other) => prop_assert!(false, "unexpected {other}"),
            }
        }
    }
}
