//! Exact fast-forward of steady states.
//!
//! Under a steady load (eight SPEs streaming 16 KB DMAs, one SPE reading a
//! long buffer from memory) the chip soon repeats itself: the same requests
//! in the same places of the same queues, the same ring reservations and
//! arbiter pointers, only later in time and further along each command's
//! bytes. The engine looks for that every so many commands: it writes the
//! state's [`Shape`] (times relative to now, requests renamed, progress left
//! out) and compares it with earlier ones, logging the bytes its requests
//! move, in order, since the oldest look it keeps (every look while the
//! state is young; later, from a first repeat). When a look's state comes
//! back with every command advanced by whole lines, the state is periodic
//! with period `P` cycles from that look, and it stays so as long as
//! nothing outside the shape steps in, so the engine jumps `K` periods at
//! once: every time moves `K·P` later, every command `K` times its
//! advance, every counter `K` times its increase, and the recorded byte moves
//! are replayed `K` times at their advancing addresses (in their order, so
//! even overlapping buffers end as they would).
//!
//! `K` stops short of anything that would break the period: an event not in
//! the shape (a program waking, a command entering a queue or retiring), a
//! command's last line (its segment must keep at least a line beyond the
//! jump), a refresh of the DRAM when memory is in use, the time limit. The
//! state must also be one the shape covers whole: one chip, no trace or
//! reservation log, no address translation, no DMA lists or atomics, no
//! PPE or local-store loop activity, no synthetic traffic, only MFC requests
//! between local stores and memory. Anything else just runs event by event,
//! as it does with the fast-forward off (`Machine::set_exact_reference`),
//! which tests compare it with.

use super::{Counters, Event, Machine};
use crate::bus::{BusOp, OpId, OpKind, Owner, Space};
use crate::eib::EibStats;
use crate::mic::MicStats;
use crate::part::Part;
use crate::steady::{shift, Shape};
use crate::storage::Storage;
use crate::time::Cycle;

/// Commands between two looks at the state, at first.
const FIRST_SPACING: u64 = 16;
/// Looks get rarer while nothing repeats, down to one per this many commands
/// (a look costs a few tens of thousands of instructions, about ten
/// transfers: one per 2^14 commands costs under 0.1%).
const MAX_SPACING: u64 = 1 << 14;
/// Looks at most this many commands apart record the byte moves from the
/// start; further apart, only after a first repeat.
const RECORD_SPACING: u64 = 64;
/// The spacing a new state starts with grows up to this many commands.
const MAX_FLOOR: u64 = 1024;
/// Looks without a repeat before looks get rarer.
const MISSES: u32 = 2;
/// Looks remembered (their shapes' hashes) to find periods longer than the
/// spacing of looks, at most.
const HISTORY: usize = 1 << 14;
/// Looks are at most this many commands apart while the state has had
/// fewer than [`YOUNG_LOOKS`] looks: on a saturated two-chip qs20 about one
/// per two retirements of the anchor, so that its period (75k commands) is
/// found after one period. A look there costs about 0.5M instructions, a
/// tenth of the work between two; the young looks of a state about 23M.
const YOUNG_SPACING: u64 = 1 << 11;
const YOUNG_LOOKS: usize = 48;
/// Looks further apart than this many commands wait for a retirement of the
/// anchor SPE (see `FastForward::anchor`).
const ALIGN_SPACING: u64 = RECORD_SPACING;

/// The fast-forward's state (see the module docs).
pub(crate) struct FastForward {
    /// Off: the reference path, one event at a time.
    pub(crate) enabled: bool,
    next_look: u64,
    spacing: u64,
    /// The spacing a new state starts with: it grows while states end
    /// before a jump (looks that cannot pay), shrinks after each jump.
    floor: u64,
    misses: u32,
    /// Since the last new state: shapes were taken, a jump was made.
    looked: bool,
    jumped: bool,
    /// The looks a period may start from, oldest first: the last look, or
    /// while the state is young (fewer than [`YOUNG_LOOKS`] looks) every
    /// look since the first recorded one, with one log since the oldest,
    /// so that a look whose state (with progress) comes back is jumped
    /// from at once rather than after recording one more period.
    snaps: Vec<Armed>,
    /// The SPE whose command retirements spaced-out looks wait for: looks
    /// at a count of commands land anywhere in a period, so two of them see
    /// the same phase only when their distance is a multiple of it (powers
    /// of two rarely are: on a two-chip qs20 the period is 2352 commands);
    /// looks at the first retirement of one SPE from a count on see one of
    /// the few phases that SPE retires at, and find the period within a
    /// few of its lengths. The first SPE to retire from a look's count on
    /// becomes the anchor; a new state forgets it.
    anchor: Option<u8>,
    /// The anchor retired since the next look's count was reached.
    aligned: bool,
    /// The byte moves since the oldest look kept are logged.
    pub(super) recording: bool,
    /// The log's length up to its last move a replay cannot make (0: none):
    /// no period starting before may be jumped.
    taint: usize,
    /// An event outside shapes was handled, or a program ran, since the last look.
    pub(super) disturbed: bool,
    pub(super) log: Vec<Move>,
    /// Per request (slab index): its serial number in the recording.
    pub(super) serial: Vec<u32>,
    pub(super) next_serial: u32,
    lines: Vec<[u8; 128]>,
    /// The last shape's length (the next one's is alike), and its scratch space.
    shape_len: usize,
    names: Vec<u32>,
    /// The looks since the state was new: their shapes' hashes, each with
    /// the commands accepted at its last look (a jump moves the state along
    /// its orbit, so a distance in commands stays a multiple of the period).
    history: std::collections::HashMap<u64, u64>,
    /// Jumps made, cycles and bus transfers jumped over.
    pub(crate) stats: FastForwardStats,
}

/// What the fast-forward has done in a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FastForwardStats {
    /// Jumps.
    pub jumps: u64,
    /// Cycles jumped over.
    pub cycles: Cycle,
    /// Bus transfers granted within them.
    pub transfers: u64,
    /// MFC commands issued within them (by programs' declared loops).
    pub commands: u64,
    /// The first jump: bus transfers simulated before it, and in its period.
    pub first: Option<(u64, u64)>,
}

/// A recording under way: the shape it started from, when, and what it
/// needs to check and scale a repeat.
struct Armed {
    words: Vec<u64>,
    /// The byte moves since are logged.
    recorded: bool,
    /// Where its moves start in the log.
    log_at: usize,
    /// The serial number of the first request created after it.
    base: u32,
    /// The serial numbers of the requests alive then, in the order of `ops`.
    serials: Vec<u32>,
    /// Commands accepted then.
    commands: u64,
    at: Cycle,
    /// Requests alive at arming, by name, with their addresses.
    ops: Vec<(OpId, u32, Space)>,
    /// Every queue entry's progress (see `Progress`), in issue order.
    dones: Vec<Progress>,
    /// Every queue's next issue number (SPE by SPE, the SPU's then the proxy's).
    seqs: Vec<u64>,
    /// Every thread's declared loop: the commands it has left.
    scripts: Vec<Option<u64>>,
    /// Every thread's command waiting to enter a queue: cycles since its issue.
    pending: Vec<Option<Cycle>>,
    /// Latencies recorded per SPE.
    latencies: Vec<usize>,
    /// Every SPE's TLB counts.
    tlbs: Vec<Option<(u64, u64, u64)>>,
    totals: Totals,
}

/// A queue entry's progress: SPE, proxy queue, slot, bytes unrolled, issue
/// number; its issue and start cycles relative to now (0: not started),
/// which only the latencies read. Listed queue by queue in issue order.
type Progress = (u8, bool, u8, u32, u64, Cycle, Cycle);

/// A byte move of the recorded period: at the coherence point or on landing,
/// with the request (its serial number) as it was.
#[derive(Clone, Copy)]
pub(super) enum DataMove {
    Coherence(u32, BusOp),
    Land(u32, BusOp),
}

/// A logged byte move: what a replay needs of its request, as it was then.
#[derive(Clone, Copy)]
pub(super) struct Move {
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
    fn owner(&self) -> Owner {
        Owner::Mfc {
            spe: self.spe,
            slot: self.slot,
            proxy: self.proxy,
        }
    }

    /// The move `d` bytes further along its command.
    fn advanced(mut self, d: u64) -> Move {
        self.lsa += d as u32;
        self.remote = moved_by(self.remote, d);
        self
    }
}

/// The moves of a period to replay: serial numbers as if the recording
/// had started with it (its live requests first, in the order of its
/// shape, then those created since), the serial numbers of the requests
/// alive at its end, and how many requests it has met.
struct Period {
    moves: Vec<Move>,
    survivors: Vec<usize>,
    serials: usize,
}

/// Every counter a period advances.
#[derive(Clone)]
struct Totals {
    counters: Counters,
    chips: Vec<ChipTotals>,
    mics: Vec<MicStats>,
    /// Per BIF direction: bytes carried and busy cycles.
    links: Vec<(u64, Cycle)>,
}

/// A chip's bus counters.
#[derive(Clone)]
struct ChipTotals {
    eib: EibStats,
    rounds: u64,
    attempts: u64,
    accepted: u64,
}

impl FastForward {
    pub(crate) fn new() -> FastForward {
        FastForward {
            enabled: true,
            next_look: FIRST_SPACING,
            spacing: FIRST_SPACING,
            floor: FIRST_SPACING,
            misses: 0,
            looked: false,
            jumped: false,
            snaps: Vec::new(),
            anchor: None,
            aligned: false,
            recording: false,
            taint: 0,
            disturbed: false,
            log: Vec::new(),
            serial: Vec::new(),
            next_serial: 0,
            lines: Vec::new(),
            shape_len: 0,
            names: Vec::new(),
            history: std::collections::HashMap::new(),
            stats: FastForwardStats::default(),
        }
    }

    fn disarm(&mut self) {
        self.snaps.clear();
        self.recording = false;
        self.log.clear();
        self.taint = 0;
    }

    /// Whether kept look `i` may start a period ending now: recorded since,
    /// and nothing since that a replay cannot make.
    fn replayable(&self, i: usize) -> bool {
        let a = &self.snaps[i];
        a.recorded && a.log_at >= self.taint
    }

    /// A request was created while recording: it gets the next serial number.
    #[inline]
    pub(super) fn created(&mut self, id: OpId) {
        let i = id as usize;
        if self.serial.len() <= i {
            self.serial.resize(i + 1, 0);
        }
        self.serial[i] = self.next_serial;
        self.next_serial += 1;
    }

    /// A byte move while recording.
    #[inline]
    pub(super) fn moved(&mut self, m: DataMove) {
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

/// A request the recording can replay: an MFC's, no atomic, between a local
/// store and a local store or memory, on one chip.
fn plain(op: &BusOp) -> bool {
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

/// A shape's hash, to find it again among earlier looks (equal shapes are
/// then compared word by word).
fn hash(words: &[u64]) -> u64 {
    words.iter().fold(words.len() as u64, |h, &w| {
        (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
    })
}

fn moved_by(s: Space, d: u64) -> Space {
    match s {
        Space::Memory(a) => Space::Memory(a + d),
        Space::Ls { spe, offset } => Space::Ls {
            spe,
            offset: offset + d as u32,
        },
        other => other,
    }
}

fn address(s: Space) -> u64 {
    match s {
        Space::Memory(a) => a,
        Space::Ls { offset, .. } => offset as u64,
        _ => 0,
    }
}

impl Machine {
    /// Turns the steady-state fast-forward off (`true`: every transfer is
    /// simulated event by event, the reference the fast path is tested
    /// against) or on (the default). Results are identical either way.
    pub fn set_exact_reference(&mut self, on: bool) {
        self.ff.enabled = !on;
        self.ff.disarm();
    }

    /// Whether an event is part of shapes; the others end a steady state
    /// when due: a thread waking that will run its program's code (not a
    /// command of its declared loop), synthetic traffic. (`Machine::handle`
    /// makes the same checks in its arms: keep the two alike.)
    #[inline]
    pub(super) fn in_shape(&self, e: &Event) -> bool {
        match *e {
            Event::Wake(t) | Event::Enqueue(t) => self.thread_event_in_shape(t as usize),
            Event::Retire(..) => true,
            Event::Inject(_) => false,
            Event::Dmac(_) | Event::Snoop(_) | Event::DataReady(_) | Event::Complete(_) => true,
        }
    }

    /// Whether thread `tid`'s wake-up or command is part of shapes: it runs a
    /// declared loop (whose position is in its shape), not its program's code.
    #[inline(always)]
    pub(super) fn thread_event_in_shape(&self, tid: super::threads::ThreadId) -> bool {
        self.threads[tid].script.is_some()
    }

    /// Whether the fast-forward is off.
    pub fn exact_reference(&self) -> bool {
        !self.ff.enabled
    }

    /// What the fast-forward has done so far.
    pub fn fast_forward_stats(&self) -> FastForwardStats {
        self.ff.stats
    }

    /// Called after each step: every so many commands, looks at the state,
    /// and jumps over whole periods of a steady state, ending before `limit`.
    #[inline]
    pub(super) fn maybe_fast_forward(&mut self, limit: Cycle) {
        if !self.ff.enabled {
            return;
        }
        // (Whether the anchor retired in this step.)
        let aligned = std::mem::take(&mut self.ff.aligned);
        let commands = self.commands();
        if commands >= self.ff.next_look && self.ready.is_empty() {
            let ff = &mut self.ff;
            if ff.spacing > ALIGN_SPACING && !aligned && !ff.disturbed {
                // Spaced-out looks wait for the anchor's next retirement,
                // or look anyway when it does not come within a spacing.
                if commands < ff.next_look + ff.spacing {
                    return;
                }
                ff.anchor = None;
            }
            self.look(limit);
        }
    }

    /// Something outside shapes happened (an event, a program ran): the
    /// state is a new one, looked at soon (a look far off, or a long
    /// recording under way, would wait for a state that is gone).
    #[inline]
    pub(super) fn disturb(&mut self) {
        if !self.ff.disturbed {
            self.ff.disturbed = true;
            let soon = self.commands() + self.ff.floor;
            self.ff.next_look = self.ff.next_look.min(soon);
        }
    }

    /// A command of SPE `p` retired: a spaced-out look may follow this step
    /// (see `FastForward::anchor`).
    #[inline]
    pub(super) fn retired_for_looks(&mut self, p: u8) {
        let ff = &mut self.ff;
        if ff.spacing > ALIGN_SPACING && *ff.anchor.get_or_insert(p) == p {
            ff.aligned = true;
        }
    }

    /// Commands accepted on every chip's command bus (kept by the step
    /// loop: this is read at every step).
    #[inline]
    fn commands(&self) -> u64 {
        debug_assert_eq!(self.commands_accepted, self.count_commands());
        self.commands_accepted
    }

    /// Counts the commands accepted on every chip's command bus.
    pub(super) fn count_commands(&self) -> u64 {
        self.chips.iter().map(|c| c.command_bus.accepted).sum()
    }

    fn look(&mut self, limit: Cycle) {
        let commands = self.commands();
        let ff = &mut self.ff;
        ff.next_look = commands + ff.spacing;
        if std::mem::take(&mut ff.disturbed) {
            // A new state: whatever steady state follows starts from here.
            if ff.jumped {
                ff.floor = (ff.floor / 2).max(FIRST_SPACING);
            } else if ff.looked {
                ff.floor = (ff.floor * 2).min(MAX_FLOOR);
            }
            (ff.looked, ff.jumped) = (false, false);
            ff.disarm();
            ff.history.clear();
            ff.anchor = None;
            ff.spacing = ff.floor;
            ff.misses = 0;
            return;
        }
        let names = std::mem::take(&mut self.ff.names);
        let Some((mut shape, boundary)) = self.steady_shape(names) else {
            self.ff.disarm();
            return;
        };
        self.ff.names = shape.finish();
        self.ff.shape_len = shape.words.len();
        let progress = self.progress();
        self.ff.looked = true;
        // While the state is young every look is kept, and recorded from,
        // so that a period is jumped as soon as it is found.
        let young = self.ff.history.len() < YOUNG_LOOKS;
        // Short periods are recorded from the first look (a state's first
        // windows are short); once looks have backed off and the state is
        // no longer young, recording (which costs on every transfer) waits
        // for a first repeat.
        let mut record = young || self.ff.spacing <= RECORD_SPACING;
        if let Some(last) = self.ff.snaps.last() {
            let last_at = last.commands;
            let same = shape.words == last.words;
            if same && !last.recorded {
                // A repeat: record the next period.
                self.arm(shape, progress, true, false);
                self.ff.next_look = commands + (commands - last_at);
                return;
            }
            let i = self.ff.snaps.len() - 1;
            if same && self.ff.replayable(i) {
                if self.jump_from(i, &shape, &progress, boundary, limit) {
                    return;
                }
            } else {
                // No period of this length: after a few misses, try longer ones.
                let ff = &mut self.ff;
                ff.misses += 1;
                if ff.misses >= MISSES {
                    // While the state is young, looks stay close enough to
                    // see most phases of the anchor (each is then seen again
                    // a period on); later, rarer.
                    let max = if young { YOUNG_SPACING } else { MAX_SPACING };
                    ff.spacing = (ff.spacing * 2).min(max).max(ff.spacing);
                    ff.misses = 0;
                }
            }
        }
        // A shape seen some looks ago: the period may be that long (the
        // state has a position in each queue's rotation and each declared
        // loop, which may take many looks to come round). Jump from that
        // look if it is kept; else record from here and look again one
        // such period on.
        // With each command's progress: a period long enough to be
        // remembered replaces the commands, which must come back as far.
        let dones: Vec<u64> = progress.iter().map(|x| x.3 as u64).collect();
        let h = hash(&shape.words) ^ hash(&dones).rotate_left(1);
        if let Some(&then) = self.ff.history.get(&h) {
            let kept = self.ff.snaps.iter().position(|a| a.commands == then);
            match kept {
                Some(i) if self.ff.replayable(i) && shape.words == self.ff.snaps[i].words => {
                    if self.jump_from(i, &shape, &progress, boundary, limit) {
                        return;
                    }
                    // (Not yet: the next looks meet the next kept ones.)
                }
                _ => {
                    let period = commands - then;
                    if period > self.ff.spacing {
                        self.ff.next_look = commands + period;
                        record = true;
                    }
                }
            }
        }
        let ff = &mut self.ff;
        if ff.history.len() == HISTORY {
            ff.history.clear();
        }
        ff.history.insert(h, commands);
        self.arm(shape, progress, record, young);
    }

    /// Jumps from kept look `i` to now if the state came back; after a jump
    /// the next look starts a new state at the new time.
    fn jump_from(
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

    /// The state's shape and the first event outside it, if the state is one
    /// a shape covers whole; `names` is the shape's scratch space.
    fn steady_shape(&self, names: Vec<u32>) -> Option<(Shape, Cycle)> {
        let whole = self.trace.is_none()
            && self.chips.iter().all(|c| c.eib.log.is_none())
            && self
                .bif
                .as_ref()
                .is_none_or(|b| b.links.iter().all(|l| l.log.is_none()))
            && self.ls_loops.is_empty()
            && self.ls_computes == 0 // the port's log is not in shapes
            && self.core_wake == Cycle::MAX
            && self.traffic.is_none()
            && self.ready.is_empty()
            && self.fault.is_none()
            && !self.mbox_changed
            && self.reservations.is_empty()
            && self.spes.iter().all(|u| {
                [&u.mfc.queue, &u.mfc.proxy].iter().all(|q| {
                    q.entries()
                        .all(|(_, e)| e.list.is_none() && e.cmd.op.atomic().is_none())
                })
            });
        if !whole {
            return None;
        }
        let now = self.now;
        let mut s = Shape::new(now, names, self.ff.shape_len);
        let mut boundary = Cycle::MAX;
        // Slots are named by their rank in issue order (see `CommandQueue::shape`).
        let queues = |u: &super::SpeUnit| [u.mfc.queue.depth(), u.mfc.proxy.depth()];
        let stride = self.spes.iter().flat_map(queues).max().unwrap_or(0);
        let mut ranks = vec![u8::MAX; self.spes.len() * 2 * stride];
        for (u, r) in self.spes.iter().zip(ranks.chunks_mut(2 * stride)) {
            u.mfc.queue.write_ranks(&mut r[..stride]);
            u.mfc.proxy.write_ranks(&mut r[stride..]);
        }
        let rank = |p: u8, proxy: bool, slot: u8| {
            ranks[(p as usize * 2 + proxy as usize) * stride + slot as usize]
        };
        self.calendar.for_each_in_order(|t, e| {
            if !self.in_shape(e) {
                boundary = boundary.min(t);
                return;
            }
            s.time(t);
            match *e {
                Event::Wake(tid) => s.raw(4 << 8 | (tid as u64) << 16),
                Event::Enqueue(tid) => s.raw(5 << 8 | (tid as u64) << 16),
                Event::Retire(p, slot, proxy) => {
                    let r = rank(p, proxy, slot) as u64;
                    s.raw(6 << 8 | (p as u64) << 16 | r << 24 | (proxy as u64) << 32)
                }
                Event::Dmac(p) => s.raw(p as u64),
                Event::Snoop(op) => {
                    s.raw(1 << 8);
                    s.op(op)
                }
                Event::DataReady(op) => {
                    s.raw(2 << 8);
                    s.op(op)
                }
                Event::Complete(op) => {
                    s.raw(3 << 8);
                    s.op(op)
                }
                _ => unreachable!("events outside shapes are skipped"),
            }
        });
        // Every part writes what decides its future (its contract, `crate::part`).
        self.chips.iter().for_each(|c| c.shape(&mut s));
        if let Some(b) = &self.bif {
            b.shape(&mut s);
        }
        self.mics.iter().for_each(|m| m.shape(&mut s));
        self.spes.iter().for_each(|u| u.mfc.shape(&mut s));
        self.threads.iter().for_each(|t| t.shape(&mut s));
        // The requests, in the order met, without their addresses.
        let mut whole = s.ops.len() == self.ops.live();
        for i in 0..s.ops.len() {
            let op = self.ops[s.ops[i]];
            whole &= plain(&op);
            let Owner::Mfc { spe, slot, proxy } = op.owner else {
                continue;
            };
            let slot = rank(spe, proxy, slot);
            for v in [spe as u64, slot as u64, proxy as u64, op.kind as u64] {
                s.raw(v);
            }
            for v in [op.requester.0, op.target.0] {
                s.raw(v as u64);
            }
            s.raw(op.size as u64);
            crate::steady::space(&mut s, op.remote, false);
            s.raw(op.leg as u64);
            // (`queued_at` is history: nothing reads it.)
            s.time(op.respond_at);
        }
        whole.then_some((s, boundary))
    }

    /// The end of the run of memory from `from` (before `to`) on the node of `from`.
    fn same_node_until(&self, from: u64, to: u64) -> u64 {
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

    fn totals(&self) -> Totals {
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

    /// Takes `shape` as the state a period may start from; `record`: logs
    /// the byte moves from here (a jump needs them); `keep`: the looks kept
    /// stay, if recorded (see `FastForward::snaps`), else they are dropped.
    fn arm(&mut self, shape: Shape, progress: Vec<Progress>, record: bool, keep: bool) {
        let ops = shape
            .ops
            .iter()
            .map(|&id| {
                let op = self.ops[id];
                (id, op.lsa, op.remote)
            })
            .collect();
        let ff = &mut self.ff;
        if !(keep && record && ff.recording) {
            // A new recording: the requests alive are numbered in the
            // order of the shape.
            ff.disarm();
            for (c, &id) in shape.ops.iter().enumerate() {
                let i = id as usize;
                if ff.serial.len() <= i {
                    ff.serial.resize(i + 1, 0);
                }
                ff.serial[i] = c as u32;
            }
            ff.next_serial = shape.ops.len() as u32;
        }
        ff.disturbed = false;
        ff.recording = record;
        let serials = shape.ops.iter().map(|&id| ff.serial[id as usize]).collect();
        let armed = Armed {
            words: shape.words,
            recorded: record,
            log_at: ff.log.len(),
            base: ff.next_serial,
            serials,
            commands: self.commands(),
            at: self.now,
            ops,
            dones: progress,
            seqs: self.next_seqs(),
            scripts: self
                .threads
                .iter()
                .map(|t| t.script.map(|x| x.left))
                .collect(),
            pending: self
                .threads
                .iter()
                .map(|t| t.pending.map(|p| self.now - p.issued_at))
                .collect(),
            tlbs: self
                .spes
                .iter()
                .map(|u| u.mfc.tlb.as_ref().map(|t| t.counts()))
                .collect(),
            latencies: self
                .dma_latencies
                .as_ref()
                .map_or_else(Vec::new, |v| v.iter().map(|l| l.len()).collect()),
            totals: self.totals(),
        };
        self.ff.snaps.push(armed);
    }

    /// Every queue entry's bytes unrolled and issue number.
    fn progress(&self) -> Vec<Progress> {
        let mut v = Vec::new();
        for (p, u) in self.spes.iter().enumerate() {
            for (proxy, q) in [(false, &u.mfc.queue), (true, &u.mfc.proxy)] {
                // In issue order: entries are compared by rank (see `CommandQueue::shape`).
                v.extend(q.issue_order().iter().map(|&s| {
                    let e = q.get(s);
                    let started = if e.started {
                        self.now - e.started_at + 1
                    } else {
                        0
                    };
                    let issued = self.now - e.issued_at;
                    (p as u8, proxy, s, e.seg.done, e.seq, issued, started)
                }));
            }
        }
        v
    }

    fn next_seqs(&self) -> Vec<u64> {
        self.spes
            .iter()
            .flat_map(|u| [u.mfc.queue.next_seq(), u.mfc.proxy.next_seq()])
            .collect()
    }

    /// The state at `armed.at` came back at `now`: jumps whole periods.
    fn jump(
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
        for (
            &(p, proxy, _, done_a, seq_a, iss_a, st_a),
            &(p2, proxy2, slot, done_b, seq_b, iss_b, st_b),
        ) in armed.dones.iter().zip(progress)
        {
            // Entries of the same rank in the same queue (their slots may differ).
            if (p, proxy) != (p2, proxy2) {
                return false;
            }
            if seq_a != seq_b {
                // (With latencies recorded, its history must be the same too.)
                if done_a != done_b || latencies && (iss_a, st_a) != (iss_b, st_b) {
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

    /// The moves logged since kept look `a` (see [`Period`]); `live`: the
    /// requests alive now.
    fn period_since(&self, a: &Armed, live: &[OpId]) -> Period {
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
    fn replay(&mut self, k: u64, rec: &Period, live: &[OpId], advance_of: &impl Fn(Owner) -> u64) {
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
    fn replay_is_void(&self, a: &Armed, moves: &[Move], live: &[OpId]) -> bool {
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
    fn reads_what_it_writes(&self, moves: &[Move]) -> bool {
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
    fn coherence_bytes(&mut self, op: &Move, line: &mut [u8; 128]) {
        let n = op.size as usize;
        let p = op.spe;
        match (op.kind, op.remote) {
            (OpKind::Read, Space::Memory(a)) => {
                super::dma::read_into(&self.memory, a as usize, line, n)
            }
            (OpKind::Read, Space::Ls { spe, offset }) => {
                super::dma::read_into(&self.spes[spe as usize].ls, offset as usize, line, n)
            }
            (OpKind::Write, Space::Memory(a)) => {
                let ls = &self.spes[p as usize].ls;
                Storage::copy(ls, op.lsa as usize, &self.memory, a as usize, n);
                self.reservations.written(a, n as u64);
                self.ppu.snoop_write(a, n as u64);
            }
            (OpKind::Write, Space::Ls { .. }) => {
                super::dma::read_into(&self.spes[p as usize].ls, op.lsa as usize, line, n)
            }
            _ => {}
        }
    }

    /// The byte moves of [`Machine::land`] for a plain request.
    fn land_bytes(&self, op: &Move, line: &[u8; 128]) {
        let n = op.size as usize;
        match (op.kind, op.remote) {
            (OpKind::Read, _) => {
                super::dma::write_from(&self.spes[op.spe as usize].ls, op.lsa as usize, line, n)
            }
            (OpKind::Write, Space::Ls { spe, offset }) => {
                super::dma::write_from(&self.spes[spe as usize].ls, offset as usize, line, n)
            }
            _ => {}
        }
    }

    /// Adds `k` times the increase from `then` to `now` to every counter.
    fn add_totals(&mut self, then: &Totals, now: &Totals, k: u64) {
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
