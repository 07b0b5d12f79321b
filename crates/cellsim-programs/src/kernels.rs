//! Native benchmark programs: the SPE side of the experiments.
//!
//! Each kernel is the Rust twin of a Python program in `cellsim.kernels`
//! (same calls in the same order, hence the same simulated timing) and is
//! what the experiments run by default, because it is fast. Kernels report
//! like the papers' benchmarks did: elapsed decrementer ticks as the exit
//! value.

use cellsim_engine::error::SimError;
use cellsim_engine::machine::{Machine, ThreadId};
use cellsim_engine::program::Spu;
use cellsim_engine::{MfcCommand, Opcode};

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
    // `for _ in 0..pairs { mfc_get(a, ...); mfc_put(b, ...) }`, declared as
    // a loop so that a steady state can span its commands.
    let cmd = |op, lsa, ea, tag| MfcCommand {
        op,
        lsa,
        ea,
        size: p.size,
        tag,
        list: 0,
    };
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

/// One stream of [`k_buffered_loop`]: its array in memory and its element size.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopStream {
    /// Effective address of element 0.
    pub ea: u64,
    /// Bytes per element: 1, 2, 4 or 8.
    pub size: u32,
}

/// Parameters of [`k_buffered_loop`].
#[derive(Debug, Clone, Copy)]
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
    /// Input streams in use.
    pub n_in: usize,
    /// Output streams in use.
    pub n_out: usize,
    /// Input streams (`n_in` of them).
    pub ins: [LoopStream; MAX_STREAMS],
    /// Output streams (`n_out` of them).
    pub outs: [LoopStream; MAX_STREAMS],
}

/// Cycles computed for a block of `m` elements: `round(c_inner * m + c_outer)`,
/// halves up (the Python twin rounds the same way).
fn block_cycles(p: &KBufferedLoop, m: u32) -> u64 {
    (p.c_inner * m as f64 + p.c_outer + 0.5).floor() as u64
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

/// Seed 004's streaming loop blocked by `bf` with `k` buffers per stream (its
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
    for (a, bufs) in p.ins[..p.n_in].iter().zip(t_a.iter_mut()) {
        for ls in bufs.iter_mut().take(k as usize) {
            let Ok(x) = spu.ls_alloc(bf * a.size, 128) else {
                return u32::MAX;
            };
            *ls = x;
        }
    }
    for (b, bufs) in p.outs[..p.n_out].iter().zip(t_b.iter_mut()) {
        for ls in bufs.iter_mut().take(k as usize) {
            let Ok(x) = spu.ls_alloc(bf * b.size, 128) else {
                return u32::MAX;
            };
            *ls = x;
        }
    }
    // DMA get A[j*bf : j*bf + m] to tA[t], tag = t
    let dma_get = |j: u32, t: u32| {
        let (spu, t_a) = (&spu, &t_a);
        async move {
            let m = bf.min(n - j * bf);
            for (s, a) in p.ins[..p.n_in].iter().enumerate() {
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
            spu.compute(cycles).await;
        }
        // for (i = 0; i < m; i++) tB[o][t][i] = A_1[i] + ... + A_m[i] + o
        let acc = &mut acc[..m as usize];
        acc.fill(0);
        for (s, a) in p.ins[..p.n_in].iter().enumerate() {
            let e = a.size as usize;
            let buf = &mut bytes[..m as usize * e];
            spu.ls_read(t_a[s][t as usize], buf);
            for (x, el) in acc.iter_mut().zip(buf.chunks_exact(e)) {
                *x = x.wrapping_add(load_be(el));
            }
        }
        for (o, b) in p.outs[..p.n_out].iter().enumerate() {
            let e = b.size as usize;
            let buf = &mut bytes[..m as usize * e];
            for (x, el) in acc.iter().zip(buf.chunks_exact_mut(e)) {
                store_be(el, x.wrapping_add(o as u64));
            }
            spu.ls_write(t_b[o][t as usize], buf);
        }
        // DMA put tB[t] to B[j*bf : j*bf + m], tag = t
        for (o, b) in p.outs[..p.n_out].iter().enumerate() {
            let ea = b.ea + (j * bf) as u64 * b.size as u64;
            dma(&spu, true, t_b[o][t as usize], ea, m * b.size, t).await;
        }
    }
    spu.mfc_write_tag_mask(((1u64 << k) - 1) as u32).await; // DMA wait, every tag
    spu.mfc_read_tag_status_all().await;
    let end = spu.spu_read_decrementer().await;
    start.wrapping_sub(end)
}

/// Names of the kernels [`spawn`] knows.
pub const NAMES: &[&str] = &["dma_bench", "stream", "k_buffered_loop"];

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
    delay: cellsim_engine::time::Cycle,
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
        "k_buffered_loop" => {
            let p = k_buffered_loop_params(&get)?;
            m.spawn_native_after(spe, 0, 0, delay, move |spu| k_buffered_loop(spu, p))
        }
        _ => Err(SimError::Usage(format!(
            "unknown kernel '{name}': known kernels are {}",
            NAMES.join(", ")
        ))),
    }
}

/// Reads and checks the parameters of [`k_buffered_loop`]: `n`, `bf`, `k`,
/// `c_inner`, `c_outer` (cycles), `n_in`, `n_out`, and `in{s}_ea`,
/// `in{s}_size`, `out{o}_ea`, `out{o}_size` for each stream.
fn k_buffered_loop_params(
    get: &dyn Fn(&str) -> Result<f64, SimError>,
) -> Result<KBufferedLoop, SimError> {
    let bad = |what: String| SimError::Usage(format!("kernel k_buffered_loop: {what}"));
    let count = |k: &str| -> Result<u32, SimError> {
        let v = get(k)?;
        if v.fract() != 0.0 || !(1.0..=u32::MAX as f64).contains(&v) {
            return Err(bad(format!("{k} must be a positive integer, not {v}")));
        }
        Ok(v as u32)
    };
    let streams = |k: &str| -> Result<usize, SimError> {
        let v = get(k)?;
        if v.fract() != 0.0 || !(0.0..=MAX_STREAMS as f64).contains(&v) {
            return Err(bad(format!("{k} must be 0 to {MAX_STREAMS}, not {v}")));
        }
        Ok(v as usize)
    };
    let (n, bf, k) = (count("n")?, count("bf")?, count("k")?);
    if k > 32 {
        return Err(bad(format!(
            "k = {k} buffers need more than the 32 tag groups"
        )));
    }
    let (c_inner, c_outer) = (get("c_inner")?, get("c_outer")?);
    if !(c_inner >= 0.0 && c_outer >= 0.0 && c_inner.is_finite() && c_outer.is_finite()) {
        return Err(bad(format!(
            "c_inner ({c_inner}) and c_outer ({c_outer}) must be non-negative cycles"
        )));
    }
    let mut p = KBufferedLoop {
        n,
        bf,
        k,
        c_inner,
        c_outer,
        n_in: streams("n_in")?,
        n_out: streams("n_out")?,
        ins: [LoopStream::default(); MAX_STREAMS],
        outs: [LoopStream::default(); MAX_STREAMS],
    };
    for (prefix, count, list) in [("in", p.n_in, &mut p.ins), ("out", p.n_out, &mut p.outs)] {
        for (s, st) in list.iter_mut().enumerate().take(count) {
            let size = get(&format!("{prefix}{s}_size"))?;
            if ![1.0, 2.0, 4.0, 8.0].contains(&size) {
                return Err(bad(format!(
                    "{prefix}{s}_size must be 1, 2, 4 or 8 bytes, not {size}"
                )));
            }
            *st = LoopStream {
                ea: get(&format!("{prefix}{s}_ea"))? as u64,
                size: size as u32,
            };
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellsim_engine::MachineConfig;

    fn params(
        n: u32,
        bf: u32,
        k: u32,
        ins: &[(u64, u32)],
        outs: &[(u64, u32)],
    ) -> Vec<(String, f64)> {
        let mut p = vec![
            ("n".to_string(), n as f64),
            ("bf".to_string(), bf as f64),
            ("k".to_string(), k as f64),
            ("c_inner".to_string(), 2.5),
            ("c_outer".to_string(), 100.0),
            ("n_in".to_string(), ins.len() as f64),
            ("n_out".to_string(), outs.len() as f64),
        ];
        for (prefix, list) in [("in", ins), ("out", outs)] {
            for (s, &(ea, size)) in list.iter().enumerate() {
                p.push((format!("{prefix}{s}_ea"), ea as f64));
                p.push((format!("{prefix}{s}_size"), size as f64));
            }
        }
        p
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
            let p = params(n, 96, k, &[(a1, 8), (a2, 8)], &[(b, 8)]);
            spawn(&mut m, 0, "k_buffered_loop", &p).unwrap();
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
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
        let mut p = params(64, 16, 2, &[(0x10000, 8)], &[(0x20000, 8)]);
        p.retain(|(k, _)| k != "out0_size");
        let e = spawn(&mut m, 0, "k_buffered_loop", &p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs parameter 'out0_size'"), "{e}");
        for (key, v, want) in [
            ("k", 33.0, "k = 33 buffers"),
            ("bf", 0.0, "bf must be a positive integer, not 0"),
            ("n_in", 9.0, "n_in must be 0 to 8, not 9"),
            (
                "in0_size",
                3.0,
                "in0_size must be 1, 2, 4 or 8 bytes, not 3",
            ),
            ("c_inner", -1.0, "must be non-negative cycles"),
        ] {
            let mut p = params(64, 16, 2, &[(0x10000, 8)], &[(0x20000, 8)]);
            p.iter_mut().find(|(k, _)| k == key).unwrap().1 = v;
            let e = spawn(&mut m, 0, "k_buffered_loop", &p)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{key}: {e}");
        }
    }
}
