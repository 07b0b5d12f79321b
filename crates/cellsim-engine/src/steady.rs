//! What the steady-state fast-forward compares and moves: a machine state's
//! *shape*, its timing state seen from a cycle.
//!
//! A shape lists every value that decides what the chip does next, with
//! times relative to the cycle it is taken at, bus requests renamed in the
//! order they are met (their slab indices carry no meaning) and progress
//! left out (how many bytes a command has unrolled, the addresses of its
//! requests). Two shapes that are equal describe states whose futures are
//! the same up to a shift in time and in those progress counters, as long as
//! nothing outside the shape steps in (see `machine::steady`).
//!
//! Each part of the chip writes its own shape and knows how to shift its
//! times (`shape` and `shift` methods, side by side with its fields).

use crate::bus::OpId;
use crate::time::Cycle;

/// A shape being written (see the module docs).
pub(crate) struct Shape {
    /// The values, in a fixed order.
    pub words: Vec<u64>,
    /// The bus requests met, in the order met (their names in `words`).
    pub ops: Vec<OpId>,
    /// The latest future time met.
    pub horizon: Cycle,
    now: Cycle,
    /// Per slab index: its name + 1 (0: not met yet).
    names: Vec<u32>,
}

impl Shape {
    /// An empty shape taken at `now`, of about `len` words; `names` is
    /// scratch space (all zeros).
    pub fn new(now: Cycle, names: Vec<u32>, len: usize) -> Shape {
        Shape {
            words: Vec::with_capacity(len.max(2048)),
            ops: Vec::new(),
            horizon: now,
            now,
            names,
        }
    }

    /// A time only ever compared with the present or the future: relative
    /// to now, past ones all alike; `Cycle::MAX` (never) kept apart.
    #[inline]
    pub fn time(&mut self, t: Cycle) {
        self.time_back(t, 0);
    }

    /// A time compared with the present less at most `back` cycles (a
    /// segment's or a port's free time, less the hops of a transfer): past
    /// ones older than that all alike.
    #[inline]
    pub fn time_back(&mut self, t: Cycle, back: Cycle) {
        if t == Cycle::MAX {
            self.words.push(u64::MAX);
            return;
        }
        self.horizon = self.horizon.max(t);
        let floor = self.now.saturating_sub(back);
        self.words.push(t.max(floor) - floor);
    }

    /// The cycle the shape is taken at.
    #[inline]
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// An optional time.
    #[inline]
    pub fn maybe_time(&mut self, t: Option<Cycle>) {
        match t {
            Some(t) => self.time(t),
            None => self.words.push(u64::MAX - 1),
        }
    }

    /// A value that must be equal.
    #[inline]
    pub fn raw(&mut self, v: u64) {
        self.words.push(v);
    }

    /// A bus request, by the order it was first met.
    #[inline]
    pub fn op(&mut self, id: OpId) {
        let i = id as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, 0);
        }
        if self.names[i] == 0 {
            self.ops.push(id);
            self.names[i] = self.ops.len() as u32;
        }
        self.words.push(self.names[i] as u64 - 1);
    }

    /// Done: returns the scratch space, cleared.
    pub fn finish(&mut self) -> Vec<u32> {
        let mut names = std::mem::take(&mut self.names);
        for &id in &self.ops {
            names[id as usize] = 0;
        }
        names
    }
}

/// Writes where a transfer's remote end is: the kind and element, and the
/// address only if `address` (a request's address is progress, not shape).
pub(crate) fn space(s: &mut Shape, sp: crate::bus::Space, address: bool) {
    use crate::bus::Space;
    let (kind, who, at) = match sp {
        Space::Memory(a) => (0, 0, a),
        Space::Ls { spe, offset } => (1, spe as u64, offset as u64),
        Space::Ps { spe, reg } => (2, spe as u64, reg as u64),
        Space::None => (3, 0, 0),
    };
    s.raw(kind << 8 | who);
    if address {
        s.raw(at);
    }
}

/// Moves a time `dt` later (`Cycle::MAX`, never, stays).
#[inline]
pub(crate) fn shift(t: &mut Cycle, dt: Cycle) {
    if *t != Cycle::MAX {
        *t += dt;
    }
}
