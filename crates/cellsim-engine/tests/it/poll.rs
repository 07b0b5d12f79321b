//! Declared polling loops (`Spu::mfc_poll`) against the plain loops they
//! stand for: SPEs poll rows of main memory that other SPEs write at random
//! times among other traffic; everything observable must be equal (see
//! `fast_forward::observe`), declared or plain, with the fast-forward on or off.

use crate::fast_forward::{both_ways_stats, observe, prepared};
use crate::util::SplitMix;
use cellsim_engine::{Machine, PollRow, Spu};
use proptest::prelude::*;

/// The rows polled: 128 bytes each in main memory.
const ROWS: [u64; 2] = [0x1_0000, 0x1_0080];
/// Where each poller keeps its copy of the rows in its local store.
const ROW_LSA: u32 = 0x8000;

#[derive(Debug, Clone)]
enum Role {
    /// Puts counts 1..=rounds into its slot of a row, at random intervals,
    /// among gets of `noise` bytes from memory.
    Writer {
        row: usize,
        slot: u32,
        rounds: u32,
        gaps: Vec<u64>,
        noise: u32,
    },
    /// Polls one or both rows until every writer's slot holds its last count.
    Poller {
        rows: usize,
        pause: u64,
        work: u64,
        done: Vec<(usize, u32, u32)>,
        declared: bool,
    },
}

async fn writer(spu: Spu, row: usize, slot: u32, rounds: u32, gaps: Vec<u64>, noise: u32) -> u32 {
    let sig = 0x9000 + 16 * slot;
    for n in 1..=rounds {
        spu.compute(gaps[n as usize - 1]).await;
        spu.mfc_get(0xA000, 0x2_0000 + 0x1000 * slot as u64, noise, 1)
            .await;
        spu.ls_write_u32(sig, n);
        spu.mfc_put(sig, ROWS[row] + 16 * slot as u64, 16, 0).await;
        spu.mfc_write_tag_mask(3).await;
        spu.mfc_read_tag_status_all().await;
    }
    rounds
}

fn row_of(i: usize) -> PollRow {
    PollRow {
        lsa: ROW_LSA + 128 * i as u32,
        ea: ROWS[i],
        size: 128,
        tag: 2 + i as u32,
    }
}

/// The plain loop `Spu::mfc_poll` stands for.
async fn plain_poll(spu: &Spu, pause: u64, rows: &[PollRow]) -> usize {
    let seen: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut b = vec![0; r.size as usize];
            spu.ls_read(r.lsa, &mut b);
            b
        })
        .collect();
    loop {
        spu.compute(pause).await;
        for (i, r) in rows.iter().enumerate() {
            spu.mfc_get(r.lsa, r.ea, r.size, r.tag).await;
            spu.mfc_write_tag_mask(1 << r.tag).await;
            spu.mfc_read_tag_status_all().await;
            let mut now = vec![0; r.size as usize];
            spu.ls_read(r.lsa, &mut now);
            if now != seen[i] {
                return i;
            }
        }
    }
}

async fn poller(
    spu: Spu,
    rows: usize,
    pause: u64,
    work: u64,
    done: Vec<(usize, u32, u32)>,
    declared: bool,
) -> u32 {
    let rows: Vec<PollRow> = (0..rows).map(row_of).collect();
    for r in &rows {
        spu.mfc_get(r.lsa, r.ea, r.size, r.tag).await;
    }
    spu.mfc_write_tag_mask(0b1100).await;
    spu.mfc_read_tag_status_all().await;
    let mut changes = 0u32;
    loop {
        let finished = done.iter().all(|&(row, slot, last)| {
            spu.ls_read_u32(ROW_LSA + 128 * row as u32 + 16 * slot) == last
        });
        if finished {
            return changes;
        }
        let i = if declared {
            spu.mfc_poll(pause, &rows).await
        } else {
            plain_poll(&spu, pause, &rows).await
        };
        changes += 1 + 16 * i as u32;
        spu.compute(work).await;
    }
}

/// Writers on some SPEs, pollers on others.
fn roles(spes: usize, seed: u64, declared: bool) -> Vec<Role> {
    let mut rng = SplitMix(seed);
    let mut below = |n: u64| rng.next_u64() % n;
    let writers = 1 + below(spes as u64 / 2) as usize;
    let mut out = Vec::new();
    let mut done = Vec::new();
    for w in 0..writers {
        let rounds = 1 + below(6) as u32;
        let (row, slot) = (w % 2, (w / 2) as u32);
        done.push((row, slot, rounds));
        out.push(Role::Writer {
            row,
            slot,
            rounds,
            gaps: (0..rounds).map(|_| below(4000)).collect(),
            noise: 128 * (1 + below(16) as u32),
        });
    }
    for _ in writers..spes {
        let rows = if done.iter().any(|d| d.0 == 1) { 2 } else { 1 };
        out.push(Role::Poller {
            rows,
            pause: 1 + below(400),
            work: below(300),
            done: done.clone(),
            declared,
        });
    }
    out
}

fn setup(preset: &str, seed: u64, declared: bool, reference: bool) -> Machine {
    let mut m = prepared(preset, &[], seed, reference);
    let spes = m.spe_count().min(8);
    for (s, role) in roles(spes, seed, declared).into_iter().enumerate() {
        let s = s as u32;
        match role {
            Role::Writer {
                row,
                slot,
                rounds,
                gaps,
                noise,
            } => m.spawn_native(s, 0, 0, move |spu| {
                writer(spu, row, slot, rounds, gaps, noise)
            }),
            Role::Poller {
                rows,
                pause,
                work,
                done,
                declared,
            } => m.spawn_native(s, 0, 0, move |spu| {
                poller(spu, rows, pause, work, done, declared)
            }),
        }
        .unwrap();
    }
    m
}

fn run(preset: &str, seed: u64, declared: bool, reference: bool) -> (String, u64) {
    let mut m = setup(preset, seed, declared, reference);
    let outcome = m.run().map(|_| ()).map_err(|e| e.to_string());
    assert!(outcome.is_ok(), "seed {seed} on {preset}: {outcome:?}");
    (observe(&m, outcome), m.declared_polls())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// A declared poll makes the plain loop's requests at the plain loop's
    /// cycles and ends when it would: identical runs.
    #[test]
    fn a_declared_poll_is_the_plain_loop(seed in any::<u64>(), preset in 0..3usize) {
        let preset = ["qs20-1chip", "ps3", "qs22"][preset];
        let (plain, none) = run(preset, seed, false, false);
        let (declared, polls) = run(preset, seed, true, false);
        prop_assert_eq!(none, 0);
        prop_assert!(polls > 0, "no declared poll ran");
        prop_assert_eq!(plain, declared);
    }
}

/// Declared polls with and without the fast-forward: identical.
#[test]
fn declared_polls_are_identical_both_ways() {
    for seed in 1..=3u64 {
        let (reference, fast, _) = both_ways_stats(|r| setup("qs20-1chip", seed, true, r));
        assert_eq!(reference, fast, "seed {seed}");
        let (plain, _) = run("qs20-1chip", seed, false, true);
        assert_eq!(
            plain, reference,
            "seed {seed}: plain against declared, reference path"
        );
    }
}
