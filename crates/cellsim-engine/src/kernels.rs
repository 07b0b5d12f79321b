//! Native benchmark programs: the SPE side of the experiments.
//!
//! Each kernel is the Rust twin of a Python program in `cellsim.kernels`
//! (same calls in the same order, hence the same simulated timing) and is
//! what the experiments run by default, because it is fast. Kernels report
//! like the papers' benchmarks did: elapsed decrementer ticks as the exit
//! value.

use crate::error::SimError;
use crate::machine::{Machine, ThreadId};
use crate::program::Spu;

/// Direction of a DMA benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `mfc_get`.
    Get,
    /// `mfc_put`.
    Put,
}

/// Parameters of [`dma_bench`].
#[derive(Debug, Clone, Copy)]
pub struct DmaBench {
    /// Get or put.
    pub dir: Dir,
    /// Effective address of the remote buffer (memory or another SPE's LS).
    pub ea: u64,
    /// Bytes per DMA.
    pub size: u32,
    /// DMAs issued before waiting for all of them (0 = wait only at the end).
    pub batch: u32,
    /// DMAs in total.
    pub count: u32,
}

/// Seed 000's basic DMA benchmark: `count` DMAs of `size` bytes to or from
/// one remote buffer, waiting for completion after every `batch` of them (or
/// only at the end). Returns elapsed decrementer ticks.
pub async fn dma_bench(spu: Spu, p: DmaBench) -> u32 {
    let Ok(buf) = spu.ls_alloc(p.size.max(16), 128) else {
        return u32::MAX;
    };
    const TAG: u32 = 3;
    spu.mfc_write_tag_mask(1 << TAG).await;
    spu.spu_write_decrementer(u32::MAX).await;
    let start = spu.spu_read_decrementer().await;
    for i in 0..p.count {
        match p.dir {
            Dir::Get => spu.mfc_get(buf, p.ea, p.size, TAG).await,
            Dir::Put => spu.mfc_put(buf, p.ea, p.size, TAG).await,
        }
        if p.batch > 0 && (i + 1) % p.batch == 0 {
            spu.mfc_read_tag_status_all().await;
        }
    }
    spu.mfc_read_tag_status_all().await;
    let end = spu.spu_read_decrementer().await;
    start.wrapping_sub(end)
}

/// Parameters of [`stream`].
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    /// Remote buffer for gets.
    pub get_ea: u64,
    /// Remote buffer for puts.
    pub put_ea: u64,
    /// Bytes per DMA.
    pub size: u32,
    /// Get+put pairs.
    pub pairs: u32,
}

/// Streams gets and puts back to back, never waiting until the end: the
/// saturation load of the speed benchmark.
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

/// Names of the kernels [`spawn`] knows.
pub const NAMES: &[&str] = &["dma_bench", "stream"];

/// Starts kernel `name` on logical SPE `spe` with named numeric parameters
/// (the binding's entry point: `{"dir": 0|1, "ea": .., "size": .., ...}`).
pub fn spawn(
    m: &mut Machine,
    spe: u32,
    name: &str,
    params: &[(String, f64)],
) -> Result<ThreadId, SimError> {
    spawn_after(m, spe, name, params, 0)
}

/// Like [`spawn`], the kernel starting `delay` cycles from now.
pub fn spawn_after(
    m: &mut Machine,
    spe: u32,
    name: &str,
    params: &[(String, f64)],
    delay: crate::time::Cycle,
) -> Result<ThreadId, SimError> {
    let get = |k: &str| -> Result<f64, SimError> {
        params
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| *v)
            .ok_or_else(|| SimError::Usage(format!("kernel {name} needs parameter '{k}'")))
    };
    match name {
        "dma_bench" => {
            let p = DmaBench {
                dir: if get("put")? != 0.0 {
                    Dir::Put
                } else {
                    Dir::Get
                },
                ea: get("ea")? as u64,
                size: get("size")? as u32,
                batch: get("batch")? as u32,
                count: get("count")? as u32,
            };
            m.spawn_native_after(spe, 0, 0, delay, move |spu| dma_bench(spu, p))
        }
        "stream" => {
            let p = Stream {
                get_ea: get("get_ea")? as u64,
                put_ea: get("put_ea")? as u64,
                size: get("size")? as u32,
                pairs: get("pairs")? as u32,
            };
            m.spawn_native_after(spe, 0, 0, delay, move |spu| stream(spu, p))
        }
        _ => Err(SimError::Usage(format!(
            "unknown kernel '{name}': known kernels are {}",
            NAMES.join(", ")
        ))),
    }
}
