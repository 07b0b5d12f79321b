//! Signal notification: two 32-bit registers per SPE.
//!
//! Each register is in overwrite mode (a write replaces the value) or OR
//! mode (writes are ORed together, so many senders can each set their own
//! bit: a cheap gather). The SPU's read blocks until the register is
//! non-empty, returns its value and clears it (architecture notes).

/// How a register combines writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignalMode {
    /// A write replaces the value.
    #[default]
    Overwrite,
    /// Writes are ORed into the value.
    Or,
}

/// One SPE's two signal-notification registers.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    value: [u32; 2],
    pending: [bool; 2],
    /// Mode of Sig_Notify_1 and Sig_Notify_2.
    pub mode: [SignalMode; 2],
}

impl Signals {
    /// A write to register `which` (0 or 1) arrives.
    pub fn deliver(&mut self, which: usize, v: u32) {
        self.value[which] = match self.mode[which] {
            SignalMode::Overwrite => v,
            SignalMode::Or => self.value[which] | v,
        };
        self.pending[which] = true;
    }

    /// The SPU reads register `which`: its value, cleared, if anything arrived.
    pub fn read(&mut self, which: usize) -> Option<u32> {
        if !self.pending[which] {
            return None;
        }
        self.pending[which] = false;
        Some(std::mem::take(&mut self.value[which]))
    }

    /// Forgets any pending signal (a new program starts); keeps the modes.
    pub fn clear(&mut self) {
        self.value = [0; 2];
        self.pending = [false; 2];
    }

    /// Channel count: 1 when a signal is waiting.
    pub fn count(&self, which: usize) -> u32 {
        self.pending[which] as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn or_mode_gathers_and_reading_clears() {
        let mut s = Signals {
            mode: [SignalMode::Or, SignalMode::Overwrite],
            ..Default::default()
        };
        s.deliver(0, 1 << 3);
        s.deliver(0, 1 << 5);
        assert_eq!(s.read(0), Some(0b10_1000));
        assert_eq!(s.read(0), None);
        s.deliver(1, 4);
        s.deliver(1, 9);
        assert_eq!(s.read(1), Some(9));
    }
}
