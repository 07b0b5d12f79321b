//! A run depends only on its seed: same seed, same everything; the seed only
//! matters where the machine draws (random SPE placement).

use crate::mix::{build, load, mix_strategy, Mix, Order, Step as MixStep};
use crate::util::{machine_of, qs20};
use cellsim_engine::{MfcCommand, Opcode, Request, Step, TagUpdate};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

/// A fixed, busy mix on all 8 SPEs (drawn once from a deterministic runner).
fn busy_mix() -> Mix {
    let mut runner = TestRunner::deterministic();
    let (_, specs) = mix_strategy(150)
        .prop_filter("busy", |(_, v)| v.len() >= 100)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    build(8, &specs)
}

/// Everything observable about a finished run, as text.
fn fingerprint(mix: &Mix, seed: u64) -> (u64, String) {
    let mut m = qs20(&[], seed);
    m.enable_checks();
    load(&mut m, mix, 1234);
    let s = m.run().unwrap();
    let mut mem = vec![0u8; 0x20_0000];
    m.memory().read(crate::mix::MEM_DST as usize, &mut mem);
    let mut ls = Vec::new();
    for spe in 0..8 {
        let mut v = vec![0u8; 0x4_0000];
        m.local_store(spe).unwrap().read(0, &mut v);
        ls.push(v);
    }
    let text = format!(
        "cycles {} ns {} threads {:?}\nplacement {:?}\neib {:?}\ncounters {:?}\nmic {:?}\narbiter {:?}\nlog {:?}",
        s.cycles,
        s.ns,
        s.threads,
        m.placement(),
        m.eib().stats,
        m.counters(),
        m.mic().stats,
        m.arbiter_stats(),
        m.eib().log,
    );
    // Data: compare the images through a cheap digest to keep the text small.
    let digest = |v: &[u8]| {
        v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    };
    let data = format!(
        "mem {:x} ls {:x?}",
        digest(&mem),
        ls.iter().map(|v| digest(v)).collect::<Vec<_>>()
    );
    (s.cycles, text + "\n" + &data)
}

/// The same seed gives an identical run summary (cycles, every thread's end),
/// identical EIB, MIC and arbiter counters, the same reservation log and the
/// same bytes, for a busy 8-SPE random mix — also when other machines ran in
/// between (no hidden global state).
#[test]
fn same_seed_gives_an_identical_run() {
    let mix = busy_mix();
    assert!(
        mix.copies.len() >= 80,
        "the mix is busy ({} DMAs)",
        mix.copies.len()
    );
    for seed in [1u64, 0xDEAD_BEEF] {
        let a = fingerprint(&mix, seed);
        let _other = fingerprint(&mix, seed + 1);
        let b = fingerprint(&mix, seed);
        assert!(a.1 == b.1, "seed {seed}: two runs differ");
    }
}

/// Different seeds draw different SPE placements (almost always), and with
/// them different run times for the same programs.
#[test]
fn different_seeds_usually_place_differently() {
    let mut placements: Vec<Vec<u32>> = (0..16u64).map(|s| qs20(&[], s).placement()).collect();
    for p in &placements {
        let mut q = p.clone();
        q.sort();
        assert_eq!(
            q,
            (0..8).collect::<Vec<_>>(),
            "a placement is a permutation"
        );
    }
    placements.sort();
    placements.dedup();
    assert!(
        placements.len() >= 12,
        "only {} distinct placements of 16 seeds",
        placements.len()
    );
    let mix = busy_mix();
    let mut cycles: Vec<u64> = (0..4u64).map(|s| fingerprint(&mix, s).0).collect();
    cycles.sort();
    cycles.dedup();
    assert!(cycles.len() >= 2, "four seeds, one run time: {cycles:?}");
}

/// `placement=identity` (and an explicit list) override the random draw for
/// every seed; on a PS3 the random placement only uses its six SPEs.
#[test]
fn placement_overrides_are_respected() {
    for seed in 0..8u64 {
        let m = qs20(&["placement=identity"], seed);
        assert_eq!(m.placement(), (0..8).collect::<Vec<u32>>(), "seed {seed}");
        let m = qs20(&["placement=[7, 5, 3, 1, 6, 4, 2, 0]"], seed);
        assert_eq!(m.placement(), vec![7, 5, 3, 1, 6, 4, 2, 0], "seed {seed}");
        let m = machine_of("ps3", &[], seed);
        let mut p = m.placement();
        p.sort();
        let mut avail = m.config().spes.clone();
        avail.sort();
        assert_eq!(p, avail, "ps3 seed {seed}");
    }
    // The physical SPE a program lands on follows the placement.
    let mut m = qs20(&["placement=[7, 5, 3, 1, 6, 4, 2, 0]"], 1);
    let t = m.spawn_native(2, 0, 0, |_spu| async { 0 }).unwrap();
    let s = m.run().unwrap();
    assert_eq!(s.threads[t].physical, Some(3));
}

/// `set_placement` works before any program starts and is refused after.
#[test]
fn set_placement_only_before_programs_start() {
    let mut m = qs20(&[], 1);
    m.set_placement(&[1, 0, 3, 2, 5, 4, 7, 6]).unwrap();
    assert_eq!(m.placement(), vec![1, 0, 3, 2, 5, 4, 7, 6]);
    assert!(m.set_placement(&[0, 1, 2]).is_err(), "not a permutation");
    m.spawn_native(0, 0, 0, |_spu| async { 0 }).unwrap();
    assert!(m.set_placement(&[0, 1, 2, 3, 4, 5, 6, 7]).is_err());
}

/// The requests a mix program makes, as an external driver submits them.
fn requests(steps: &[MixStep]) -> Vec<Request> {
    let mut out = Vec::new();
    for st in steps {
        match *st {
            MixStep::Dma {
                get,
                order,
                lsa,
                ea,
                size,
                tag,
            } => {
                let op = match (get, order) {
                    (true, Order::Fence) => Opcode::GetF,
                    (true, Order::Barrier) => Opcode::GetB,
                    (true, _) => Opcode::Get,
                    (false, Order::Fence) => Opcode::PutF,
                    (false, Order::Barrier) => Opcode::PutB,
                    (false, _) => Opcode::Put,
                };
                out.push(Request::Mfc(MfcCommand::single(op, lsa, ea, size, tag)));
            }
            MixStep::MfcBarrier(tag) => out.push(Request::Mfc(MfcCommand::single(
                Opcode::Barrier,
                0,
                0,
                0,
                tag,
            ))),
            MixStep::Wait { mask, any } => {
                out.push(Request::WriteTagMask(mask));
                out.push(Request::ReadTagStatus(if any {
                    TagUpdate::Any
                } else {
                    TagUpdate::All
                }));
            }
        }
    }
    out.push(Request::WriteTagMask(u32::MAX));
    out.push(Request::ReadTagStatus(TagUpdate::All));
    out.push(Request::Exit(0));
    out
}

/// A program driven from outside (as Python does) times exactly like the
/// same program written as a native async program: same end cycle for every
/// thread, same EIB traffic.
#[test]
fn native_and_external_programs_time_identically() {
    let mix = busy_mix();
    let native = {
        let mut m = qs20(&[], 3);
        load(&mut m, &mix, 77);
        let s = m.run().unwrap();
        (
            s.cycles,
            format!("{:?}", s.threads),
            format!("{:?}", m.eib().stats),
        )
    };
    let external = {
        // The same programs as external twins (timing does not depend on the
        // bytes, so the data need not be loaded).
        let mut m = qs20(&[], 3);
        let tids: Vec<usize> = (0..8).map(|spe| m.spawn_external(spe).unwrap()).collect();
        let reqs: Vec<Vec<Request>> = mix.programs.iter().map(|p| requests(p)).collect();
        let mut next = [0usize; 8];
        loop {
            match m.advance().unwrap() {
                Step::Finished => break,
                Step::Resume { thread, .. } => {
                    let i = tids.iter().position(|&t| t == thread).unwrap();
                    let r = reqs[i][next[i]];
                    next[i] += 1;
                    m.submit(thread, r).unwrap();
                }
            }
        }
        let s = m.summary();
        (
            s.cycles,
            format!("{:?}", s.threads),
            format!("{:?}", m.eib().stats),
        )
    };
    assert_eq!(native.0, external.0, "run length");
    assert_eq!(native.1, external.1, "every thread's end");
    assert_eq!(native.2, external.2, "EIB traffic");
}
