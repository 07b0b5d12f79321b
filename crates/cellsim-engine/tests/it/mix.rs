//! Random, conflict-free mixes of DMAs on up to 8 SPEs, with a reference
//! model of the bytes they move.
//!
//! Conflict-free: every DMA writes a destination range that no other DMA
//! touches, and reads a source range that no DMA writes. The final contents
//! are then independent of the order the DMAs run in, so the reference model
//! is simply "copy every source to its destination".
//!
//! Layout (logical SPEs, effective addresses):
//! - each local store: `LS_SRC` (random bytes, only read), `LS_DST` (random
//!   stale bytes, destination slots handed out in order);
//! - main memory: `MEM_SRC` (only read) and `MEM_DST` (destination slots).

use crate::util::SplitMix;
use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::{Machine, Spu, ThreadId};
use proptest::prelude::*;

pub const LS_SRC: u32 = 0x4000;
pub const LS_SRC_LEN: u32 = 0x1_0000;
pub const LS_DST: u32 = LS_SRC + LS_SRC_LEN;
pub const LS_END: u32 = 0x4_0000;
pub const MEM_SRC: u64 = 0x10_0000;
pub const MEM_SRC_LEN: u64 = 0x1_0000;
pub const MEM_DST: u64 = 0x20_0000;
pub const MEM_DST_LEN: u64 = 0x20_0000;

/// Barrier/fence flavour of a DMA (data are conflict-free, so any flavour
/// must give the same bytes; the flavours exercise the queue's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Plain,
    Fence,
    Barrier,
    /// An `mfc_barrier` on the same tag before a plain DMA.
    MfcBarrierFirst,
}

/// One DMA as drawn, before it is placed.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Issuing SPE (modulo the SPE count).
    pub spe: usize,
    pub get: bool,
    /// `None`: main memory; `Some(i)`: another SPE's LS (modulo the count).
    pub remote: Option<usize>,
    pub size: u32,
    /// For sizes below 16: which naturally aligned position in a quadword.
    pub low: u32,
    /// Quadwords of padding before the destination slot (partial lines).
    pub pad: u32,
    /// Position of the source, as a fraction of the source area (0..2^16).
    pub src_pos: u32,
    pub tag: u32,
    pub order: Order,
    /// After the DMA: write this tag mask and wait for all (false) or any (true).
    pub wait: Option<(u32, bool)>,
}

/// Transfer sizes: 1, 2, 4, 8 or multiples of 16 up to 16 KB, weighted
/// toward the common small and medium cases.
pub fn size_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![
        2 => prop::sample::select(vec![1u32, 2, 4, 8]),
        3 => (1..=8u32).prop_map(|k| k * 16),
        3 => (1..=16u32).prop_map(|k| k * 128),
        1 => (1..=1024u32).prop_map(|k| k * 16),
        1 => Just(16384u32),
    ]
}

pub fn spec_strategy() -> impl Strategy<Value = Spec> {
    let order = prop_oneof![
        6 => Just(Order::Plain),
        1 => Just(Order::Fence),
        1 => Just(Order::Barrier),
        1 => Just(Order::MfcBarrierFirst),
    ];
    let wait = prop_oneof![
        4 => Just(None),
        1 => (any::<u32>(), any::<bool>()).prop_map(|(m, any)| Some((m.max(1), any))),
        1 => (0..8u32, any::<bool>()).prop_map(|(t, any)| Some((1 << t, any))),
    ];
    (
        (
            0..8usize,
            any::<bool>(),
            prop::option::weighted(0.6, 0..8usize),
        ),
        (size_strategy(), 0..16u32, 0..8u32, 0..(1u32 << 16)),
        (prop_oneof![3 => 0..8u32, 1 => 0..32u32], order, wait),
    )
        .prop_map(
            |((spe, get, remote), (size, low, pad, src_pos), (tag, order, wait))| Spec {
                spe,
                get,
                remote,
                size,
                low,
                pad,
                src_pos,
                tag,
                order,
                wait,
            },
        )
}

/// SPE count and DMAs of a mix.
pub fn mix_strategy(max_dmas: usize) -> impl Strategy<Value = (usize, Vec<Spec>)> {
    (
        1..=8usize,
        prop::collection::vec(spec_strategy(), 1..=max_dmas),
    )
}

/// A place in the effective-address space, by area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    Mem(u64),
    /// Logical SPE and LS offset.
    Ls(usize, u32),
}

/// One step of an SPE program.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    Dma {
        get: bool,
        order: Order,
        lsa: u32,
        ea: u64,
        size: u32,
        tag: u32,
    },
    MfcBarrier(u32),
    Wait {
        mask: u32,
        any: bool,
    },
}

/// A placed DMA for the reference model.
#[derive(Debug, Clone, Copy)]
pub struct Xfer {
    pub src: Loc,
    pub dst: Loc,
    pub len: u32,
    /// Issuing logical SPE.
    pub spe: usize,
    pub get: bool,
    /// Effective address (the remote end), for counting bus requests.
    pub ea: u64,
}

impl Xfer {
    /// Bus requests the DMAC must create: pieces of at most 128 bytes that
    /// never cross a 128-byte boundary of the effective address.
    pub fn bus_requests(&self) -> u64 {
        let first = self.ea / 128;
        let last = (self.ea + self.len as u64 - 1) / 128;
        last - first + 1
    }

    pub fn remote_is_memory(&self) -> bool {
        let remote = if self.get { self.src } else { self.dst };
        matches!(remote, Loc::Mem(_))
    }

    /// Logical SPE of the remote local store, if any.
    pub fn remote_spe(&self) -> Option<usize> {
        match if self.get { self.src } else { self.dst } {
            Loc::Ls(s, _) => Some(s),
            Loc::Mem(_) => None,
        }
    }
}

/// A placed mix: a program per SPE and the copies they make.
#[derive(Debug, Clone)]
pub struct Mix {
    pub spes: usize,
    pub programs: Vec<Vec<Step>>,
    pub copies: Vec<Xfer>,
    /// End of the used part of `MEM_DST`.
    pub mem_dst_used: u64,
}

/// Places the drawn DMAs: destination slots in order, sources anywhere in
/// the read-only areas. DMAs whose destination no longer fits are dropped.
pub fn build(spes: usize, specs: &[Spec]) -> Mix {
    let mut ls_next = vec![LS_DST; spes];
    let mut mem_next = MEM_DST;
    let mut programs = vec![Vec::new(); spes];
    let mut copies = Vec::new();
    for s in specs {
        let spe = s.spe % spes;
        let remote = s.remote.map(|r| r % spes).and_then(|r| {
            if r != spe {
                Some(r)
            } else if spes > 1 {
                Some((r + 1) % spes)
            } else {
                None
            }
        });
        let size = s.size;
        // Low 4 bits shared by both ends: 0 for >= 16 bytes, natural otherwise.
        let low = if size < 16 {
            (s.low % (16 / size)) * size
        } else {
            0
        };
        // The destination slot.
        let dst_owner = if s.get { Some(spe) } else { remote };
        let need = 16 * s.pad as u64 + size.max(16) as u64;
        let dst_base = match dst_owner {
            Some(o) => {
                let at = ls_next[o] as u64 + 16 * s.pad as u64;
                if ls_next[o] as u64 + need > LS_END as u64 {
                    continue;
                }
                ls_next[o] += need as u32;
                Loc::Ls(o, at as u32 + low)
            }
            None => {
                let at = mem_next + 16 * s.pad as u64;
                if mem_next + need > MEM_DST + MEM_DST_LEN {
                    continue;
                }
                mem_next += need;
                Loc::Mem(at + low as u64)
            }
        };
        // The source: a 16-aligned place in the read-only area, same low bits.
        let src_owner = if s.get { remote } else { Some(spe) };
        let span = |len: u64| {
            let room = (len - size.max(16) as u64) / 16;
            ((s.src_pos as u64 * (room + 1)) >> 16) * 16 + low as u64
        };
        let src = match src_owner {
            Some(o) => Loc::Ls(o, LS_SRC + span(LS_SRC_LEN as u64) as u32),
            None => Loc::Mem(MEM_SRC + span(MEM_SRC_LEN)),
        };
        let ea_of = |l: Loc| match l {
            Loc::Mem(a) => a,
            Loc::Ls(o, off) => MemoryMap::ls_ea(o as u32) + off as u64,
        };
        let (lsa, ea) = if s.get {
            let Loc::Ls(_, lsa) = dst_base else {
                unreachable!()
            };
            (lsa, ea_of(src))
        } else {
            let Loc::Ls(_, lsa) = src else { unreachable!() };
            (lsa, ea_of(dst_base))
        };
        debug_assert_eq!(lsa & 0xF, (ea & 0xF) as u32);
        let prog = &mut programs[spe];
        if s.order == Order::MfcBarrierFirst {
            prog.push(Step::MfcBarrier(s.tag));
        }
        prog.push(Step::Dma {
            get: s.get,
            order: s.order,
            lsa,
            ea,
            size,
            tag: s.tag,
        });
        if let Some((mask, any)) = s.wait {
            prog.push(Step::Wait { mask, any });
        }
        copies.push(Xfer {
            src,
            dst: dst_base,
            len: size,
            spe,
            get: s.get,
            ea,
        });
    }
    Mix {
        spes,
        programs,
        copies,
        mem_dst_used: mem_next,
    }
}

/// Runs one program; returns 0 when the final all-tags status is complete.
pub async fn run_program(spu: Spu, steps: Vec<Step>) -> u32 {
    for st in steps {
        match st {
            Step::Dma {
                get,
                order,
                lsa,
                ea,
                size,
                tag,
            } => match (get, order) {
                (true, Order::Fence) => spu.mfc_getf(lsa, ea, size, tag).await,
                (true, Order::Barrier) => spu.mfc_getb(lsa, ea, size, tag).await,
                (true, _) => spu.mfc_get(lsa, ea, size, tag).await,
                (false, Order::Fence) => spu.mfc_putf(lsa, ea, size, tag).await,
                (false, Order::Barrier) => spu.mfc_putb(lsa, ea, size, tag).await,
                (false, _) => spu.mfc_put(lsa, ea, size, tag).await,
            },
            Step::MfcBarrier(tag) => spu.mfc_barrier(tag).await,
            Step::Wait { mask, any } => {
                spu.mfc_write_tag_mask(mask).await;
                let st = if any {
                    spu.mfc_read_tag_status_any().await
                } else {
                    spu.mfc_read_tag_status_all().await
                };
                if st & !mask != 0 || st == 0 || (!any && st != mask) {
                    return 1;
                }
            }
        }
    }
    spu.mfc_write_tag_mask(u32::MAX).await;
    let st = spu.mfc_read_tag_status_all().await;
    if st == u32::MAX {
        0
    } else {
        2
    }
}

/// The contents every area must end up with.
pub struct Expected {
    pub ls: Vec<Vec<u8>>,
    pub mem_src: Vec<u8>,
    pub mem_dst: Vec<u8>,
}

/// Fills the areas with seeded random bytes, spawns the programs, and
/// returns the reference model's final contents and the thread ids.
pub fn load(m: &mut Machine, mix: &Mix, data_seed: u64) -> (Expected, Vec<ThreadId>) {
    let mut rng = SplitMix(data_seed);
    let mut ls = Vec::with_capacity(mix.spes);
    for spe in 0..mix.spes {
        let mut img = vec![0u8; LS_END as usize];
        rng.fill(&mut img[LS_SRC as usize..]);
        m.local_store(spe as u32)
            .unwrap()
            .write(LS_SRC as usize, &img[LS_SRC as usize..]);
        ls.push(img);
    }
    let mem_src = rng.bytes(MEM_SRC_LEN as usize);
    m.memory().write(MEM_SRC as usize, &mem_src);
    let mut mem_dst = rng.bytes((mix.mem_dst_used - MEM_DST) as usize + 256);
    m.memory().write(MEM_DST as usize, &mem_dst);
    // Reference model: sources are never written, so each copy reads the
    // initial bytes.
    for c in &mix.copies {
        let n = c.len as usize;
        let src: Vec<u8> = match c.src {
            Loc::Mem(a) => {
                let o = (a - MEM_SRC) as usize;
                mem_src[o..o + n].to_vec()
            }
            Loc::Ls(s, off) => ls[s][off as usize..off as usize + n].to_vec(),
        };
        match c.dst {
            Loc::Mem(a) => {
                let o = (a - MEM_DST) as usize;
                mem_dst[o..o + n].copy_from_slice(&src);
            }
            Loc::Ls(s, off) => ls[s][off as usize..off as usize + n].copy_from_slice(&src),
        }
    }
    let tids = mix
        .programs
        .iter()
        .enumerate()
        .map(|(spe, p)| {
            let steps = p.clone();
            m.spawn_native(spe as u32, 0, 0, move |spu| run_program(spu, steps))
                .unwrap()
        })
        .collect();
    (
        Expected {
            ls,
            mem_src,
            mem_dst,
        },
        tids,
    )
}

/// First differing byte of two images, for a readable failure.
fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    if a == b {
        None
    } else {
        a.iter()
            .zip(b)
            .position(|(x, y)| x != y)
            .or(Some(a.len().min(b.len())))
    }
}

/// Compares every area byte for byte with the reference model.
pub fn check_data(m: &Machine, mix: &Mix, exp: &Expected) -> Result<(), String> {
    for spe in 0..mix.spes {
        let mut img = vec![0u8; (LS_END - LS_SRC) as usize];
        m.local_store(spe as u32)
            .unwrap()
            .read(LS_SRC as usize, &mut img);
        if let Some(i) = first_diff(&img, &exp.ls[spe][LS_SRC as usize..]) {
            let off = LS_SRC as usize + i;
            return Err(format!(
                "LS of SPE {spe} differs at 0x{off:x}: got {:#04x}, expected {:#04x}",
                img[i], exp.ls[spe][off]
            ));
        }
    }
    for (name, base, want) in [
        ("memory source", MEM_SRC, &exp.mem_src),
        ("memory destination", MEM_DST, &exp.mem_dst),
    ] {
        let mut got = vec![0u8; want.len()];
        m.memory().read(base as usize, &mut got);
        if let Some(i) = first_diff(&got, want) {
            return Err(format!(
                "{name} differs at 0x{:x}: got {:#04x}, expected {:#04x}",
                base as usize + i,
                got[i],
                want[i]
            ));
        }
    }
    Ok(())
}
