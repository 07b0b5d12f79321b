//! The part contract: what every part of the chip owes the machine.
//!
//! A part (an SPE's [`Mfc`](crate::mfc::Mfc) with its DMAC, a chip's bus —
//! command bus, BIUs, data arbiter, rings —, a [`Mic`](crate::mic::Mic), the
//! [`Bif`](crate::bif::Bif), a thread) holds its own state and answers three
//! questions, statically dispatched (no trait objects: the step loop calls
//! these at every step, and a virtual call there would cost):
//!
//! - [`Part::next_wake`]: when it must act on its own next (a wake-up it
//!   keeps itself rather than on the calendar), if ever;
//! - [`Part::shape`]: every value that decides its future, written into the
//!   fast-forward's [`Shape`] (times relative to the cycle the shape is
//!   taken at, bus requests by name, progress left out);
//! - [`Part::shift`]: moves every time the shape holds `dt` later (a jump of
//!   the fast-forward).
//!
//! Each implementation starts with a "Contract:" comment naming the fields
//! that decide the part's future (in its shape), the ones left out and why
//! (progress the jump moves itself, counters the jump scales, history,
//! settings fixed at build). **The shape rule**: two states of a part whose
//! shapes are equal have the same future up to a shift in time and in
//! progress. A field that decides the future and is not in `shape` (nor
//! handled by the jump as progress) breaks exact fast-forward silently; the
//! per-part tests (`shape_rule` in each part's tests) check the rule: every
//! field perturbed either changes the shape or leaves the part's future
//! alike, and the fields left out on purpose are shown to need the jump's
//! own handling.
//!
//! The events a part handles are inherent methods of the part over a narrow
//! context: the calendar, the request slab ([`crate::bus::Slab`]) where it
//! needs one, and what the handler reads of its neighbours (`eib::round`'s
//! `Round` for the data arbiter's round, `mfc::dmac`'s `Dmac` and `Unroll`
//! for the DMAC). What a handler cannot do within its context it hands back
//! (the DMAC's bus request, a program to tell), and the machine, which keeps
//! the calendar loop, routes events to parts and hands results on
//! (`machine/dmac.rs`, `machine/dma.rs`).
//!
//! Handling is not a method of this trait, because no one signature fits
//! every part without a second dispatch: the parts differ in what wakes
//! them (the MFC's DMAC and retirements are calendar events, a chip's
//! command bus and arbiter are wake-ups the step loop reads, a MIC's snoop an
//! event carrying a request), in their context (the DMAC's unroll reads its
//! BIU, NUMA placement and topology; its retirement only the calendar) and in
//! what they hand back (a bus request, "tell the program", a retired entry
//! to record, the round's next retry); and some parts have no events of
//! their own (the BIF and its links, the rings, a BIU: another part's
//! handler drives them). One `handle(event, context) -> outcome` method
//! would need per-part event, context and outcome types, and the machine's
//! `match` on [`crate::machine::Event`] would then build each part's event
//! only for the part to match on it again; with the handlers as plain
//! methods the step loop calls each one directly (statically, inlined where
//! it was before: `speed 400 x ff qs20` counts the same instructions).

use crate::steady::Shape;
use crate::time::Cycle;

/// The contract of a part of the chip (see the module docs).
pub(crate) trait Part {
    /// When the part must act on its own next (`None`: only when an event
    /// or another part calls on it).
    fn next_wake(&self) -> Option<Cycle>;

    /// Writes every value that decides the part's future (see
    /// [`crate::steady`]).
    fn shape(&self, s: &mut Shape);

    /// Moves every time of the steady state `dt` later; `from` is the cycle
    /// the jump's period started at (what happened before it is history and
    /// stays).
    fn shift(&mut self, from: Cycle, dt: Cycle);
}

/// The shape of `part` taken at `now`, as words (for tests of the shape rule).
#[cfg(test)]
pub(crate) fn shape_words<P: Part>(part: &P, now: Cycle) -> Vec<u64> {
    let mut s = Shape::new(now, Vec::new(), 0);
    part.shape(&mut s);
    s.finish();
    s.words
}

/// The shape rule for one perturbation: `b` is `a` with one field changed.
/// Either their shapes (at `now`) differ, or their futures — what `drive`
/// returns when run on a copy of each — are alike. Returns which case held,
/// so that a test can also say which one it expects.
#[cfg(test)]
pub(crate) fn rule_holds<P: Part + Clone, O: PartialEq + std::fmt::Debug>(
    a: &P,
    b: &P,
    now: Cycle,
    drive: impl Fn(&mut P) -> O,
) -> RuleCase {
    if shape_words(a, now) != shape_words(b, now) {
        return RuleCase::ShapesDiffer;
    }
    let (fa, fb) = (drive(&mut a.clone()), drive(&mut b.clone()));
    assert_eq!(
        fa, fb,
        "the shape rule is broken: equal shapes, different futures"
    );
    RuleCase::SameFuture
}

/// Which side of the shape rule a perturbation fell on (see [`rule_holds`]).
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RuleCase {
    /// The field is in the shape: the states are not taken for each other.
    ShapesDiffer,
    /// The field is out of the shape and does not change the future.
    SameFuture,
}

/// A field left out of the shape on purpose does change the future: the
/// shapes of `a` and `b` are equal and their futures differ, which is why the
/// jump handles that field itself (progress, a boundary). Returns the two
/// futures for the test to look at.
#[cfg(test)]
pub(crate) fn left_out_but_decides<P: Part + Clone, O: PartialEq + std::fmt::Debug>(
    a: &P,
    b: &P,
    now: Cycle,
    drive: impl Fn(&mut P) -> O,
) -> (O, O) {
    assert_eq!(
        shape_words(a, now),
        shape_words(b, now),
        "the field is in the shape"
    );
    let (fa, fb) = (drive(&mut a.clone()), drive(&mut b.clone()));
    assert_ne!(fa, fb, "the field left out does not change the future");
    (fa, fb)
}

/// A named perturbation of one field of a part (for tests of the shape rule).
#[cfg(test)]
pub(crate) type Perturb<P> = (&'static str, fn(&mut P));

/// Every perturbation of `decide` changes a field that is in the shape.
#[cfg(test)]
pub(crate) fn each_in_shape<P: Part + Clone, O: PartialEq + std::fmt::Debug>(
    a: &P,
    now: Cycle,
    drive: impl Fn(&mut P) -> O,
    decide: &[Perturb<P>],
) {
    for (field, perturb) in decide {
        let mut b = a.clone();
        perturb(&mut b);
        assert_eq!(
            rule_holds(a, &b, now, &drive),
            RuleCase::ShapesDiffer,
            "{field}"
        );
    }
}
