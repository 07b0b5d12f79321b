//! Where the elements sit on the rings, and on which chip.
//!
//! Twelve elements attach to each chip's EIB through ramps in a fixed physical
//! order (architecture notes: PPE, SPE1, SPE3, SPE5, SPE7, IOIF1, IOIF0, SPE6,
//! SPE4, SPE2, SPE0, MIC, then back to the PPE). A blade has two chips joined
//! through their IOIF0 ramps by the Broadband Interface (Kistler et al. 2006: the BIF
//! "extends the multiprocessor network to connect both PPEs and all 16 SPEs
//! in a single coherent network"); both chips have the same layout.
//!
//! A [`Ramp`] names one ramp of the machine: chip `c`'s ramp at position `p`
//! is `Ramp(c << 4 | p)` (a shift, not a multiply: it is taken apart on every
//! bus request), so on a one-chip machine a ramp is its position. The rings of a chip only know positions ([`Ramp::local`]); data
//! moves clockwise (increasing position) or counter-clockwise, always the
//! short way round. Physical SPE `n` of the machine is SPE `n % 8` of chip
//! `n / 8`, as Linux numbers the SPEs of a blade.

use crate::config::MachineConfig;

/// Number of ramps on one chip's EIB.
pub const RAMPS: usize = 12;
/// Most chips in one machine (a blade).
pub const MAX_CHIPS: usize = 2;
/// SPEs on one chip.
pub const SPES_PER_CHIP: usize = 8;
/// Indices a [`Ramp`] of the machine takes ([`Ramp::idx`] is below it).
pub const RAMP_INDICES: usize = MAX_CHIPS << CHIP_SHIFT;
const CHIP_SHIFT: u32 = 4;

/// A ramp of the machine: `chip << 4 | position` (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ramp(pub u8);

impl Ramp {
    /// The ramp as a `usize` index over the whole machine (below [`RAMP_INDICES`]).
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }

    /// The chip it is on.
    #[inline]
    pub fn chip(self) -> usize {
        (self.0 >> CHIP_SHIFT) as usize
    }

    /// Its position on its chip's rings (the ramp of the same position on chip 0).
    #[inline]
    pub fn local(self) -> Ramp {
        Ramp(self.0 & ((1 << CHIP_SHIFT) - 1))
    }

    /// The ramp at `position` on `chip`.
    #[inline]
    pub fn on_chip(chip: usize, position: Ramp) -> Ramp {
        Ramp(((chip as u8) << CHIP_SHIFT) | position.0)
    }
}

/// What is attached to a ramp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    /// The PowerPC processor element (its L2 and BIU).
    Ppe,
    /// A synergistic processor element, by physical number on its chip (0..8).
    Spe(u8),
    /// The memory interface controller.
    Mic,
    /// I/O interface 0 (coherent BIF to a second Cell) or 1.
    Ioif(u8),
}

impl Element {
    /// Parses a ramp name from a machine file.
    pub fn parse(name: &str) -> Option<Element> {
        match name {
            "PPE" => Some(Element::Ppe),
            "MIC" => Some(Element::Mic),
            "IOIF0" => Some(Element::Ioif(0)),
            "IOIF1" => Some(Element::Ioif(1)),
            s => s
                .strip_prefix("SPE")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|&n| (n as usize) < SPES_PER_CHIP)
                .map(Element::Spe),
        }
    }

    /// The name used in machine files and reports.
    pub fn name(self) -> String {
        match self {
            Element::Ppe => "PPE".into(),
            Element::Mic => "MIC".into(),
            Element::Ioif(i) => format!("IOIF{i}"),
            Element::Spe(n) => format!("SPE{n}"),
        }
    }
}

/// Direction of travel around the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Increasing ramp index.
    Clockwise,
    /// Decreasing ramp index.
    CounterClockwise,
}

/// The physical layout: which element is on which ramp of each chip.
#[derive(Debug, Clone)]
pub struct Topology {
    chips: usize,
    elements: [Element; RAMPS],
    spe_ramp: [Ramp; SPES_PER_CHIP],
    mic: Ramp,
    ppe: Ramp,
    ioif0: Ramp,
}

impl Topology {
    /// Builds the layout from a validated machine configuration.
    pub fn new(cfg: &MachineConfig) -> Topology {
        let mut elements = [Element::Ppe; RAMPS];
        let mut spe_ramp = [Ramp(0); SPES_PER_CHIP];
        let (mut mic, mut ppe, mut ioif0) = (Ramp(0), Ramp(0), Ramp(0));
        for (i, name) in cfg.ramps.iter().enumerate() {
            let e = Element::parse(name).expect("validated ramp names");
            elements[i] = e;
            match e {
                Element::Spe(n) => spe_ramp[n as usize] = Ramp(i as u8),
                Element::Mic => mic = Ramp(i as u8),
                Element::Ppe => ppe = Ramp(i as u8),
                Element::Ioif(0) => ioif0 = Ramp(i as u8),
                Element::Ioif(_) => {}
            }
        }
        Topology {
            chips: cfg.chips as usize,
            elements,
            spe_ramp,
            mic,
            ppe,
            ioif0,
        }
    }

    /// Chips in the machine.
    #[inline]
    pub fn chips(&self) -> usize {
        self.chips
    }

    /// The element on a ramp (an SPE by its number on its chip).
    #[inline]
    pub fn element(&self, r: Ramp) -> Element {
        self.elements[r.local().idx()]
    }

    /// The machine-wide physical SPE number on ramp `r`, if an SPE is there.
    #[inline]
    pub fn spe_at(&self, r: Ramp) -> Option<u8> {
        match self.element(r) {
            Element::Spe(n) => Some((r.chip() * SPES_PER_CHIP) as u8 + n),
            _ => None,
        }
    }

    /// The ramp of physical SPE `n` of the machine.
    #[inline]
    pub fn spe(&self, n: u8) -> Ramp {
        let (chip, k) = (n as usize / SPES_PER_CHIP, n as usize % SPES_PER_CHIP);
        Ramp::on_chip(chip, self.spe_ramp[k])
    }

    /// The memory controller's ramp on `chip`.
    #[inline]
    pub fn mic(&self, chip: usize) -> Ramp {
        Ramp::on_chip(chip, self.mic)
    }

    /// The PPE's ramp on `chip`.
    #[inline]
    pub fn ppe(&self, chip: usize) -> Ramp {
        Ramp::on_chip(chip, self.ppe)
    }

    /// IOIF0's ramp on `chip`: where the BIF to the other chip attaches.
    #[inline]
    pub fn ioif0(&self, chip: usize) -> Ramp {
        Ramp::on_chip(chip, self.ioif0)
    }

    /// A name for ramp `r`: the element's, with its chip on a blade
    /// (`SPE3`, `chip1 MIC`, physical SPEs numbered over the machine).
    pub fn name(&self, r: Ramp) -> String {
        let e = match self.spe_at(r) {
            Some(n) => format!("SPE{n}"),
            None => self.element(r).name(),
        };
        if self.chips > 1 && self.spe_at(r).is_none() {
            format!("chip{} {e}", r.chip())
        } else {
            e
        }
    }

    /// Hops and direction of the shortest path from `src` to `dst`, two
    /// positions on one chip. At exactly half-way (6 hops) both directions
    /// are as short; `None` is returned as direction so the arbiter may use
    /// any ring.
    #[inline]
    pub fn route(src: Ramp, dst: Ramp) -> (u32, Option<Direction>) {
        let (src, dst) = (src.local(), dst.local());
        let cw = (dst.0 as i32 - src.0 as i32).rem_euclid(RAMPS as i32) as u32;
        let ccw = RAMPS as u32 - cw;
        if cw < ccw {
            (cw, Some(Direction::Clockwise))
        } else if ccw < cw {
            (ccw, Some(Direction::CounterClockwise))
        } else {
            (cw, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qs20_layout_matches_the_published_order() {
        let cfg = MachineConfig::load("qs20-1chip", &[]).unwrap();
        let t = Topology::new(&cfg);
        assert_eq!(t.ppe(0), Ramp(0));
        assert_eq!(t.mic(0), Ramp(11));
        assert_eq!(t.spe(1), Ramp(1));
        assert_eq!(t.spe(0), Ramp(10));
        assert_eq!(t.element(Ramp(6)), Element::Ioif(0));
        assert_eq!(t.ioif0(0), Ramp(6));
    }

    #[test]
    fn the_second_chip_repeats_the_layout() {
        let cfg = MachineConfig::load("qs20", &[]).unwrap();
        let t = Topology::new(&cfg);
        assert_eq!(t.chips(), 2);
        assert_eq!(t.spe(9), Ramp(16 + 1));
        assert_eq!(t.spe(8).chip(), 1);
        assert_eq!(t.spe(8).local(), t.spe(0));
        assert_eq!(t.spe_at(t.spe(13)), Some(13));
        assert_eq!(t.mic(1), Ramp(16 + 11));
        assert_eq!(t.name(t.mic(1)), "chip1 MIC");
        assert_eq!(t.name(t.spe(12)), "SPE12");
    }

    #[test]
    fn routes_take_the_short_way() {
        assert_eq!(
            Topology::route(Ramp(0), Ramp(3)),
            (3, Some(Direction::Clockwise))
        );
        assert_eq!(
            Topology::route(Ramp(1), Ramp(10)),
            (3, Some(Direction::CounterClockwise))
        );
        assert_eq!(Topology::route(Ramp(2), Ramp(8)), (6, None));
        for a in 0..12u8 {
            for b in 0..12u8 {
                assert!(Topology::route(Ramp(a), Ramp(b)).0 <= 6);
            }
        }
    }
}
