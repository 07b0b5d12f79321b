//! The jump: a look's state came back; check that every command advanced by
//! whole lines and nothing outside the shape falls within, then move every
//! part `K` periods on (progress, counters, times: each part's `shift`).

use super::periods::{address, moved_by};
use super::*;

use crate::bus::{Owner, Space};
use crate::eib::EibStats;
use crate::mic::MicStats;
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::time::Cycle;

/// Every counter a period advances.
#[derive(Clone)]
pub(in crate::machine) struct Totals {
    counters: Counters,
    chips: Vec<ChipTotals>,
    mics: Vec<MicStats>,
    /// Per BIF direction: bytes carried and busy cycles.
    links: Vec<(u64, Cycle)>,
}

/// A chip's bus counters.
#[derive(Clone)]
pub(in crate::machine) struct ChipTotals {
    eib: EibStats,
    rounds: u64,
    attempts: u64,
    accepted: u64,
}

impl Machine {
    /// Jumps from kept look `i` to now if the state came back; after a jump
    /// the next look starts a new state at the new time.
    pub(super) fn jump_from(
        &mut self,
        i: usize,
        shape: &Shape,
        progress: &[Progress],
        boundary: Cycle,
        limit: Cycle,
    ) -> bool {
        let snaps = std::mem::take(&mut self.ff.snaps);
        let issued = self.ff.stats.commands;
        let ok = self.jump(&snaps[i], shape, progress, boundary, limit);
        if !ok {
            self.ff.snaps = snaps;
            return false;
        }
        let ff = &mut self.ff;
        ff.disarm();
        ff.jumped = true;
        if ff.stats.commands > issued {
            // The looks remembered are whole periods behind along the
            // state's orbit: a distance to them is no longer one period.
            ff.history.clear();
            ff.spacing = ff.floor;
            ff.misses = 0;
        }
        // (Else the jump stopped at a command's end, within the state: its
        // looks go on as they were, towards a period spanning retirements.)
        true
    }

    /// The state at `armed.at` came back at `now`: jumps whole periods.
    pub(super) fn jump(
        &mut self,
        armed: &Armed,
        shape: &Shape,
        progress: &[Progress],
        boundary: Cycle,
        limit: Cycle,
    ) -> bool {
        let now = self.now;
        let period = now - armed.at;
        if period == 0 {
            return false;
        }
        // Each command's advance per period, in whole lines, with a line
        // beyond the jump left to unroll.
        let key =
            |p: u8, proxy: bool, slot: u8| (p as usize * 2 + proxy as usize) * 256 + slot as usize;
        let mut advance = vec![0u64; self.spes.len() * 2 * 256];
        // Entries holding another command than at the start: one that
        // entered the queue in the period (its predecessors retired). The
        // period starts from the same state for it each time, so it must
        // have got exactly as far.
        let mut replaced = vec![false; self.spes.len() * 2 * 256];
        let mut k_max = u64::MAX;
        if progress.len() != armed.dones.len() {
            return false;
        }
        let latencies = self.dma_latencies.is_some();
        for (was, is) in armed.dones.iter().zip(progress) {
            let (p, proxy, slot) = (is.spe, is.proxy, is.slot);
            let (done_a, done_b) = (was.done, is.done);
            // Entries of the same rank in the same queue (their slots may differ).
            if (was.spe, was.proxy) != (p, proxy) {
                return false;
            }
            if was.seq != is.seq {
                // (With latencies recorded, its history must be the same too.)
                let history = |x: &Progress| (x.issued, x.started);
                if done_a != done_b || latencies && history(was) != history(is) {
                    return false;
                }
                replaced[key(p, proxy, slot)] = true;
                continue;
            }
            if done_b < done_a {
                return false;
            }
            let d = (done_b - done_a) as u64;
            if !d.is_multiple_of(128) {
                return false;
            }
            if d > 0 {
                let q = &self.spes[p as usize].mfc;
                let e = if proxy {
                    q.proxy.get(slot)
                } else {
                    q.queue.get(slot)
                };
                // Stop a line short of the end of the segment, or of the
                // first page of its memory on another node.
                let mut end = match e.seg.remote {
                    Space::Memory(base) => {
                        self.same_node_until(base + done_a as u64, base + e.seg.size as u64) - base
                    }
                    _ => e.seg.size as u64,
                };
                if q.tlb.is_some() {
                    // Nor may it reach a page the DMAC would translate.
                    let shift = match e.seg.remote {
                        Space::Memory(base) => self.numa.page_shift_of(base + done_b as u64),
                        _ => self.numa.page_shift(),
                    };
                    end = end.min((e.page << shift).saturating_sub(e.seg.ea));
                }
                let left = end.saturating_sub(done_b as u64);
                if left < 128 + d {
                    return false;
                }
                k_max = k_max.min((left - 128) / d);
            }
            advance[key(p, proxy, slot)] = d;
        }
        // Commands issued per queue, and by each declared loop, per period.
        let issued: Vec<u64> = self
            .next_seqs()
            .iter()
            .zip(&armed.seqs)
            .map(|(b, a)| b - a)
            .collect();
        let mut used = vec![0u64; self.threads.len()];
        if armed.scripts.len() != self.threads.len() {
            return false;
        }
        for (i, (t, &a)) in self.threads.iter().zip(&armed.scripts).enumerate() {
            match (a, t.script.map(|x| x.left)) {
                (None, None) => {}
                (Some(a), Some(b)) if b <= a => {
                    let c = a - b;
                    if c > 0 {
                        // The loop must not end within the jump (its
                        // program's code runs then): every take of the k
                        // periods succeeds, as in the recorded one, when at
                        // least one command is left after them.
                        if b < c + 1 {
                            return false;
                        }
                        k_max = k_max.min((b - 1) / c);
                    }
                    used[i] = c;
                }
                _ => return false,
            }
        }
        let turnover = replaced.iter().any(|&r| r)
            || issued.iter().any(|&n| n > 0)
            || used.iter().any(|&c| c > 0);
        if turnover && latencies {
            // Commands waiting to enter a queue: their issue cycles too,
            // unless it is the same command, waiting since before the
            // period (its thread issued nothing since): it is recorded
            // when it retires, after the jump, from its issue cycle, which
            // a jump keeps.
            for ((t, &w), &c) in self.threads.iter().zip(&armed.pending).zip(&used) {
                let v = t.pending.map(|p| now - p.issued_at);
                let waiting = c == 0 && matches!((w, v), (Some(a), Some(b)) if b == a + period);
                if v != w && !waiting {
                    return false;
                }
            }
        }
        let advance_of = |owner: Owner| -> u64 {
            match owner {
                Owner::Mfc { spe, slot, proxy } => advance[key(spe, proxy, slot)],
                _ => 0,
            }
        };
        // The requests alive now are those alive then, each a period further on.
        if shape.ops.len() != armed.ops.len() {
            return false;
        }
        for (&id, &(_, lsa, remote)) in shape.ops.iter().zip(&armed.ops) {
            let op = self.ops[id];
            let d = advance_of(op.owner);
            if op.lsa as u64 != lsa as u64 + d || address(op.remote) != address(remote) + d {
                return false;
            }
        }
        // Nothing outside the shape may fall within the jump or the period after it.
        let ahead = shape.horizon - now + period;
        let room = boundary.min(limit).saturating_sub(now + ahead);
        k_max = k_max.min(room / period);
        let t0 = self.totals();
        let memory = t0
            .mics
            .iter()
            .zip(&armed.totals.mics)
            .any(|(a, b)| a.reads != b.reads || a.writes != b.writes)
            || shape
                .ops
                .iter()
                .any(|&id| matches!(self.ops[id].remote, Space::Memory(_)));
        if memory {
            // No DRAM access from the recorded period to the end of the jump
            // may meet a refresh: they all fall after the recording's start
            // and before the latest time in the state, `ahead` of the end.
            let from = armed.at;
            let meets = |k: u64| {
                self.mics
                    .iter()
                    .any(|m| m.refresh_meets(from, now + k * period + ahead))
            };
            if meets(0) {
                return false;
            }
            // The largest k without a refresh (refresh_meets grows with k).
            let (mut lo, mut hi) = (0, k_max);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if meets(mid) {
                    hi = mid - 1;
                } else {
                    lo = mid;
                }
            }
            k_max = lo;
        }
        if k_max == 0 {
            return false;
        }
        let k = k_max;
        // A period that moves every byte to the same place each time and
        // reads no byte it writes writes the same values each time: once
        // is as good as k times, and none as good as once when the period
        // simulated already wrote them (see `replay_is_void`).
        let moves = &self.ff.log[armed.log_at..];
        let fixed =
            moves.iter().all(|mv| advance_of(mv.owner()) == 0) && !self.reads_what_it_writes(moves);
        if !(fixed && self.replay_is_void(armed, moves, &shape.ops)) {
            let times = if k > 2 && fixed { 1 } else { k };
            let rec = self.period_since(armed, &shape.ops);
            self.replay(times, &rec, &shape.ops, &advance_of);
        }
        self.add_totals(&armed.totals, &t0, k);
        let dt = k * period;
        for (p, u) in self.spes.iter_mut().enumerate() {
            for (proxy, q) in [(false, &mut u.mfc.queue), (true, &mut u.mfc.proxy)] {
                let n = issued[p * 2 + proxy as usize];
                for (slot, e) in q.entries_mut() {
                    let i = key(p as u8, proxy, slot);
                    if replaced[i] {
                        // The command issued k periods later in its place.
                        e.seq += k * n;
                        e.issued_at += dt;
                        if e.started {
                            e.started_at += dt;
                        }
                    } else {
                        e.seg.done += (k * advance[i]) as u32;
                    }
                }
                q.skip_seqs(k * n);
            }
            u.mfc.shift(armed.at, dt);
        }
        for (u, &then) in self.spes.iter_mut().zip(&armed.tlbs) {
            if let (Some(t), Some(then)) = (u.mfc.tlb.as_mut(), then) {
                t.jumped(then, k, now, dt);
            }
        }
        if let Some(v) = self.dma_latencies.as_mut() {
            // Each period retires the same commands after the same waits.
            for (l, &n) in v.iter_mut().zip(&armed.latencies) {
                let period: Vec<_> = l[n..].to_vec();
                for _ in 0..k {
                    l.extend_from_slice(&period);
                }
            }
        }
        let from = armed.at;
        for (t, &c) in self.threads.iter_mut().zip(&used) {
            if let Some(x) = t.script.as_mut() {
                x.left -= k * c;
            }
            t.shift(from, dt);
        }
        for &id in &shape.ops {
            let d = k * advance_of(self.ops[id].owner);
            let op = &mut self.ops[id];
            op.lsa += d as u32;
            op.remote = moved_by(op.remote, d);
            shift(&mut op.queued_at, dt);
            shift(&mut op.respond_at, dt);
        }
        self.chips.iter_mut().for_each(|c| c.shift(from, dt));
        self.refresh_bus_wake();
        if let Some(b) = self.bif.as_mut() {
            b.shift(from, dt);
        }
        self.mics.iter_mut().for_each(|m| m.shift(from, dt));
        let events: Vec<_> = self
            .calendar
            .drain_in_order()
            .into_iter()
            .map(|(t, e)| (if self.in_shape(&e) { t + dt } else { t }, e))
            .collect();
        self.now = now + dt;
        self.calendar.advance_to(self.now);
        for (t, e) in events {
            self.calendar.schedule(t, e);
        }
        let s = &mut self.ff.stats;
        let per_period = t0
            .chips
            .iter()
            .zip(&armed.totals.chips)
            .map(|(a, b)| a.eib.transfers - b.eib.transfers)
            .sum::<u64>();
        if s.jumps == 0 {
            let before = t0.chips.iter().map(|c| c.eib.transfers).sum::<u64>();
            s.first = Some((before, per_period));
        }
        s.jumps += 1;
        s.cycles += dt;
        s.commands += k * (t0.counters.dma_commands - armed.totals.counters.dma_commands);
        s.transfers += k * per_period;
        true
    }

    /// The end of the run of memory from `from` (before `to`) on the node of `from`.
    pub(super) fn same_node_until(&self, from: u64, to: u64) -> u64 {
        if self.chips.len() == 1 {
            return to;
        }
        let node = self.numa.node_of(from);
        let mut a = from;
        while a < to {
            if self.numa.node_of(a) != node {
                return a;
            }
            let shift = self.numa.page_shift_of(a);
            a = ((a >> shift) + 1) << shift;
        }
        to
    }

    pub(super) fn totals(&self) -> Totals {
        Totals {
            counters: self.counters.clone(),
            chips: self
                .chips
                .iter()
                .map(|c| ChipTotals {
                    eib: c.eib.stats.clone(),
                    rounds: c.arbiter.rounds,
                    attempts: c.arbiter.attempts,
                    accepted: c.command_bus.accepted,
                })
                .collect(),
            mics: self.mics.iter().map(|m| m.stats.clone()).collect(),
            links: self.bif.as_ref().map_or_else(Vec::new, |b| {
                b.links.iter().map(|l| (l.bytes, l.busy)).collect()
            }),
        }
    }

    /// Adds `k` times the increase from `then` to `now` to every counter.
    pub(super) fn add_totals(&mut self, then: &Totals, now: &Totals, k: u64) {
        let more = |a: u64, b: u64| k * (b - a);
        let (a, b) = (&then.counters, &now.counters);
        let c = &mut self.counters;
        c.events += more(a.events, b.events);
        c.dma_commands += more(a.dma_commands, b.dma_commands);
        c.get_bytes += more(a.get_bytes, b.get_bytes);
        c.put_bytes += more(a.put_bytes, b.put_bytes);
        c.bus_requests += more(a.bus_requests, b.bus_requests);
        c.bus_completed += more(a.bus_completed, b.bus_completed);
        for (chip, (then, now)) in self.chips.iter_mut().zip(then.chips.iter().zip(&now.chips)) {
            let (a, b) = (&then.eib, &now.eib);
            let s = &mut chip.eib.stats;
            s.transfers += more(a.transfers, b.transfers);
            s.bytes += more(a.bytes, b.bytes);
            for (r, seg) in s.segment_busy.iter_mut().enumerate() {
                for (i, x) in seg.iter_mut().enumerate() {
                    *x += more(a.segment_busy[r][i], b.segment_busy[r][i]);
                }
            }
            for i in 0..s.sent.len() {
                s.sent[i] += more(a.sent[i], b.sent[i]);
                s.received[i] += more(a.received[i], b.received[i]);
            }
            chip.arbiter.rounds += more(then.rounds, now.rounds);
            chip.arbiter.attempts += more(then.attempts, now.attempts);
            chip.command_bus.accepted += more(then.accepted, now.accepted);
        }
        self.commands_accepted = self.count_commands();
        if let Some(bif) = self.bif.as_mut() {
            for (l, (a, b)) in bif.links.iter_mut().zip(then.links.iter().zip(&now.links)) {
                l.bytes += more(a.0, b.0);
                l.busy += more(a.1, b.1);
            }
        }
        for (m, (a, b)) in self.mics.iter_mut().zip(then.mics.iter().zip(&now.mics)) {
            let s = &mut m.stats;
            s.reads += more(a.reads, b.reads);
            s.writes += more(a.writes, b.writes);
            s.read_bytes += more(a.read_bytes, b.read_bytes);
            s.write_bytes += more(a.write_bytes, b.write_bytes);
        }
    }
}
