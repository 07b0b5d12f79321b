//! Helpers shared by the test modules: machines, exit codes, a tiny seeded RNG.

use cellsim_engine::{Cycle, Machine, MachineConfig, RunSummary, Spu, ThreadState};

/// Timebase override that makes one decrementer tick one SPU cycle (3.2 GHz core).
pub const TB_CYCLES: &str = "timebase_mhz=3200";

/// A machine from a preset with `section.key=value` overrides.
pub fn machine_of(preset: &str, overrides: &[&str], seed: u64) -> Machine {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Machine::new(MachineConfig::load(preset, &o).unwrap(), seed)
}

/// A qs20 with overrides.
pub fn qs20(overrides: &[&str], seed: u64) -> Machine {
    machine_of("qs20-1chip", overrides, seed)
}

/// Exit code of thread `tid`; panics if it did not finish.
pub fn exit_code(s: &RunSummary, tid: usize) -> u32 {
    match s.threads[tid].state {
        ThreadState::Finished { code, .. } => code,
        other => panic!("thread {tid} did not finish: {other:?}"),
    }
}

/// Cycle at which thread `tid` finished.
pub fn end_cycle(s: &RunSummary, tid: usize) -> Cycle {
    match s.threads[tid].state {
        ThreadState::Finished { at, .. } => at,
        other => panic!("thread {tid} did not finish: {other:?}"),
    }
}

/// GB/s (10^9 B/s) for `bytes` moved in `cycles` SPU cycles at 3.2 GHz.
pub fn gbs(bytes: u64, cycles: u64) -> f64 {
    bytes as f64 * 3.2 / cycles as f64
}

/// SplitMix64: a small, seedable, dependency-free generator for test data.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `buf` with random bytes, eight at a time.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let v = self.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.fill(&mut v);
        v
    }
}

/// A streaming workload (the benchmark kernel's shape, kept here so the
/// engine's tests need no programs crate): `pairs` gets of `size` bytes from
/// `get_ea` and puts to `put_ea`, tag groups 0 and 1, one wait at the end.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    pub get_ea: u64,
    pub put_ea: u64,
    pub size: u32,
    pub pairs: u32,
}

/// Runs [`Stream`] on `spu`; returns 0 (or `u32::MAX` if the local store is full).
pub async fn stream(spu: Spu, p: Stream) -> u32 {
    let Ok(a) = spu.ls_alloc(p.size, 128) else {
        return u32::MAX;
    };
    let Ok(b) = spu.ls_alloc(p.size, 128) else {
        return u32::MAX;
    };
    spu.mfc_write_tag_mask(0b11).await;
    for _ in 0..p.pairs {
        spu.mfc_get(a, p.get_ea, p.size, 0).await;
        spu.mfc_put(b, p.put_ea, p.size, 1).await;
    }
    spu.mfc_read_tag_status_all().await;
    0
}
