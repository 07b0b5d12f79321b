//! Programs that never end: the simulated-time limit stops them with
//! `SimError::Runaway` instead of hanging the host.

use crate::util::qs20;
use cellsim_engine::{Request, SimError, Step};

fn runaway<T: std::fmt::Debug>(r: Result<T, SimError>) -> (u64, f64, usize, String) {
    match r {
        Err(e @ SimError::Runaway { .. }) => {
            let text = e.to_string();
            let SimError::Runaway {
                limit,
                limit_ns,
                running,
                ..
            } = e
            else {
                unreachable!()
            };
            (limit, limit_ns, running, text)
        }
        other => panic!("expected a runaway, got {other:?}"),
    }
}

/// A program computing forever in a loop hits `set_time_limit`; the clock
/// stops at or before the limit.
#[test]
fn endless_compute_loop_hits_the_time_limit() {
    let mut m = qs20(&[], 1);
    m.set_time_limit(1_000_000);
    m.spawn_native(0, 0, 0, |spu| async move {
        loop {
            spu.compute(777).await;
        }
    })
    .unwrap();
    let (limit, limit_ns, running, text) = runaway(m.run());
    assert_eq!(limit, 1_000_000);
    assert!((limit_ns - 312_500.0).abs() < 1e-6, "{limit_ns}");
    assert_eq!(running, 1);
    assert!(
        m.now() <= 1_000_000 && m.now() > 1_000_000 - 777,
        "stopped at {}",
        m.now()
    );
    assert!(
        text.contains("1000000 cycles") && text.contains("time_limit"),
        "{text}"
    );
}

/// An endless DMA loop (busy EIB, never idle) hits the limit too; finished
/// programs are not counted as running.
#[test]
fn endless_dma_loop_hits_the_time_limit() {
    let mut m = qs20(&[], 2);
    m.set_time_limit(200_000);
    let ea = m.alloc(4096, 128).unwrap();
    m.spawn_native(1, 0, 0, |spu| async move {
        spu.compute(50).await;
        0
    })
    .unwrap();
    for spe in [2, 3] {
        m.spawn_native(spe, ea, 0, |spu| async move {
            spu.mfc_write_tag_mask(1).await;
            loop {
                spu.mfc_get(0x4000, spu.argp(), 4096, 0).await;
                spu.mfc_put(0x4000, spu.argp(), 4096, 0).await;
                spu.mfc_read_tag_status_all().await;
            }
        })
        .unwrap();
    }
    let (limit, _, running, _) = runaway(m.run());
    assert_eq!((limit, running), (200_000, 2));
    assert!(m.counters().dma_commands > 50, "the loop did real work");
}

/// Without an explicit limit a run stops after 10 simulated seconds.
#[test]
fn default_limit_is_ten_simulated_seconds() {
    let mut m = qs20(&[], 3);
    m.spawn_native(0, 0, 0, |spu| async move {
        loop {
            spu.compute(1 << 30).await;
        }
    })
    .unwrap();
    let (limit, limit_ns, running, _) = runaway(m.run());
    assert_eq!(limit, 32_000_000_000);
    assert!((limit_ns - 1e10).abs() < 1.0);
    assert_eq!(running, 1);
}

/// A program ending exactly at the limit is not a runaway.
#[test]
fn ending_exactly_at_the_limit_is_fine() {
    let mut m = qs20(&[], 4);
    m.set_time_limit(5000);
    m.spawn_native(0, 0, 0, |spu| async move {
        spu.compute(5000).await;
        9
    })
    .unwrap();
    let s = m.run().unwrap();
    assert_eq!(s.cycles, 5000);
}

/// An externally driven program looping forever gets the same error from
/// `advance`.
#[test]
fn external_program_loop_hits_the_time_limit() {
    let mut m = qs20(&[], 5);
    m.set_time_limit(100_000);
    let t = m.spawn_external(0).unwrap();
    let mut resumes = 0;
    let err = loop {
        match m.advance() {
            Ok(Step::Resume { thread, .. }) => {
                assert_eq!(thread, t);
                resumes += 1;
                m.submit(t, Request::Compute(1000)).unwrap();
            }
            other => break other,
        }
    };
    let (limit, _, running, _) = runaway(err);
    assert_eq!((limit, running), (100_000, 1));
    assert_eq!(resumes, 101, "resumed at 0, 1000, ..., 100000");
}
