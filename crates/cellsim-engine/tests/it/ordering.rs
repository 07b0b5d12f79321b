//! Barrier and fence semantics, observed in the data that arrives.
//!
//! The pattern: a slow 16 KB get from main memory fills a local-store buffer
//! while a put of the same buffer is queued behind it. If the put is held
//! until the get completed, it sends the fetched bytes. An observer program
//! on an idle SPE samples the engine's byte counters every 16 cycles, which
//! shows directly whether a put moved bytes while the get was in flight:
//! "held" means no put byte moved before the get's last byte landed; "not
//! held" means some did. Every rule is checked with a control that is not
//! held, so no test passes vacuously.

use crate::util::{exit_code, qs20, SplitMix, TB_CYCLES};
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, Request, Spu, Step, ThreadState};

const N: usize = 16384;
const BUF: u32 = 0x8000;
const BUF2: u32 = 0x10000;
const STALE: u8 = 0xEE;

/// The put flavour behind the get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Between {
    /// `mfc_put`, same tag.
    Plain,
    /// `mfc_putf`, same tag.
    Fenced,
    /// `mfc_put` with another tag.
    OtherTag,
    /// `mfc_barrier`, then `mfc_put` with another tag.
    MfcBarrier,
    /// `mfc_putf` with another tag.
    FencedOtherTag,
}

struct Setup {
    m: Machine,
    src: u64,
    dst: u64,
    data: Vec<u8>,
}

/// Memory source filled with random bytes, LS buffer of SPE 0 stale.
fn setup() -> Setup {
    let mut m = qs20(&[TB_CYCLES], 11);
    let src = m.alloc(N as u64, 128).unwrap();
    let dst = m.alloc(N as u64, 128).unwrap();
    let data = SplitMix(5).bytes(N);
    m.memory().write(src as usize, &data);
    m.local_store(0).unwrap().write(BUF as usize, &[STALE; N]);
    Setup { m, src, dst, data }
}

fn memory(m: &Machine, ea: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    m.memory().read(ea as usize, &mut v);
    v
}

/// (get bytes, put bytes) moved so far, sampled every 16 cycles.
type Samples = Vec<(u64, u64)>;

/// Runs the machine's native programs with an observer on SPE 7 sampling the
/// byte counters until every other program has finished.
fn run_observed(m: &mut Machine) -> Samples {
    let observer = m.spawn_external(7).unwrap();
    let mut samples = Vec::new();
    loop {
        match m.advance().unwrap() {
            Step::Finished => break samples,
            Step::Resume { thread, .. } => {
                assert_eq!(thread, observer);
                let c = m.counters();
                samples.push((c.get_bytes, c.put_bytes));
                let done = m
                    .threads()
                    .iter()
                    .filter(|t| t.id != observer)
                    .all(|t| matches!(t.state, ThreadState::Finished { .. }));
                let next = if done {
                    Request::Exit(0)
                } else {
                    Request::Compute(16)
                };
                m.submit(observer, next).unwrap();
            }
        }
    }
}

/// No put byte moved before the 16 KB get was complete.
fn held(samples: &Samples) -> bool {
    samples.iter().all(|&(g, p)| p == 0 || g >= N as u64)
}

/// Put bytes moved while the 16 KB get was still in flight.
fn overlapped(samples: &Samples) -> bool {
    samples.iter().any(|&(g, p)| p > 0 && g < N as u64)
}

/// get src -> BUF (tag 3), then a put of BUF -> dst in the given flavour.
fn get_then_put(between: Between) -> (Vec<u8>, Vec<u8>, Samples) {
    let Setup {
        mut m,
        src,
        dst,
        data,
    } = setup();
    m.spawn_native(0, 0, 0, move |spu| async move {
        spu.mfc_get(BUF, src, N as u32, 3).await;
        match between {
            Between::Plain => spu.mfc_put(BUF, dst, N as u32, 3).await,
            Between::Fenced => spu.mfc_putf(BUF, dst, N as u32, 3).await,
            Between::OtherTag => spu.mfc_put(BUF, dst, N as u32, 4).await,
            Between::MfcBarrier => {
                spu.mfc_barrier(9).await;
                spu.mfc_put(BUF, dst, N as u32, 4).await
            }
            Between::FencedOtherTag => spu.mfc_putf(BUF, dst, N as u32, 4).await,
        }
        spu.mfc_write_tag_mask(u32::MAX).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    let samples = run_observed(&mut m);
    (memory(&m, dst, N), data, samples)
}

/// A put fenced behind a get of the same buffer and tag is held until the
/// get is complete and sends the fetched data; a plain put under the same tag
/// is not held: it may overtake (its bytes move while the get is in flight).
#[test]
fn fenced_put_waits_for_the_get_plain_put_may_overtake() {
    let (sent, data, samples) = get_then_put(Between::Fenced);
    assert!(held(&samples), "putf moved bytes before the get completed");
    assert!(
        sent == data,
        "putf sent stale data: the fence did not hold it"
    );
    let (_, _, samples) = get_then_put(Between::Plain);
    assert!(
        overlapped(&samples),
        "the plain put was held behind the get (control)"
    );
}

/// A fence only waits for its own tag group: a putf under another tag runs
/// alongside the get just like a plain put.
#[test]
fn fence_does_not_wait_for_other_tags() {
    for b in [Between::FencedOtherTag, Between::OtherTag] {
        let (_, _, samples) = get_then_put(b);
        assert!(
            overlapped(&samples),
            "{b:?}: the put was held by another tag's get"
        );
    }
}

/// `mfc_barrier` orders across tags: a put of another tag issued after it
/// waits for the get issued before it.
#[test]
fn mfc_barrier_orders_across_tags() {
    let (sent, data, samples) = get_then_put(Between::MfcBarrier);
    assert!(
        held(&samples),
        "the put moved bytes before the get completed"
    );
    assert!(sent == data, "the put passed the mfc_barrier");
}

/// A later command of another tag group is not held by a fenced command
/// waiting in the queue: it completes long before the fence's tag does.
#[test]
fn fenced_command_does_not_block_other_tag_groups() {
    let Setup {
        mut m, src, dst, ..
    } = setup();
    m.spawn_native(0, 0, 0, move |spu| async move {
        spu.mfc_get(BUF, src, N as u32, 1).await;
        spu.mfc_putf(BUF, dst, N as u32, 1).await; // held by the get
        spu.mfc_put(BUF2, dst + N as u64 / 2, 128, 2).await; // must not be
        spu.mfc_write_tag_mask(1 << 2).await;
        let t0 = spu.spu_read_decrementer().await;
        spu.mfc_read_tag_status_all().await;
        let waited = t0.wrapping_sub(spu.spu_read_decrementer().await);
        spu.mfc_write_tag_mask(1 << 1).await;
        let tag1 = spu.mfc_read_tag_status_immediate().await;
        spu.mfc_read_tag_status_all().await;
        assert_eq!(
            tag1, 0,
            "tag 1 (get + putf) is still busy when tag 2 is done"
        );
        waited
    })
    .unwrap();
    let s = m.run().unwrap();
    let waited = exit_code(&s, 0);
    assert!(
        2 * (waited as u64) < s.cycles,
        "the tag-2 put waited {waited} of {} cycles: held by the other tag's fence",
        s.cycles
    );
}

/// Barrier form (`mfc_getb`): later commands of its tag group wait for the
/// commands issued before the barrier, even plain ones; with a fence
/// (`mfc_getf`) in its place, the later plain put is not held.
#[test]
fn barrier_form_holds_later_commands_of_its_tag() {
    for barrier in [true, false] {
        let Setup {
            mut m,
            src,
            dst,
            data,
        } = setup();
        let other = m.alloc(128, 128).unwrap();
        m.spawn_native(0, 0, 0, move |spu| async move {
            spu.mfc_get(BUF, src, N as u32, 3).await;
            if barrier {
                spu.mfc_getb(BUF2, other, 16, 3).await;
            } else {
                spu.mfc_getf(BUF2, other, 16, 3).await;
            }
            spu.mfc_put(BUF, dst, N as u32, 3).await;
            spu.mfc_write_tag_mask(1 << 3).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
        let samples = run_observed(&mut m);
        if barrier {
            assert!(
                held(&samples),
                "a put behind mfc_getb moved bytes before the earlier get completed"
            );
            assert!(
                memory(&m, dst, N) == data,
                "a put behind mfc_getb sent stale data"
            );
        } else {
            assert!(
                overlapped(&samples),
                "a put behind mfc_getf was held (a fence holds only itself)"
            );
        }
    }
}

/// A barrier-form command holds nothing of other tag groups.
#[test]
fn barrier_form_does_not_hold_other_tags() {
    let Setup {
        mut m, src, dst, ..
    } = setup();
    let other = m.alloc(128, 128).unwrap();
    m.spawn_native(0, 0, 0, move |spu| async move {
        spu.mfc_get(BUF, src, N as u32, 3).await;
        spu.mfc_putb(BUF2, other, 16, 3).await;
        spu.mfc_put(BUF, dst, N as u32, 4).await;
        spu.mfc_write_tag_mask(u32::MAX).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    let samples = run_observed(&mut m);
    assert!(
        overlapped(&samples),
        "a tag-4 put was held by a tag-3 barrier"
    );
}

/// The tag group of an `mfc_barrier` completes only after every earlier
/// command, whatever its tag.
#[test]
fn mfc_barrier_tag_completes_after_all_earlier_commands() {
    let Setup { mut m, src, .. } = setup();
    m.spawn_native(0, 0, 0, move |spu| async move {
        spu.mfc_get(BUF, src, N as u32, 1).await;
        spu.mfc_get(BUF2, src, 4096, 2).await;
        spu.mfc_barrier(5).await;
        spu.mfc_write_tag_mask(1 << 5).await;
        spu.mfc_read_tag_status_all().await;
        spu.mfc_write_tag_mask(0b110).await;
        spu.mfc_read_tag_status_immediate().await
    })
    .unwrap();
    let s = m.run().unwrap();
    assert_eq!(
        exit_code(&s, 0),
        0b110,
        "earlier tags done when the barrier's tag is"
    );
}

/// Producer: a 16 KB block into SPE 1's local store, then a fenced flag, same tag.
async fn producer(spu: Spu) -> u32 {
    let consumer = MemoryMap::ls_ea(1);
    spu.ls_write_u32(BUF2, 1);
    spu.mfc_put(BUF, consumer + BUF as u64, N as u32, 7).await;
    spu.mfc_putf(BUF2, consumer + BUF2 as u64, 16, 7).await;
    spu.mfc_write_tag_mask(1 << 7).await;
    spu.mfc_read_tag_status_all().await;
    0
}

/// Consumer: polls the flag in its own local store, then checks the block.
async fn consumer(spu: Spu, expect: Vec<u8>) -> u32 {
    while spu.ls_read_u32(BUF2) != 1 {
        spu.compute(8).await;
    }
    let mut got = vec![0u8; N];
    spu.ls_read(BUF, &mut got);
    u32::from(got == expect)
}

/// The canonical use of a fence: a flag put with `mfc_putf` after a data put
/// of the same tag is only seen by the polling consumer once the whole block
/// is there. (A plain flag put *may* overtake; this model's DMAC unrolls
/// same-direction commands oldest first, so it happens not to.)
#[test]
fn putf_flag_after_data_is_seen_only_with_the_data() {
    for seed in [2u64, 3, 4] {
        let mut m = qs20(&[], seed);
        let data = SplitMix(seed).bytes(N);
        m.local_store(0).unwrap().write(BUF as usize, &data);
        m.spawn_native(0, 0, 0, producer).unwrap();
        m.spawn_native(1, 0, 0, move |spu| consumer(spu, data))
            .unwrap();
        let s = m.run().unwrap();
        assert_eq!(
            exit_code(&s, 1),
            1,
            "seed {seed}: the consumer saw the flag before the data"
        );
    }
}

/// Reads and writes of one line take effect in the order the address
/// concentrator (the coherence point) accepted them: a get whose command was
/// accepted before a put's must return the old bytes, whatever the later
/// completion times.
#[test]

fn get_ordered_before_put_returns_old_data() {
    for (delay, to_ls) in [(2u64, false), (4, false), (8, false), (2, true), (10, true)] {
        let mut m = qs20(&["placement=identity"], 1);
        m.enable_checks();
        let x = if to_ls {
            MemoryMap::ls_ea(5) + 0x9000
        } else {
            m.alloc(128, 128).unwrap()
        };
        let old = [1u8; 32];
        if to_ls {
            m.local_store(5).unwrap().write(0x9000, &old);
        } else {
            m.memory().write(x as usize, &old);
        }
        m.local_store(1).unwrap().write(0x8000, &[2u8; 32]);
        let getter = m
            .spawn_native(0, 0, 0, move |spu| async move {
                spu.mfc_get(0x8000, x, 16, 0).await;
                spu.mfc_write_tag_mask(1).await;
                spu.mfc_read_tag_status_all().await;
                spu.ls_read_u32(0x8000) & 0xff
            })
            .unwrap();
        m.spawn_native(1, 0, 0, move |spu| async move {
            spu.compute(delay).await;
            spu.mfc_put(0x8000, x, 32, 0).await;
            spu.mfc_write_tag_mask(1).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
        let s = m.run().unwrap();
        // The 16-byte command is the get, the 32-byte one the put.
        let cmds = m.eib().log.as_ref().unwrap().commands.clone();
        let at = |size| cmds.iter().find(|c| c.1 == size).unwrap().0;
        assert!(
            at(16) < at(32),
            "setup: the get must be ordered first ({cmds:?})"
        );
        assert_eq!(
            exit_code(&s, getter),
            1,
            "get accepted at cycle {} returned the data of a put accepted at cycle {} (delay {delay}, {})",
            at(16),
            at(32),
            if to_ls { "LS" } else { "memory" }
        );
    }
}
