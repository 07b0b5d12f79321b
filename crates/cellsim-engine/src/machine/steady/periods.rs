//! Periods: the byte moves a recording logs (at the coherence point and on
//! landing, with the request as it was), and their replay `K` times at
//! advancing addresses after a jump.

use super::*;
use crate::bus::{BusOp, OpId, OpKind, Owner, Space};
use crate::storage::Storage;

/// A byte move of the recorded period: at the coherence point or on landing,
/// with the request (its serial number) as it was.
#[derive(Clone, Copy)]
pub(in crate::machine) enum DataMove {
    Coherence(u32, BusOp),
    Land(u32, BusOp),
}

/// A logged byte move: what a replay needs of its request, as it was then.
#[derive(Clone, Copy)]
pub(in crate::machine) struct Move {
    /// The request's serial number in the recording.
    serial: u32,
    /// At the coherence point, or on landing.
    coherence: bool,
    kind: OpKind,
    /// The owning MFC's SPE, slot and queue.
    spe: u8,
    slot: u8,
    proxy: bool,
    size: u32,
    lsa: u32,
    remote: Space,
}

impl Move {
    pub(super) fn owner(&self) -> Owner {
        Owner::Mfc {
            spe: self.spe,
            slot: self.slot,
            proxy: self.proxy,
        }
    }

    /// The move `d` bytes further along its command.
    pub(super) fn advanced(mut self, d: u64) -> Move {
        self.lsa += d as u32;
        self.remote = moved_by(self.remote, d);
        self
    }
}

/// The moves of a period to replay: serial numbers as if the recording
/// had started with it (its live requests first, in the order of its
/// shape, then those created since), the serial numbers of the requests
/// alive at its end, and how many requests it has met.
pub(in crate::machine) struct Period {
    moves: Vec<Move>,
    survivors: Vec<usize>,
    serials: usize,
}

/// A request the recording can replay: an MFC's, no atomic, between a local
/// store and a local store or memory, on one chip.
pub(in crate::machine) fn plain(op: &BusOp) -> bool {
    matches!(op.owner, Owner::Mfc { .. })
        && op.atomic.is_none()
        && !op.failed
        && matches!(op.remote, Space::Memory(_) | Space::Ls { .. })
}

/// The bytes a logged move writes: store (0: memory, 1 + n: SPE n's local
/// store), first byte, bytes.
fn written(mv: &Move) -> Option<(u64, u64, u32)> {
    let at = match (mv.kind, mv.coherence, mv.remote) {
        (OpKind::Read, false, _) => (mv.spe as u64 + 1, mv.lsa as u64),
        (OpKind::Write, false, Space::Ls { spe, offset }) => (spe as u64 + 1, offset as u64),
        (OpKind::Write, true, Space::Memory(a)) => (0, a),
        _ => return None,
    };
    Some((at.0, at.1, mv.size))
}

/// Whether every byte range of `carried` (moves of `moves` by index, with
/// the bytes each writes, in order) is written again, same bytes, by a
/// later move not in `carried`.
fn overwritten(moves: &[Move], carried: &[(usize, (u64, u64, u32))]) -> bool {
    let mut ranges: Vec<_> = carried.iter().map(|&(_, to)| to).collect();
    ranges.sort_unstable();
    ranges.dedup();
    // (A filter in front of the search: most moves write elsewhere.)
    let bit = |to: &(u64, u64, u32)| (to.0.wrapping_mul(0x9E37) ^ to.1 >> 7) as usize % 4096;
    let mut filter = [false; 4096];
    ranges.iter().for_each(|to| filter[bit(to)] = true);
    let mut over = vec![false; ranges.len()];
    let mut next = carried.iter().peekable();
    for (i, mv) in moves.iter().enumerate().skip(carried[0].0) {
        let Some(to) = written(mv) else {
            continue;
        };
        if !filter[bit(&to)] {
            continue;
        }
        let Ok(r) = ranges.binary_search(&to) else {
            continue;
        };
        if next.peek().is_some_and(|&&(j, _)| j == i) {
            next.next();
            over[r] = false;
        } else {
            over[r] = true;
        }
    }
    over.iter().all(|&o| o)
}

pub(in crate::machine) fn moved_by(s: Space, d: u64) -> Space {
    match s {
        Space::Memory(a) => Space::Memory(a + d),
        Space::Ls { spe, offset } => Space::Ls {
            spe,
            offset: offset + d as u32,
        },
        other => other,
    }
}

pub(in crate::machine) fn address(s: Space) -> u64 {
    match s {
        Space::Memory(a) => a,
        Space::Ls { offset, .. } => offset as u64,
        _ => 0,
    }
}

impl FastForward {
    /// A request was created while recording: it gets the next serial number.
    #[inline]
    pub(in crate::machine) fn created(&mut self, id: OpId) {
        let i = id as usize;
        if self.serial.len() <= i {
            self.serial.resize(i + 1, 0);
        }
        self.serial[i] = self.next_serial;
        self.next_serial += 1;
    }

    /// A byte move while recording.
    #[inline]
    pub(in crate::machine) fn moved(&mut self, m: DataMove) {
        let (coherence, serial, op) = match m {
            DataMove::Coherence(s, op) => (true, s, op),
            DataMove::Land(s, op) => (false, s, op),
        };
        let (spe, slot, proxy) = match op.owner {
            Owner::Mfc { spe, slot, proxy } => (spe, slot, proxy),
            _ => (0, 0, false),
        };
        self.log.push(Move {
            serial,
            coherence,
            kind: op.kind,
            spe,
            slot,
            proxy,
            size: op.size,
            lsa: op.lsa,
            remote: op.remote,
        });
        if !plain(&op) {
            self.taint = self.log.len();
        }
    }
}

impl Machine {
    /// The moves logged since kept look `a` (see [`Period`]); `live`: the
    /// requests alive now.
    pub(super) fn period_since(&self, a: &Armed, live: &[OpId]) -> Period {
        let ff = &self.ff;
        let m = a.serials.len() as u32;
        let first: std::collections::HashMap<u32, u32> = a
            .serials
            .iter()
            .enumerate()
            .map(|(c, &g)| (g, c as u32))
            .collect();
        // (A request met since `a` was alive then or created since.)
        let local = |g: u32| {
            if g >= a.base {
                m + (g - a.base)
            } else {
                first[&g]
            }
        };
        Period {
            moves: ff.log[a.log_at..]
                .iter()
                .map(|mv| Move {
                    serial: local(mv.serial),
                    ..*mv
                })
                .collect(),
            survivors: live
                .iter()
                .map(|&id| local(ff.serial[id as usize]) as usize)
                .collect(),
            serials: (m + (ff.next_serial - a.base)) as usize,
        }
    }

    /// Replays the recorded byte moves `k` times, each time a period further
    /// along every command; the requests alive now (`live`, by name) end
    /// with the bytes they would have staged.
    ///
    /// Staged lines live in a pool indexed through `line_of` (per serial
    /// number of the recording): a period's requests alive at its start use
    /// the lines of the previous period's survivors, the others free lines,
    /// so no line is copied between periods.
    pub(super) fn replay(
        &mut self,
        k: u64,
        rec: &Period,
        live: &[OpId],
        advance_of: &impl Fn(Owner) -> u64,
    ) {
        let n = rec.serials;
        let m = live.len();
        let mut pool = std::mem::take(&mut self.ff.lines);
        pool.resize(n.max(m), [0; 128]);
        // The survivors' serial numbers, by name.
        let survivors = &rec.survivors;
        let moves: Vec<(Move, u64)> = rec
            .moves
            .iter()
            .map(|mv| (*mv, advance_of(mv.owner())))
            .collect();
        let mut cur: Vec<usize> = (0..m).collect();
        for (c, &id) in live.iter().enumerate() {
            pool[c] = self.staging[id as usize];
        }
        let mut line_of = vec![0usize; n.max(m)];
        let mut taken = vec![false; pool.len()];
        for j in 1..=k {
            taken.iter_mut().for_each(|t| *t = false);
            for c in 0..m {
                line_of[c] = cur[c];
                taken[cur[c]] = true;
            }
            let mut free = (0..pool.len()).filter(|&i| !taken[i]);
            for l in line_of.iter_mut().take(n).skip(m) {
                *l = free.next().expect("a pool of one line per serial number");
            }
            for &(op, d) in &moves {
                let op = op.advanced(j * d);
                let line = &mut pool[line_of[op.serial as usize]];
                if op.coherence {
                    self.coherence_bytes(&op, line);
                } else {
                    self.land_bytes(&op, line);
                }
            }
            for c in 0..m {
                cur[c] = line_of[survivors[c]];
            }
        }
        for (c, &id) in live.iter().enumerate() {
            self.staging[id as usize] = pool[cur[c]];
        }
        self.ff.lines = pool;
    }

    /// Whether replaying a fixed period that reads no byte it writes (see
    /// `jump`) after the one simulated, from kept look `a`, would change
    /// nothing: each of its moves reads what the simulated one read (bytes
    /// nothing wrote since) and writes it where it wrote it, in the same
    /// order, except the landings of bytes read before the period (a
    /// replay lands those of the request now in its place), which must
    /// each be overwritten later in the period, same bytes; and the
    /// requests alive across it (`live`: now) that staged nothing in it
    /// must hold what the replay would leave them, the line of the request
    /// now in their place.
    pub(super) fn replay_is_void(&self, a: &Armed, moves: &[Move], live: &[OpId]) -> bool {
        let ff = &self.ff;
        let first: std::collections::HashMap<u32, usize> =
            a.serials.iter().enumerate().map(|(c, &g)| (g, c)).collect();
        // Per request alive at `a`: it met the coherence point, it staged a line.
        let mut met = vec![false; a.serials.len()];
        let mut staged = vec![false; a.serials.len()];
        // The landings of bytes read before the period: (move, bytes).
        let mut carried = Vec::new();
        for (i, mv) in moves.iter().enumerate() {
            if mv.serial >= a.base {
                continue;
            }
            let c = first[&mv.serial];
            let lands = matches!(
                (mv.kind, mv.remote),
                (OpKind::Read, _) | (OpKind::Write, Space::Ls { .. })
            );
            if mv.coherence {
                met[c] = true;
                staged[c] = lands;
            } else if lands && !met[c] {
                carried.extend(written(mv).map(|to| (i, to)));
            }
        }
        if !carried.is_empty() && !overwritten(moves, &carried) {
            return false;
        }
        live.iter().all(|&id| {
            let g = ff.serial[id as usize];
            if g >= a.base {
                return true;
            }
            let c = first[&g];
            staged[c] || self.staging[id as usize] == self.staging[live[c] as usize]
        })
    }

    /// Whether a byte some recorded move reads may be written by one: by
    /// 128-byte lines, which may say yes where no byte is both (the replay
    /// is then made `k` times, which is always right). Linear in the
    /// period's moves: a bitmap of the local stores' lines, a set of
    /// memory's.
    pub(super) fn reads_what_it_writes(&self, moves: &[Move]) -> bool {
        // (store, first byte): store 0 is memory, 1 + n SPE n's local store.
        let ls = |spe: u8| spe as u64 + 1;
        let ends = |op: &Move| {
            let remote = match op.remote {
                Space::Memory(a) => (0, a),
                Space::Ls { spe, offset } => (ls(spe), offset as u64),
                _ => return None,
            };
            let local = (ls(op.spe), op.lsa as u64);
            // (What it reads, what it writes.)
            Some(match (op.kind, op.coherence) {
                (OpKind::Read, true) => (Some(remote), None),
                (OpKind::Read, false) => (None, Some(local)),
                (OpKind::Write, true) if remote.0 == 0 => (Some(local), Some(remote)),
                (OpKind::Write, true) => (Some(local), None),
                (OpKind::Write, false) if remote.0 != 0 => (None, Some(remote)),
                _ => (None, None),
            })
        };
        if moves.iter().any(|op| ends(op).is_none()) {
            return true;
        }
        let lines = |a: u64, n: u64| (a >> 7)..=((a + n.max(1) - 1) >> 7);
        let per_ls = self
            .spes
            .first()
            .map_or(0, |u| u.ls.len() as u64)
            .div_ceil(128);
        let mut ls_lines = vec![false; self.spes.len() * per_ls as usize];
        let mut memory_lines = std::collections::HashSet::new();
        // (Local-store addresses wrap round.)
        let index = |s: u64, line: u64| ((s - 1) * per_ls + line % per_ls) as usize;
        for op in moves {
            let Some((_, Some((s, a)))) = ends(op) else {
                continue;
            };
            for line in lines(a, op.size as u64) {
                if s == 0 {
                    memory_lines.insert(line);
                } else {
                    ls_lines[index(s, line)] = true;
                }
            }
        }
        moves.iter().any(|op| {
            let Some((Some((s, a)), _)) = ends(op) else {
                return false;
            };
            lines(a, op.size as u64).any(|line| {
                if s == 0 {
                    memory_lines.contains(&line)
                } else {
                    ls_lines[index(s, line)]
                }
            })
        })
    }

    /// The byte moves of [`Machine::coherence_point`] for a plain request.
    pub(super) fn coherence_bytes(&mut self, op: &Move, line: &mut [u8; 128]) {
        let n = op.size as usize;
        let p = op.spe;
        match (op.kind, op.remote) {
            (OpKind::Read, Space::Memory(a)) => {
                crate::machine::dma::read_into(&self.memory, a as usize, line, n)
            }
            (OpKind::Read, Space::Ls { spe, offset }) => crate::machine::dma::read_into(
                &self.spes[spe as usize].ls,
                offset as usize,
                line,
                n,
            ),
            (OpKind::Write, Space::Memory(a)) => {
                let ls = &self.spes[p as usize].ls;
                Storage::copy(ls, op.lsa as usize, &self.memory, a as usize, n);
                self.reservations.written(a, n as u64);
                self.ppu.snoop_write(a, n as u64);
            }
            (OpKind::Write, Space::Ls { .. }) => {
                crate::machine::dma::read_into(&self.spes[p as usize].ls, op.lsa as usize, line, n)
            }
            _ => {}
        }
    }

    /// The byte moves of [`Machine::land`] for a plain request.
    pub(super) fn land_bytes(&self, op: &Move, line: &[u8; 128]) {
        let n = op.size as usize;
        match (op.kind, op.remote) {
            (OpKind::Read, _) => crate::machine::dma::write_from(
                &self.spes[op.spe as usize].ls,
                op.lsa as usize,
                line,
                n,
            ),
            (OpKind::Write, Space::Ls { spe, offset }) => crate::machine::dma::write_from(
                &self.spes[spe as usize].ls,
                offset as usize,
                line,
                n,
            ),
            _ => {}
        }
    }
}
