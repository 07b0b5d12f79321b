//! What happened when: records for a Chrome/Perfetto trace.
//!
//! Off by default (a run pays one branch per record point). When on, the
//! machine records DMA commands (issue to retirement, per MFC queue slot),
//! bus transfers (grant to arrival, per ring and per concurrent transfer on
//! it), program waits and computations, and mailbox and signal deliveries.
//! The Python layer writes them as Chrome trace JSON, which
//! <https://ui.perfetto.dev> opens.

use crate::time::Cycle;

/// Where a record is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    /// The SPU of a logical SPE: its program's waits and computations.
    Spu(u32),
    /// One command-queue slot of a logical SPE's MFC (proxy slots after the SPU's).
    MfcSlot(u32, u8),
    /// A PPE thread.
    Ppe(usize),
    /// One concurrent transfer ("lane") of a data ring.
    Ring(u8, u8),
}

/// Named numbers attached to a record (bytes, tag, addresses, ring...):
/// what a trace viewer shows when the record is selected.
pub type Args = Vec<(&'static str, u64)>;

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    /// Where.
    pub track: Track,
    /// What (e.g. `mfc_get 16384 B tag 3`).
    pub name: String,
    /// From (SPU cycles).
    pub start: Cycle,
    /// To; equal to `start` for an instant.
    pub end: Cycle,
    /// Details. A DMA command's bus transfers and the register writes it
    /// makes carry its `spe` and `slot` (the track of the command), so that a
    /// viewer can draw an arrow from the command to each of them.
    pub args: Args,
}

/// The records of a run, up to a limit.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Records in the order they were made.
    pub records: Vec<TraceRecord>,
    /// Most records kept.
    pub limit: usize,
    /// Records dropped after the limit.
    pub dropped: u64,
    /// Records kept so far, including those already taken.
    pub kept: usize,
}

impl Trace {
    /// A trace keeping at most `limit` records.
    pub fn new(limit: usize) -> Trace {
        Trace {
            records: Vec::new(),
            limit,
            dropped: 0,
            kept: 0,
        }
    }

    /// Adds a record (or counts it as dropped past the limit).
    #[inline]
    pub fn push(&mut self, track: Track, name: impl FnOnce() -> String, start: Cycle, end: Cycle) {
        self.push_with(track, start, end, || (name(), Vec::new()));
    }

    /// Adds a record with details (or counts it as dropped past the limit).
    #[inline]
    pub fn push_with(
        &mut self,
        track: Track,
        start: Cycle,
        end: Cycle,
        what: impl FnOnce() -> (String, Args),
    ) {
        if self.kept >= self.limit {
            self.dropped += 1;
            return;
        }
        self.kept += 1;
        let (name, args) = what();
        self.records.push(TraceRecord {
            track,
            name,
            start,
            end,
            args,
        });
    }

    /// Removes and returns up to `n` of the oldest records not taken yet (a
    /// writer streams them to a file while the run goes on); taken records
    /// still count against the limit.
    pub fn take(&mut self, n: usize) -> Vec<TraceRecord> {
        let n = n.min(self.records.len());
        self.records.drain(..n).collect()
    }
}
