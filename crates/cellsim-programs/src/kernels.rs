//! Native benchmark programs: the SPE side of the experiments.
//!
//! Each kernel is the Rust twin of a Python program in `cellsim.kernels`
//! (same calls in the same order, hence the same simulated timing) and is
//! what the experiments run by default, because it is fast. Kernels report
//! like the papers' benchmarks did: elapsed decrementer ticks as the exit
//! value.

use cellsim_engine::memory_map::MemoryMap;
use cellsim_engine::program::Spu;
use cellsim_engine::{MfcCommand, Opcode};
use serde::Deserialize;

/// Direction of a DMA benchmark (from the benchmark's `put` flag, as the C
/// benchmarks and their Python twins take it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(from = "bool")]
pub enum Dir {
    /// `mfc_get`.
    Get,
    /// `mfc_put`.
    Put,
}

impl From<bool> for Dir {
    fn from(put: bool) -> Dir {
        if put {
            Dir::Put
        } else {
            Dir::Get
        }
    }
}

/// Parameters of [`dma_bench`].
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaBench {
    /// Get or put (`put`: true or false).
    #[serde(rename = "put")]
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

/// Kistler et al. 2006's basic DMA benchmark: `count` DMAs of `size` bytes to or from
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
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
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

impl Stream {
    /// SPE `s`'s part of the saturation load (the speed benchmark's): 16 KB
    /// gets from and puts to its partner's (SPE `s ^ 1`) local store.
    pub fn to_partner(s: u32, pairs: u32) -> Stream {
        let partner = MemoryMap::ls_ea(s ^ 1);
        Stream {
            get_ea: partner + 0x20000,
            put_ea: partner + 0x30000,
            size: 16384,
            pairs,
        }
    }
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
    // `for _ in 0..pairs { mfc_get(a, ...); mfc_put(b, ...) }`, declared as
    // a loop so that a steady state can span its commands.
    let cmd = |op, lsa, ea, tag| MfcCommand::single(op, lsa, ea, p.size, tag);
    let body = [
        cmd(Opcode::Get, a, p.get_ea, 0),
        cmd(Opcode::Put, b, p.put_ea, 1),
    ];
    spu.mfc_repeat(&body, p.pairs as u64).await;
    spu.mfc_read_tag_status_all().await;
    0
}

/// Most input (and output) streams of [`k_buffered_loop`].
pub const MAX_STREAMS: usize = 8;

/// Largest DMA; a block of a stream larger than this takes several.
const MAX_DMA: u32 = 16384;

/// One stream of [`k_buffered_loop`]: its array in memory and its element
/// size (a pair `[ea, size]` or a map).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopStream {
    /// Effective address of element 0.
    pub ea: u64,
    /// Bytes per element: 1, 2, 4 or 8.
    pub size: u32,
}

/// Parameters of [`k_buffered_loop`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KBufferedLoop {
    /// Iterations of the original loop.
    pub n: u32,
    /// Block factor: elements of every stream per block.
    pub bf: u32,
    /// Buffers per stream (one tag group each).
    pub k: u32,
    /// SPU cycles per inner iteration.
    pub c_inner: f64,
    /// SPU cycles per block (issuing its DMAs).
    pub c_outer: f64,
    /// Input streams (at most [`MAX_STREAMS`]).
    pub ins: Vec<LoopStream>,
    /// Output streams (at most [`MAX_STREAMS`]).
    pub outs: Vec<LoopStream>,
}

impl KBufferedLoop {
    /// The values the loop cannot run with.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [("n", self.n), ("bf", self.bf), ("k", self.k)] {
            if v == 0 {
                return Err(format!("{name} must be a positive integer, not 0"));
            }
        }
        if self.k > 32 {
            return Err(format!(
                "k = {} buffers need more than the 32 tag groups",
                self.k
            ));
        }
        let (ci, co) = (self.c_inner, self.c_outer);
        if !(ci >= 0.0 && co >= 0.0 && ci.is_finite() && co.is_finite()) {
            return Err(format!(
                "c_inner ({ci}) and c_outer ({co}) must be non-negative cycles"
            ));
        }
        for (name, list) in [("ins", &self.ins), ("outs", &self.outs)] {
            if list.len() > MAX_STREAMS {
                return Err(format!(
                    "{name}: at most {MAX_STREAMS} streams, not {}",
                    list.len()
                ));
            }
            for (s, st) in list.iter().enumerate() {
                if ![1, 2, 4, 8].contains(&st.size) {
                    return Err(format!(
                        "{name}[{s}] size must be 1, 2, 4 or 8 bytes, not {}",
                        st.size
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Cycles computed for a block of `m` elements: `round(c_inner * m + c_outer)`,
/// halves up (the Python twin rounds the same way).
fn block_cycles(p: &KBufferedLoop, m: u32) -> u64 {
    (p.c_inner * m as f64 + p.c_outer + 0.5).floor() as u64
}

/// The local-store port uses of a block of `m` elements: one per element of
/// each input (a quadword load) and two per element of each output (a
/// narrower store reads, merges and writes its quadword), as the SPU's
/// local-store loops count them (`cellsim_engine::ls_loop`). The Python twin
/// counts the same.
fn block_ls_accesses(p: &KBufferedLoop, m: u32) -> u64 {
    let per_element = p.ins.len() as u64
        + p.outs
            .iter()
            .map(|o| if o.size < 16 { 2 } else { 1 })
            .sum::<u64>();
    per_element * m as u64
}

/// `size` bytes between `ls` and `ea`, at most 16 KB per DMA, tagged `tag`.
async fn dma(spu: &Spu, put: bool, ls: u32, ea: u64, size: u32, tag: u32) {
    let mut off = 0;
    while off < size {
        let n = MAX_DMA.min(size - off);
        if put {
            spu.mfc_put(ls + off, ea + off as u64, n, tag).await;
        } else {
            spu.mfc_get(ls + off, ea + off as u64, n, tag).await;
        }
        off += n;
    }
}

/// Reads a big-endian unsigned integer of `size` bytes.
fn load_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

/// Writes the low `out.len()` bytes of `v`, big-endian.
fn store_be(out: &mut [u8], v: u64) {
    let n = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = (v >> (8 * (n - 1 - i))) as u8;
    }
}

/// Chen et al. 2006's streaming loop blocked by `bf` with `k` buffers per stream (its
/// Figure 2; `k = 2` is Figure 2(d)): `B_o[i] = A_1[i] + ... + A_m[i] + o`
/// on big-endian integers, truncated to each output's element size. Buffer
/// `t` of every stream uses tag `t`; block `j` lives in buffer `j % k`, and
/// the gets of block `j + k - 1` are issued before waiting for block `j`.
/// The twin of `cellsim.buffering.loop.k_buffered_loop`. Returns elapsed
/// decrementer ticks.
pub async fn k_buffered_loop(spu: Spu, p: KBufferedLoop) -> u32 {
    let (n, bf, k) = (p.n, p.bf, p.k);
    let blocks = n.div_ceil(bf);
    let mut t_a = [[0u32; 32]; MAX_STREAMS]; // tA[s][t]: buffer t of input s
    let mut t_b = [[0u32; 32]; MAX_STREAMS]; // tB[o][t]: buffer t of output o
    for (a, bufs) in p.ins.iter().zip(t_a.iter_mut()) {
        for ls in bufs.iter_mut().take(k as usize) {
            let Ok(x) = spu.ls_alloc(bf * a.size, 128) else {
                return u32::MAX;
            };
            *ls = x;
        }
    }
    for (b, bufs) in p.outs.iter().zip(t_b.iter_mut()) {
        for ls in bufs.iter_mut().take(k as usize) {
            let Ok(x) = spu.ls_alloc(bf * b.size, 128) else {
                return u32::MAX;
            };
            *ls = x;
        }
    }
    // DMA get A[j*bf : j*bf + m] to tA[t], tag = t
    let ins = &p.ins;
    let dma_get = |j: u32, t: u32| {
        let (spu, t_a) = (&spu, &t_a);
        async move {
            let m = bf.min(n - j * bf);
            for (s, a) in ins.iter().enumerate() {
                let ea = a.ea + (j * bf) as u64 * a.size as u64;
                dma(spu, false, t_a[s][t as usize], ea, m * a.size, t).await;
            }
        }
    };

    spu.spu_write_decrementer(u32::MAX).await;
    let start = spu.spu_read_decrementer().await;
    for j in 0..(k - 1).min(blocks) {
        // prologue: the first k - 1 blocks
        dma_get(j, j % k).await;
    }
    let mut acc = vec![0u64; bf as usize];
    let mut bytes = vec![0u8; (bf * 8) as usize];
    for j in 0..blocks {
        if j + k - 1 < blocks {
            dma_get(j + k - 1, (j + k - 1) % k).await;
        }
        let t = j % k;
        spu.mfc_write_tag_mask(1 << t).await; // DMA wait, tag = t
        spu.mfc_read_tag_status_all().await;
        let m = bf.min(n - j * bf);
        let cycles = block_cycles(&p, m);
        if cycles > 0 {
            spu.compute_ls(cycles, block_ls_accesses(&p, m)).await;
        }
        // for (i = 0; i < m; i++) tB[o][t][i] = A_1[i] + ... + A_m[i] + o
        let acc = &mut acc[..m as usize];
        acc.fill(0);
        for (s, a) in p.ins.iter().enumerate() {
            let e = a.size as usize;
            let buf = &mut bytes[..m as usize * e];
            spu.ls_read(t_a[s][t as usize], buf);
            for (x, el) in acc.iter_mut().zip(buf.chunks_exact(e)) {
                *x = x.wrapping_add(load_be(el));
            }
        }
        for (o, b) in p.outs.iter().enumerate() {
            let e = b.size as usize;
            let buf = &mut bytes[..m as usize * e];
            for (x, el) in acc.iter().zip(buf.chunks_exact_mut(e)) {
                store_be(el, x.wrapping_add(o as u64));
            }
            spu.ls_write(t_b[o][t as usize], buf);
        }
        // DMA put tB[t] to B[j*bf : j*bf + m], tag = t
        for (o, b) in p.outs.iter().enumerate() {
            let ea = b.ea + (j * bf) as u64 * b.size as u64;
            dma(&spu, true, t_b[o][t as usize], ea, m * b.size, t).await;
        }
    }
    spu.mfc_write_tag_mask(((1u64 << k) - 1) as u32).await; // DMA wait, every tag
    spu.mfc_read_tag_status_all().await;
    let end = spu.spu_read_decrementer().await;
    start.wrapping_sub(end)
}

#[cfg(test)]
mod tests {
    use crate::program::{spawn_after, Program};
    use cellsim_engine::{Machine, MachineConfig};
    use serde_json::{json, Value};

    fn params(n: u32, bf: u32, k: u32, ins: &[(u64, u32)], outs: &[(u64, u32)]) -> Value {
        json!({"kind": "k_buffered_loop", "n": n, "bf": bf, "k": k, "c_inner": 2.5,
               "c_outer": 100.0, "ins": ins, "outs": outs})
    }

    /// B[i] = A1[i] + A2[i] on big-endian 8-byte integers, for 1 to 4 buffers
    /// and a partial last block; more buffers never take longer.
    #[test]
    fn k_buffered_loop_adds_the_streams() {
        let n = 1000u32;
        let mut last = u64::MAX;
        for k in 1..=4 {
            let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
            let (a1, a2, b) = (
                m.alloc(8 * n as u64, 128).unwrap(),
                m.alloc(8 * n as u64, 128).unwrap(),
                m.alloc(8 * n as u64, 128).unwrap(),
            );
            for i in 0..n as u64 {
                let x = u64::MAX - i;
                m.memory().write((a1 + 8 * i) as usize, &x.to_be_bytes());
                m.memory()
                    .write((a2 + 8 * i) as usize, &(3 * i).to_be_bytes());
            }
            let p = Program::from_value(params(n, 96, k, &[(a1, 8), (a2, 8)], &[(b, 8)])).unwrap();
            spawn_after(&mut m, 0, p, 0).unwrap();
            let summary = m.run().unwrap();
            for i in 0..n as u64 {
                let mut out = [0u8; 8];
                m.memory().read((b + 8 * i) as usize, &mut out);
                assert_eq!(
                    u64::from_be_bytes(out),
                    (u64::MAX - i).wrapping_add(3 * i),
                    "k {k} i {i}"
                );
            }
            assert!(summary.cycles <= last, "k = {k} took longer than k - 1");
            last = summary.cycles;
        }
    }

    #[test]
    fn k_buffered_loop_rejects_bad_parameters() {
        let mut p = params(64, 16, 2, &[(0x10000, 8)], &[(0x20000, 8)]);
        p.as_object_mut().unwrap().remove("outs");
        let e = Program::from_value(p).unwrap_err().to_string();
        assert!(e.contains("missing field `outs`"), "{e}");
        for (key, v, want) in [
            ("k", json!(33), "k = 33 buffers"),
            ("bf", json!(0), "bf must be a positive integer, not 0"),
            (
                "ins",
                json!(vec![[0, 8]; 9]),
                "ins: at most 8 streams, not 9",
            ),
            (
                "ins",
                json!([[0, 3]]),
                "ins[0] size must be 1, 2, 4 or 8 bytes, not 3",
            ),
            ("c_inner", json!(-1.0), "must be non-negative cycles"),
        ] {
            let mut p = params(64, 16, 2, &[(0x10000, 8)], &[(0x20000, 8)]);
            p[key] = v;
            let e = Program::from_value(p).unwrap_err().to_string();
            assert!(e.contains(want), "{key}: {e}");
        }
    }
}
