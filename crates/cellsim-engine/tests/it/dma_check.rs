//! The DMA hazard checker for native programs (`Machine::set_check_dma`):
//! a race stops the run naming the SPE, the tags, the bytes and both of the
//! program's call sites; a correct program runs as it does without it.

use crate::util::qs20;
use cellsim_engine::{Machine, SimError};

/// SPE 1 fetches 256 bytes and, if `wait` is false, reads them before
/// waiting for the tag: the student's first bug.
fn fetch_then_read(check: bool, wait: bool) -> (Machine, Result<(), SimError>) {
    let mut m = qs20(&[], 1);
    m.set_check_dma(check);
    let ea = m.alloc(256, 128).unwrap();
    m.spawn_native(1, 0, 0, move |spu| async move {
        spu.mfc_get(0x4000, ea, 256, 5).await;
        if wait {
            spu.mfc_write_tag_mask(1 << 5).await;
            spu.mfc_read_tag_status_all().await;
        }
        let v = spu.ls_read_u32(0x4080);
        spu.compute(100).await;
        v
    })
    .unwrap();
    let r = m.run().map(|_| ());
    (m, r)
}

#[test]
fn reading_bytes_a_get_still_moves_is_a_hazard_naming_both_lines() {
    let (_, r) = fetch_then_read(true, false);
    let Err(SimError::DmaHazard { spe, hazard }) = r else {
        panic!("expected a DMA hazard, got {r:?}");
    };
    assert_eq!(spe, 1);
    assert_eq!(hazard.tags, vec![5]);
    assert_eq!(hazard.range, ("ls", 0x4080, 0x4084));
    assert!(
        hazard.sites.0.ends_with("dma_check.rs:15"),
        "{:?}",
        hazard.sites
    );
    assert!(
        hazard.sites.1.ends_with("dma_check.rs:20"),
        "{:?}",
        hazard.sites
    );
    assert!(hazard
        .message
        .contains("reads local-store bytes 0x4080-0x4084"));
}

#[test]
fn a_program_that_waits_runs_alike_with_the_checker_and_without() {
    let (mut a, ra) = fetch_then_read(true, true);
    let (mut b, rb) = fetch_then_read(false, true);
    assert!(ra.is_ok() && rb.is_ok());
    assert_eq!(a.now(), b.now());
    assert_eq!(
        a.run().map(|s| s.cycles).ok(),
        b.run().map(|s| s.cycles).ok()
    );
}

#[test]
fn without_the_checker_the_race_reads_what_the_chip_has() {
    let (_, r) = fetch_then_read(false, false);
    assert!(r.is_ok(), "stale data is realistic: no error unless asked");
}
