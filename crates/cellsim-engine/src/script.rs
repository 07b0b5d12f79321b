//! A loop of MFC commands a native program declares instead of issuing them
//! one by one (`Spu::mfc_repeat`).
//!
//! A native program's future is opaque: the engine cannot tell where it is in
//! its loop, so every step of it ends a steady state (`machine::steady`).
//! A kernel whose requests are a fixed sequence (a stream of gets and puts
//! to the same buffers) can hand the engine the sequence instead; the engine
//! then issues each command exactly when the program would have (when its
//! previous command was issued and the thread runs again, with no cycle
//! between), so timing and results are those of the plain loop. The loop's
//! position is visible state: a steady state's period may then contain
//! "a command retires and the program issues the next one", and a jump
//! advances the count left.

use crate::mfc::command::MfcCommand;
use crate::steady::Shape;

/// Most commands in one loop body.
pub const MAX_BODY: usize = 4;

/// A command loop in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Script {
    body: [MfcCommand; MAX_BODY],
    len: u8,
    /// Index in `body` of the next command.
    next: u8,
    /// Commands still to issue.
    pub(crate) left: u64,
}

impl Script {
    /// `body` repeated `times` times; `None` when there is nothing to issue.
    /// The body has 1 to [`MAX_BODY`] commands.
    pub fn new(body: &[MfcCommand], times: u64) -> Option<Script> {
        assert!(
            (1..=MAX_BODY).contains(&body.len()),
            "a command loop has 1 to {MAX_BODY} commands, not {}",
            body.len()
        );
        let left = times.checked_mul(body.len() as u64)?;
        if left == 0 {
            return None;
        }
        let mut b = [body[0]; MAX_BODY];
        b[..body.len()].copy_from_slice(body);
        Some(Script {
            body: b,
            len: body.len() as u8,
            next: 0,
            left,
        })
    }

    /// The next command to issue, if any is left.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<MfcCommand> {
        if self.left == 0 {
            return None;
        }
        let c = self.body[self.next as usize];
        self.next = (self.next + 1) % self.len;
        self.left -= 1;
        Some(c)
    }

    /// Writes the loop (see [`crate::steady`]): its body and position, not
    /// the count left (progress).
    pub(crate) fn shape(&self, s: &mut Shape) {
        s.raw(self.len as u64);
        s.raw(self.next as u64);
        for c in &self.body[..self.len as usize] {
            command_shape(s, c);
        }
    }
}

/// Writes a command as issued.
pub(crate) fn command_shape(s: &mut Shape, c: &MfcCommand) {
    s.raw(c.op as u64);
    s.raw(c.lsa as u64);
    s.raw(c.ea);
    s.raw(c.size as u64);
    s.raw(c.tag as u64);
    s.raw(c.list as u64);
}
