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
//!
//! - [`looking`]: when to look, and the shape a look takes;
//! - [`periods`]: the byte moves recorded in a period and their replay;
//! - [`jump`]: checking a repeat and moving the state whole periods on.

mod jump;
mod looking;
mod periods;

use super::{Counters, Event, Machine};
use crate::bus::{OpId, Space};
use crate::time::Cycle;
use jump::Totals;
pub(super) use periods::DataMove;
use periods::Move;

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

/// A queue entry's progress: what its MFC's shape leaves out and a jump
/// moves (see the Mfc's contract). Listed queue by queue in issue order.
#[derive(Clone, Copy)]
struct Progress {
    /// The physical SPE and which of its queues.
    spe: u8,
    proxy: bool,
    /// The entry's slot (a name only: entries are compared by rank).
    slot: u8,
    /// Bytes of its segment unrolled.
    done: u32,
    /// Its issue number.
    seq: u64,
    /// Cycles since its issue, and since its start + 1 (0: not started):
    /// only the latencies read them.
    issued: Cycle,
    started: Cycle,
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
            Event::Decided(_) => true,
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
}
