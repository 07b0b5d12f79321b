//! A polling loop a native program declares instead of running it
//! (`Spu::mfc_poll`).
//!
//! An SPU that polls rows of main memory (the notification and
//! acknowledgement matrices of Keller and Varbanescu's library) and finds
//! nothing new wakes its program once per request only for the program to
//! learn that nothing changed. The program can declare the loop instead:
//! "compute `pause` cycles; then for each row in turn get it, write the tag
//! mask of its group, wait for the group, and stop if the row's bytes in the
//! local store differ from what they held when the loop was declared". The
//! engine makes the same requests at the same cycles as the program would
//! (each one as soon as the thread runs again after the previous one, with
//! no cycle between) and wakes the program only when a row it fetched has
//! changed. Bus traffic is unchanged: every poll is still simulated, request
//! by request; what the declaration saves is the host's work of running the
//! program between them.
//!
//! The loop's exit condition is data (bytes of memory), which a steady state's
//! shape does not hold, so a thread in a declared poll is, for the
//! fast-forward, a thread that runs its program (`machine::steady`).

use crate::mfc::command::{MfcCommand, Opcode};
use crate::mfc::tags::TagUpdate;
use crate::program::Request;
use crate::storage::Storage;
use crate::time::Cycle;
use std::sync::Arc;

/// Most rows one poll fetches.
pub const MAX_ROWS: usize = 4;
/// Most bytes of one row (one DMA command).
pub const MAX_ROW_BYTES: u32 = 16384;

/// One row a poll fetches: `size` bytes from `ea` into `lsa`, in tag group `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollRow {
    /// Local-store address of the row's buffer.
    pub lsa: u32,
    /// Effective address of the row.
    pub ea: u64,
    /// Bytes (what a get may move).
    pub size: u32,
    /// Tag group of the get (0 to 31).
    pub tag: u32,
}

impl PollRow {
    /// Why this row cannot be polled into a local store of `ls_len` bytes, if it cannot.
    pub fn check(&self, ls_len: usize) -> Result<(), String> {
        if self.size == 0 || self.size > MAX_ROW_BYTES {
            return Err(format!(
                "mfc_poll: a row of {} bytes (1 to {MAX_ROW_BYTES})",
                self.size
            ));
        }
        if self.lsa as usize + self.size as usize > ls_len {
            return Err(format!(
                "mfc_poll: the row at LS 0x{:x} of {} bytes is outside the local store",
                self.lsa, self.size
            ));
        }
        if self.tag > 31 {
            return Err(format!("mfc_poll: tag {} (0 to 31)", self.tag));
        }
        Ok(())
    }
}

/// Where a declared poll is: the request it made last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Pause,
    Get(u8),
    Mask(u8),
    Wait(u8),
}

/// A polling loop in progress (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct PollLoop {
    pause: Cycle,
    rows: [PollRow; MAX_ROWS],
    len: u8,
    ls: Arc<Storage>,
    /// What the rows' local-store bytes held when the loop was declared, row after row.
    seen: Vec<u8>,
    at: At,
    /// Polls made (each row fetched counts one).
    pub(crate) polls: u64,
}

impl PollLoop {
    /// The loop over `rows` (1 to [`MAX_ROWS`], checked) of the local store
    /// `ls`, as its bytes are now; its first request is the pause.
    pub(crate) fn new(pause: Cycle, rows: &[PollRow], ls: Arc<Storage>) -> PollLoop {
        let mut r = [rows[0]; MAX_ROWS];
        r[..rows.len()].copy_from_slice(rows);
        let mut seen = vec![0u8; rows.iter().map(|x| x.size as usize).sum()];
        let mut off = 0;
        for x in rows {
            ls.read(x.lsa as usize, &mut seen[off..off + x.size as usize]);
            off += x.size as usize;
        }
        PollLoop {
            pause,
            rows: r,
            len: rows.len() as u8,
            ls,
            seen,
            at: At::Pause,
            polls: 0,
        }
    }

    /// The loop's first request.
    pub(crate) fn first(&self) -> Request {
        Request::Compute(self.pause)
    }

    /// The request the program would make now, its previous one done; or
    /// `Err(row)` when the row just fetched differs from what was seen (the
    /// loop ends and the program runs again).
    pub(crate) fn next(&mut self) -> Result<Request, usize> {
        let (at, req) = match self.at {
            At::Pause => (At::Get(0), self.get(0)),
            At::Get(i) => (At::Mask(i), Request::WriteTagMask(1 << self.row(i).tag)),
            At::Mask(i) => (At::Wait(i), Request::ReadTagStatus(TagUpdate::All)),
            At::Wait(i) => {
                self.polls += 1;
                if self.changed(i) {
                    return Err(i as usize);
                }
                if i + 1 < self.len {
                    (At::Get(i + 1), self.get(i + 1))
                } else {
                    (At::Pause, Request::Compute(self.pause))
                }
            }
        };
        self.at = at;
        Ok(req)
    }

    fn row(&self, i: u8) -> &PollRow {
        &self.rows[i as usize]
    }

    fn get(&self, i: u8) -> Request {
        let r = self.row(i);
        Request::Mfc(MfcCommand::single(Opcode::Get, r.lsa, r.ea, r.size, r.tag))
    }

    /// Whether row `i`'s bytes in the local store differ from what was seen.
    fn changed(&self, i: u8) -> bool {
        let off: usize = self.rows[..i as usize]
            .iter()
            .map(|x| x.size as usize)
            .sum();
        let r = self.row(i);
        let seen = &self.seen[off..off + r.size as usize];
        let mut buf = [0u8; 128];
        seen.chunks(buf.len()).enumerate().any(|(k, want)| {
            let got = &mut buf[..want.len()];
            self.ls.read(r.lsa as usize + k * 128, got);
            got != want
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lsa: u32, tag: u32) -> PollRow {
        PollRow {
            lsa,
            ea: 0x1000,
            size: 128,
            tag,
        }
    }

    #[test]
    fn a_poll_makes_the_plain_loops_requests_and_stops_on_a_change() {
        let ls = Storage::new(0x4000);
        let mut p = PollLoop::new(200, &[row(0, 0), row(0x100, 3)], ls.clone());
        assert_eq!(p.first(), Request::Compute(200));
        let mut reqs = Vec::new();
        for _ in 0..9 {
            reqs.push(p.next().unwrap());
        }
        assert!(matches!(reqs[0], Request::Mfc(c) if c.lsa == 0 && c.tag == 0));
        assert_eq!(reqs[1], Request::WriteTagMask(1));
        assert_eq!(reqs[2], Request::ReadTagStatus(TagUpdate::All));
        assert!(matches!(reqs[3], Request::Mfc(c) if c.lsa == 0x100 && c.tag == 3));
        assert_eq!(reqs[4], Request::WriteTagMask(8));
        assert_eq!(reqs[6], Request::Compute(200));
        assert!(matches!(reqs[7], Request::Mfc(c) if c.lsa == 0));
        // A byte of the second row changes: the loop ends after its next wait.
        assert_eq!(reqs[8], Request::WriteTagMask(1));
        ls.write(0x100 + 127, &[1]);
        assert_eq!(p.next(), Ok(Request::ReadTagStatus(TagUpdate::All)));
        assert!(matches!(p.next(), Ok(Request::Mfc(c)) if c.lsa == 0x100));
        assert_eq!(p.next(), Ok(Request::WriteTagMask(8)));
        assert_eq!(p.next(), Ok(Request::ReadTagStatus(TagUpdate::All)));
        assert_eq!(p.next(), Err(1));
    }

    #[test]
    fn rows_outside_the_local_store_or_too_long_are_refused() {
        assert!(row(0x3F80, 0).check(0x4000).is_ok());
        assert!(row(0x3F81, 0)
            .check(0x4000)
            .unwrap_err()
            .contains("outside"));
        let big = PollRow {
            size: MAX_ROW_BYTES + 16,
            ..row(0, 0)
        };
        assert!(big.check(1 << 18).unwrap_err().contains("bytes"));
        assert!(row(0, 32).check(0x4000).unwrap_err().contains("tag 32"));
    }
}
