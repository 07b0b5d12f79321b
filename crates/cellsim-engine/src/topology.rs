//! Where the elements sit on the rings.
//!
//! Twelve elements attach to the EIB through ramps in a fixed physical order
//! (architecture notes: PPE, SPE1, SPE3, SPE5, SPE7, IOIF1, IOIF0, SPE6, SPE4,
//! SPE2, SPE0, MIC, then back to the PPE). A [`Ramp`] is a position in that
//! order; data moves clockwise (increasing ramp index) or counter-clockwise,
//! always the short way round.

use crate::config::MachineConfig;

/// Number of ramps on the EIB.
pub const RAMPS: usize = 12;

/// A position on the rings, 0..12 in physical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ramp(pub u8);

impl Ramp {
    /// The ramp index as a `usize`.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// What is attached to a ramp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    /// The PowerPC processor element (its L2 and BIU).
    Ppe,
    /// A synergistic processor element, by physical number 0..8.
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
                .filter(|&n| n < 8)
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

/// The physical layout: which element is on which ramp.
#[derive(Debug, Clone)]
pub struct Topology {
    elements: [Element; RAMPS],
    spe_ramp: [Ramp; 8],
    mic: Ramp,
    ppe: Ramp,
}

impl Topology {
    /// Builds the layout from a validated machine configuration.
    pub fn new(cfg: &MachineConfig) -> Topology {
        let mut elements = [Element::Ppe; RAMPS];
        let mut spe_ramp = [Ramp(0); 8];
        let (mut mic, mut ppe) = (Ramp(0), Ramp(0));
        for (i, name) in cfg.ramps.iter().enumerate() {
            let e = Element::parse(name).expect("validated ramp names");
            elements[i] = e;
            match e {
                Element::Spe(n) => spe_ramp[n as usize] = Ramp(i as u8),
                Element::Mic => mic = Ramp(i as u8),
                Element::Ppe => ppe = Ramp(i as u8),
                Element::Ioif(_) => {}
            }
        }
        Topology {
            elements,
            spe_ramp,
            mic,
            ppe,
        }
    }

    /// The element on a ramp.
    #[inline]
    pub fn element(&self, r: Ramp) -> Element {
        self.elements[r.idx()]
    }

    /// The ramp of physical SPE `n`.
    #[inline]
    pub fn spe(&self, n: u8) -> Ramp {
        self.spe_ramp[n as usize]
    }

    /// The memory controller's ramp.
    #[inline]
    pub fn mic(&self) -> Ramp {
        self.mic
    }

    /// The PPE's ramp.
    #[inline]
    pub fn ppe(&self) -> Ramp {
        self.ppe
    }

    /// The ramp of an element.
    pub fn ramp_of(&self, e: Element) -> Ramp {
        Ramp(
            self.elements
                .iter()
                .position(|&x| x == e)
                .expect("every element is on a ramp") as u8,
        )
    }

    /// Hops and direction of the shortest path from `src` to `dst`. At exactly
    /// half-way (6 hops) both directions are as short; `None` is returned as
    /// direction so the arbiter may use any ring.
    #[inline]
    pub fn route(src: Ramp, dst: Ramp) -> (u32, Option<Direction>) {
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
        let cfg = MachineConfig::load("qs20", &[]).unwrap();
        let t = Topology::new(&cfg);
        assert_eq!(t.ppe(), Ramp(0));
        assert_eq!(t.mic(), Ramp(11));
        assert_eq!(t.spe(1), Ramp(1));
        assert_eq!(t.spe(0), Ramp(10));
        assert_eq!(t.element(Ramp(6)), Element::Ioif(0));
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
