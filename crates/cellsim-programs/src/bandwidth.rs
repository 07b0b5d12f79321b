//! Native benchmark programs of the contention suites (Kistler et al. 2006's hot spot
//! and collective patterns, Jiménez-González et al. 2007's bandwidth experiments).
//!
//! Like [`crate::kernels`], each reports elapsed decrementer ticks as its exit
//! value and reads like the C benchmark it stands for.

use cellsim_engine::mfc::list::ListElement;
use cellsim_engine::program::Spu;
use serde::Deserialize;

/// Most remote targets of [`traffic`].
pub const MAX_TARGETS: usize = 8;

/// What [`region`] does with the remote region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegionOp {
    /// Gets only.
    Get,
    /// Puts only.
    Put,
    /// Get+put pairs.
    Copy,
}

/// Parameters of [`region`].
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Get, put or copy.
    pub op: RegionOp,
    /// Remote region the gets read.
    #[serde(default)]
    pub get_ea: u64,
    /// Remote region the puts write.
    #[serde(default)]
    pub put_ea: u64,
    /// Bytes of each remote region before the addresses wrap around.
    pub span: u64,
    /// Bytes moved in each direction.
    pub total: u64,
    /// Bytes per DMA (or per list element).
    pub size: u32,
    /// Wait for completion after this many DMAs (or get+put pairs); 0: only at the end.
    #[serde(default)]
    pub wait_every: u32,
    /// Use DMA lists of 16 KB (elements of `size` bytes) instead of single DMAs.
    #[serde(default)]
    pub list: bool,
}

impl Region {
    /// The sizes the loop cannot run with.
    pub fn check(&self) -> Result<(), String> {
        if !(128..=16384).contains(&self.size) || 16384 % self.size != 0 {
            return Err(format!(
                "region: size {} must divide 16384 and be >= 128",
                self.size
            ));
        }
        Ok(())
    }
}

/// Jiménez-González et al. 2007's SPE bandwidth loop: the SPE moves `total` bytes between eight
/// 16 KB local-store buffers and a remote region (memory or another SPE's
/// local store), `size` bytes per DMA, issuing as fast as its queue allows and
/// waiting every `wait_every` DMAs or only at the end.
pub async fn region(spu: Spu, p: Region) -> u32 {
    const BUF: u32 = 16384;
    let Ok(bufs) = spu.ls_alloc(8 * BUF, 128) else {
        return u32::MAX;
    };
    let per_cmd = if p.list { BUF } else { p.size };
    let elems = (BUF / p.size).max(1);
    let Ok(list) = spu.ls_alloc(8 * elems * 2, 8) else {
        return u32::MAX;
    };
    let steps = p.total.div_ceil(per_cmd as u64);
    spu.mfc_write_tag_mask(0xFFFF_FFFF).await;
    spu.spu_write_decrementer(u32::MAX).await;
    let start = spu.spu_read_decrementer().await;
    let dirs: &[bool] = match p.op {
        RegionOp::Get => &[false],
        RegionOp::Put => &[true],
        RegionOp::Copy => &[false, true],
    };
    for i in 0..steps {
        let off = (i * per_cmd as u64) % p.span.max(per_cmd as u64);
        let lsa = bufs + (i % 8) as u32 * BUF;
        let tag = (i % 32) as u32;
        for &put in dirs {
            let ea = if put { p.put_ea } else { p.get_ea } + off;
            if p.list {
                // One list per 16 KB: consecutive elements of `size` bytes.
                let l = list + if put { 8 * elems } else { 0 };
                for e in 0..elems {
                    let el = ListElement {
                        stall_and_notify: false,
                        size: p.size,
                        eal: (ea + (e * p.size) as u64) as u32,
                    };
                    spu.ls_write(l + 8 * e, &el.encode().to_be_bytes());
                }
                let eah = ea & !0xFFFF_FFFF;
                if put {
                    spu.mfc_putl(lsa, eah, l, 8 * elems, tag).await;
                } else {
                    spu.mfc_getl(lsa, eah, l, 8 * elems, tag).await;
                }
            } else if put {
                spu.mfc_put(lsa, ea, p.size, tag).await;
            } else {
                spu.mfc_get(lsa, ea, p.size, tag).await;
            }
        }
        if p.wait_every > 0 && (i + 1) % p.wait_every as u64 == 0 {
            spu.mfc_read_tag_status_all().await;
        }
    }
    spu.mfc_read_tag_status_all().await;
    start.wrapping_sub(spu.spu_read_decrementer().await)
}

/// Parameters of [`traffic`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Puts instead of gets.
    #[serde(default)]
    pub put: bool,
    /// Remote buffers (memory or local stores), 1 to [`MAX_TARGETS`].
    pub eas: Vec<u64>,
    /// Pick a random buffer for every DMA (else the first only).
    #[serde(default)]
    pub random: bool,
    /// Seed of the random picks.
    #[serde(default = "crate::one")]
    pub seed: u64,
    /// Bytes per DMA.
    pub size: u32,
    /// DMAs in all.
    pub count: u32,
}

impl Traffic {
    /// The target counts the benchmark cannot run with.
    pub fn check(&self) -> Result<(), String> {
        if self.eas.is_empty() || self.eas.len() > MAX_TARGETS {
            return Err(format!(
                "traffic: 1 to {MAX_TARGETS} targets, not {}",
                self.eas.len()
            ));
        }
        Ok(())
    }
}

/// Kistler et al. 2006's collective benchmark: a stream of nonblocking DMAs to one
/// target, or to a uniformly random target each time, with one wait at the end.
pub async fn traffic(spu: Spu, p: Traffic) -> u32 {
    let Ok(buf) = spu.ls_alloc(p.size.max(128), 128) else {
        return u32::MAX;
    };
    let mut x = p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    spu.mfc_write_tag_mask(0xFFFF_FFFF).await;
    spu.spu_write_decrementer(u32::MAX).await;
    let start = spu.spu_read_decrementer().await;
    let targets = p.eas.len() as u32;
    for i in 0..p.count {
        let t = if p.random && targets > 1 {
            // xorshift64*: a cheap seeded choice of target.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as u32 % targets
        } else {
            0
        };
        let tag = i % 16;
        if p.put {
            spu.mfc_put(buf, p.eas[t as usize], p.size, tag).await;
        } else {
            spu.mfc_get(buf, p.eas[t as usize], p.size, tag).await;
        }
    }
    spu.mfc_read_tag_status_all().await;
    start.wrapping_sub(spu.spu_read_decrementer().await)
}
