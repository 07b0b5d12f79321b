//! Properties of random DMA mixes on up to 8 SPEs: bytes arrive intact, the
//! EIB is never overbooked, and no element or the bus as a whole ever moves
//! more than its peak.

use crate::mix::{build, check_data, load, mix_strategy, Mix};
use crate::util::qs20;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::topology::RAMPS;
use cellsim_engine::{Machine, RunSummary};
use proptest::prelude::*;

/// What the reference model says the EIB must have carried.
struct Traffic {
    bytes: u64,
    requests: u64,
    sent: [u64; RAMPS],
    received: [u64; RAMPS],
    mem_read: u64,
    mem_written: u64,
    get_bytes: u64,
    put_bytes: u64,
}

fn expected_traffic(m: &Machine, mix: &Mix) -> Traffic {
    let place = m.placement();
    let topo = m.topology();
    let spe_ramp = |s: usize| topo.spe(place[s] as u8).idx();
    let mic = topo.mic(0).idx();
    let mut t = Traffic {
        bytes: 0,
        requests: 0,
        sent: [0; RAMPS],
        received: [0; RAMPS],
        mem_read: 0,
        mem_written: 0,
        get_bytes: 0,
        put_bytes: 0,
    };
    for c in &mix.copies {
        let n = c.len as u64;
        let own = spe_ramp(c.spe);
        let remote = c.remote_spe().map_or(mic, spe_ramp);
        let (from, to) = if c.get { (remote, own) } else { (own, remote) };
        t.bytes += n;
        t.requests += c.bus_requests();
        t.sent[from] += n;
        t.received[to] += n;
        if c.remote_is_memory() {
            if c.get {
                t.mem_read += n;
            } else {
                t.mem_written += n;
            }
        }
        if c.get {
            t.get_bytes += n;
        } else {
            t.put_bytes += n;
        }
    }
    t
}

/// Every check of one finished run of `mix`.
fn check_run(m: &Machine, s: &RunSummary, mix: &Mix, tids: &[usize]) -> Result<(), String> {
    // Every program finished and saw its tag groups complete.
    for &t in tids {
        match s.threads[t].state {
            cellsim_engine::ThreadState::Finished { code: 0, .. } => {}
            other => return Err(format!("thread {t}: {other:?}")),
        }
    }
    // (b) No link, port, ring or command-bus slot overbooked.
    m.verify().map_err(|e| e.to_string())?;
    // (c) Peaks: 128 B per bus cycle for the whole EIB (8 x 16 B), 16 B per
    // bus cycle in and out of each ramp.
    let bus_cycles = s.cycles.div_ceil(2).max(1);
    let st = &m.eib().stats;
    if st.bytes > 128 * bus_cycles {
        return Err(format!(
            "{} bytes in {bus_cycles} bus cycles: {:.1} B per bus cycle beats the 128 B peak",
            st.bytes,
            st.bytes as f64 / bus_cycles as f64
        ));
    }
    for r in 0..RAMPS {
        for (what, v) in [("sent", st.sent[r]), ("received", st.received[r])] {
            if v > 16 * bus_cycles {
                return Err(format!(
                    "ramp {r} {what} {v} bytes in {bus_cycles} bus cycles (> 16 B per bus cycle)"
                ));
            }
        }
    }
    // The reference model's traffic, exactly.
    let want = expected_traffic(m, mix);
    let got = (st.bytes, st.transfers, st.sent, st.received);
    let exp = (want.bytes, want.requests, want.sent, want.received);
    if got != exp {
        return Err(format!(
            "EIB carried (bytes, transfers, sent, received) {got:?}, the reference model says {exp:?}"
        ));
    }
    let log = m.eib().log.as_ref().expect("checks enabled");
    if log.commands.len() as u64 != want.requests || m.counters().bus_requests != want.requests {
        return Err(format!(
            "{} commands on the bus / {} bus requests, expected {}",
            log.commands.len(),
            m.counters().bus_requests,
            want.requests
        ));
    }
    let c = m.counters();
    if (c.get_bytes, c.put_bytes) != (want.get_bytes, want.put_bytes) {
        return Err(format!(
            "counters moved {}/{} get/put bytes, expected {}/{}",
            c.get_bytes, c.put_bytes, want.get_bytes, want.put_bytes
        ));
    }
    let mic = &m.mic().stats;
    if (mic.read_bytes, mic.write_bytes) != (want.mem_read, want.mem_written) {
        return Err(format!(
            "MIC read/wrote {}/{} bytes, expected {}/{}",
            mic.read_bytes, mic.write_bytes, want.mem_read, want.mem_written
        ));
    }
    Ok(())
}

/// Builds, runs and checks one mix; returns the run summary.
fn run_mix(
    spes: usize,
    specs: &[crate::mix::Spec],
    data_seed: u64,
    seed: u64,
) -> Result<RunSummary, String> {
    let mix = build(spes, specs);
    let mut m = qs20(&[], seed);
    m.enable_checks();
    let (exp, tids) = load(&mut m, &mix, data_seed);
    let s = m.run().map_err(|e| e.to_string())?;
    // (a) Bytes intact.
    check_data(&m, &mix, &exp)?;
    check_run(&m, &s, &mix, &tids)?;
    Ok(s)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    /// Random conflict-free mixes of gets and puts (1 B - 16 KB, memory and
    /// other local stores, random tags, fences, barriers and waits) on up to
    /// 8 SPEs: every byte lands as the reference model says, `verify()`
    /// passes, and no ramp or the whole EIB exceeds its peak.
    #[test]
    fn random_mixes_move_bytes_intact_within_eib_limits(
        (spes, specs) in mix_strategy(48),
        data_seed in any::<u64>(),
        seed in any::<u64>(),
    ) {
        if let Err(e) = run_mix(spes, &specs, data_seed, seed) {
            return Err(TestCaseError::fail(e));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        max_shrink_iters: 50,
        ..ProptestConfig::default()
    })]

    /// Heavy mixes on all 8 SPEs (many DMAs each, so the 16-entry queues fill
    /// and the EIB saturates) keep the same guarantees.
    #[test]
    fn saturating_mixes_on_eight_spes_keep_the_invariants(
        (_, specs) in mix_strategy(160),
        data_seed in any::<u64>(),
        seed in any::<u64>(),
    ) {
        if let Err(e) = run_mix(8, &specs, data_seed, seed) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// A fixed busy mix saturating all eight SPEs with back-to-back 16 KB
/// transfers to neighbours and memory: the EIB gets as close to its limits as
/// the model allows, and the invariants still hold.
#[test]
fn all_spes_streaming_to_neighbours_stays_within_limits() {
    use crate::mix::{Order, Spec};
    let mut specs = Vec::new();
    for round in 0..8u32 {
        for spe in 0..8usize {
            specs.push(Spec {
                spe,
                get: round % 2 == 0,
                remote: if round % 4 == 3 {
                    None
                } else {
                    Some(spe + 1 + (round as usize % 3))
                },
                size: 16384,
                low: 0,
                pad: 0,
                src_pos: round * 5000,
                tag: round % 4,
                order: Order::Plain,
                wait: None,
            });
        }
    }
    let s = run_mix(8, &specs, 99, 5).unwrap();
    assert!(s.cycles > 0);
}

/// A DMA between an SPE's local store and its own local-store window in the
/// effective-address space copies the bytes (the hardware allows it).
#[test]
fn dma_within_own_local_store_copies_bytes() {
    let mut m = qs20(&[], 1);
    m.enable_checks();
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    m.local_store(2).unwrap().write(0x8000, &pattern);
    m.spawn_native(2, 0, 0, |spu| async move {
        let me = MemoryMap::ls_ea(spu.spe_id());
        spu.mfc_get(0x10000, me + 0x8000, 4096, 0).await;
        spu.mfc_put(0x8000, me + 0x20000, 4096, 1).await;
        spu.mfc_write_tag_mask(3).await;
        spu.mfc_read_tag_status_all().await;
        0
    })
    .unwrap();
    m.run().unwrap();
    m.verify().unwrap();
    for at in [0x10000usize, 0x20000] {
        let mut got = vec![0u8; 4096];
        m.local_store(2).unwrap().read(at, &mut got);
        assert_eq!(got, pattern, "copy at 0x{at:x}");
    }
}

/// The harness itself: the byte-for-byte comparison catches a single
/// corrupted destination byte, in memory and in a local store.
#[test]
fn reference_check_catches_a_corrupted_byte() {
    use crate::mix::{Order, Spec};
    let spec = |spe, get, remote| Spec {
        spe,
        get,
        remote,
        size: 4096,
        low: 0,
        pad: 0,
        src_pos: 0,
        tag: 0,
        order: Order::Plain,
        wait: None,
    };
    let mix = build(2, &[spec(0, false, None), spec(1, true, Some(0))]);
    for corrupt_memory in [true, false] {
        let mut m = qs20(&[], 1);
        let (exp, _) = load(&mut m, &mix, 3);
        m.run().unwrap();
        check_data(&m, &mix, &exp).unwrap();
        let (store, at) = if corrupt_memory {
            (m.memory().clone(), crate::mix::MEM_DST as usize + 100)
        } else {
            (
                m.local_store(1).unwrap().clone(),
                crate::mix::LS_DST as usize + 4000,
            )
        };
        let mut b = [0u8; 1];
        store.read(at, &mut b);
        store.write(at, &[b[0] ^ 0x40]);
        let err = check_data(&m, &mix, &exp).unwrap_err();
        assert!(err.contains(&format!("0x{at:x}")), "{err}");
    }
}

/// The EIB checker itself rejects each kind of overbooking: a ring segment
/// or a port used twice at once, a fourth transfer on a ring, two commands
/// in one bus cycle, a command over 128 B, a command off a bus edge.
#[test]
fn verify_rejects_every_kind_of_overbooking() {
    use cellsim_engine::eib::check::OccupancyLog;
    let ok = OccupancyLog {
        segments: vec![(0, 3, 0, 16), (0, 3, 16, 32), (1, 3, 0, 16)],
        sends: vec![(1, 0, 16), (1, 16, 32), (2, 0, 16)],
        receives: vec![(4, 2, 18), (4, 18, 34)],
        transfers: vec![(0, 0, 16), (0, 2, 18), (0, 4, 20), (0, 16, 30)],
        commands: vec![(0, 128), (2, 16), (4, 1)],
    };
    ok.verify(3).unwrap();
    let bad: Vec<(&str, OccupancyLog)> = vec![
        (
            "segment",
            OccupancyLog {
                segments: vec![(0, 3, 0, 16), (0, 3, 15, 31)],
                ..ok.clone()
            },
        ),
        (
            "sends",
            OccupancyLog {
                sends: vec![(1, 0, 16), (1, 8, 24)],
                ..ok.clone()
            },
        ),
        (
            "receives",
            OccupancyLog {
                receives: vec![(4, 2, 18), (4, 17, 33)],
                ..ok.clone()
            },
        ),
        (
            "transfers",
            OccupancyLog {
                transfers: vec![(0, 0, 16), (0, 2, 18), (0, 4, 20), (0, 6, 22)],
                ..ok.clone()
            },
        ),
        (
            "within one bus cycle",
            OccupancyLog {
                commands: vec![(0, 128), (0, 128)],
                ..ok.clone()
            },
        ),
        (
            "at most 128 B",
            OccupancyLog {
                commands: vec![(0, 256)],
                ..ok.clone()
            },
        ),
        (
            "off a bus edge",
            OccupancyLog {
                commands: vec![(3, 16)],
                ..ok.clone()
            },
        ),
    ];
    for (what, log) in bad {
        let err = log.verify(3).expect_err(what);
        assert!(err.contains(what), "{what}: {err}");
    }
}
