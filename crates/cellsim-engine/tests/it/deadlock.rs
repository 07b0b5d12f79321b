//! Programs that can never go on: the run ends with `SimError::Deadlock`
//! listing every stuck program and what it waits in — and never before the
//! chip is truly idle.

use crate::util::{end_cycle, qs20};
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{
    Machine, MfcCommand, Opcode, Request, SimError, Step, TagUpdate, ThreadState,
};

fn get(lsa: u32, ea: u64, size: u32, tag: u32) -> Request {
    Request::Mfc(MfcCommand::single(Opcode::Get, lsa, ea, size, tag))
}

fn resume(m: &mut Machine) -> (usize, u64) {
    match m.advance().unwrap() {
        Step::Resume { thread, reply } => (thread, reply),
        Step::Finished => panic!("finished too early"),
    }
}

fn deadlock(r: Result<Step, SimError>) -> (u64, Vec<cellsim_engine::error::Blocked>, String) {
    match r {
        Err(e @ SimError::Deadlock { .. }) => {
            let text = e.to_string();
            let SimError::Deadlock { cycle, blocked } = e else {
                unreachable!()
            };
            (cycle, blocked, text)
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// An external program that is handed control and never makes its next
/// request leaves the chip idle: deadlock naming that SPE.
#[test]
fn unfed_external_program_deadlocks() {
    let mut m = qs20(&["placement=identity"], 1);
    let tid = m.spawn_external(4).unwrap();
    assert_eq!(resume(&mut m), (tid, 0));
    let (cycle, blocked, text) = deadlock(m.advance());
    assert_eq!(cycle, 0);
    assert_eq!(blocked.len(), 1, "{text}");
    assert_eq!(blocked[0].who, "SPE 4 (physical 4)");
    assert!(text.starts_with("deadlock at cycle 0"), "{text}");
    assert!(text.contains("SPE 4 (physical 4) waits in"), "{text}");
}

/// With native programs still busy the engine must not call it a deadlock;
/// once they finish, the report lists exactly the stuck external programs
/// (not the finished ones), at the cycle the chip went idle.
#[test]
fn deadlock_lists_each_stuck_program_and_only_those() {
    let mut m = qs20(&["placement=identity"], 2);
    let ea = m.alloc(16384, 128).unwrap();
    let ext_a = m.spawn_external(0).unwrap();
    let native = m
        .spawn_native(1, ea, 0, |spu| async move {
            for i in 0..8 {
                spu.mfc_get(0x8000, spu.argp(), 16384, i).await;
            }
            spu.mfc_write_tag_mask(0xff).await;
            spu.mfc_read_tag_status_all().await;
            0
        })
        .unwrap();
    let ext_b = m.spawn_external(6).unwrap();
    // Feed A one DMA and a wait; B is resumed once and then abandoned.
    let mut seen_b = false;
    let mut a_step = 0;
    let result = loop {
        match m.advance() {
            Ok(Step::Resume { thread, reply }) if thread == ext_a => {
                match a_step {
                    0 => m.submit(ext_a, get(0x4000, ea, 4096, 2)).unwrap(),
                    1 => m.submit(ext_a, Request::WriteTagMask(1 << 2)).unwrap(),
                    2 => m
                        .submit(ext_a, Request::ReadTagStatus(TagUpdate::All))
                        .unwrap(),
                    3 => {
                        assert_eq!(reply, 1 << 2, "tag status of the finished wait");
                        // A stops making requests here.
                    }
                    _ => unreachable!("A was abandoned"),
                }
                a_step += 1;
            }
            Ok(Step::Resume { thread, .. }) => {
                assert_eq!(thread, ext_b);
                assert!(!seen_b, "B was never fed, it cannot be resumed twice");
                seen_b = true;
            }
            other => break other,
        }
    };
    assert_eq!(a_step, 4);
    let (cycle, blocked, text) = deadlock(result);
    let s = m.summary();
    let native_end = end_cycle(&s, native);
    assert!(
        cycle >= native_end,
        "deadlock at {cycle} before the native program ended at {native_end}"
    );
    let who: Vec<&str> = blocked.iter().map(|b| b.who.as_str()).collect();
    assert_eq!(
        who,
        vec!["SPE 0 (physical 0)", "SPE 6 (physical 6)"],
        "{text}"
    );
    assert!(
        !text.contains("SPE 1"),
        "a finished program is not blocked: {text}"
    );
}

/// An external program blocked in a tag-status wait is reported as blocked in
/// that call while its DMA is in flight, and it is not a deadlock: it resumes
/// when the DMA completes; one that stalls on a full queue resumes too.
#[test]
fn blocked_waits_that_will_be_satisfied_are_not_deadlocks() {
    let mut m = qs20(&["placement=identity"], 3);
    let ea = m.alloc(16384, 128).unwrap();
    let waiter = m.spawn_external(2).unwrap();
    let ticker = m.spawn_external(3).unwrap();
    let mut waiter_step = 0;
    let mut ticks = 0;
    let mut saw_blocked = None;
    loop {
        match m.advance().unwrap() {
            Step::Finished => break,
            Step::Resume { thread, reply } if thread == waiter => {
                let req = match waiter_step {
                    // 17 DMAs of 16 KB: the 17th stalls on the full queue.
                    s @ 0..=16 => get(0x4000, ea, 16384, s % 4),
                    17 => Request::WriteTagMask(0xf),
                    18 => Request::ReadTagStatus(TagUpdate::All),
                    19 => {
                        assert_eq!(reply, 0xf);
                        Request::Exit(7)
                    }
                    _ => unreachable!(),
                };
                m.submit(waiter, req).unwrap();
                waiter_step += 1;
            }
            Step::Resume { thread, .. } => {
                assert_eq!(thread, ticker);
                if let ThreadState::Blocked { request, since } = m.threads()[waiter].state {
                    saw_blocked.get_or_insert((request, since));
                }
                ticks += 1;
                let req = if ticks < 400 {
                    Request::Compute(100)
                } else {
                    Request::Exit(0)
                };
                m.submit(ticker, req).unwrap();
            }
        }
    }
    assert_eq!(waiter_step, 20);
    let (request, since) = saw_blocked.expect("the waiter was seen blocked");
    assert!(
        matches!(
            request,
            Request::Mfc(_) | Request::ReadTagStatus(TagUpdate::All)
        ),
        "{request:?}"
    );
    assert!(since > 0);
    let s = m.summary();
    assert!(matches!(
        s.threads[waiter].state,
        ThreadState::Finished { code: 7, .. }
    ));
    // The blocked call reads like the SDK in reports.
    assert_eq!(
        Request::ReadTagStatus(TagUpdate::All).describe(0xf),
        "mfc_read_tag_status_all(mask=0xf)"
    );
    let put = Request::Mfc(MfcCommand::single(
        Opcode::PutF,
        0x100,
        MemoryMap::ls_ea(1),
        128,
        3,
    ));
    assert_eq!(
        put.describe(0),
        "mfc_putf(ls=0x100, ea=0x1000100000, size=128, tag=3)"
    );
}

/// An external program abandoned after some DMAs still lets those DMAs
/// finish and land before the deadlock is declared.
#[test]
fn abandoned_program_dmas_still_land_before_the_deadlock() {
    let mut m = qs20(&[], 4);
    let ea = m.alloc(4096, 128).unwrap();
    m.memory().write(ea as usize, &[0xAB; 4096]);
    let t = m.spawn_external(0).unwrap();
    resume(&mut m);
    m.submit(t, get(0x4000, ea, 4096, 0)).unwrap();
    resume(&mut m); // the issue is done; the DMA is in flight
    let (cycle, blocked, _) = deadlock(m.advance());
    assert_eq!(blocked.len(), 1);
    assert!(cycle > 300, "the deadlock waited for the DMA ({cycle})");
    let mut buf = [0u8; 4096];
    m.local_store(0).unwrap().read(0x4000, &mut buf);
    assert!(buf.iter().all(|&b| b == 0xAB), "the DMA's data landed");
}
