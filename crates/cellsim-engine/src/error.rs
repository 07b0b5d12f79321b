//! Errors: what a run can end with, and why.
//!
//! One enum per area ([`ConfigError`], [`MfcError`]) and one top-level
//! [`SimError`]. Each message is a sentence naming the unit, the value and the
//! rule it broke, so the Python layer and the CLI can show it as is.

use crate::time::Cycle;
use std::fmt;

/// A machine configuration that cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The machine name is neither a shipped preset nor a readable file.
    #[error("unknown machine '{name}': known machines are {known}")]
    UnknownMachine {
        /// The name given.
        name: String,
        /// The shipped presets, comma separated.
        known: String,
    },
    /// The TOML text does not parse or does not match the schema.
    #[error("machine file {source_name}: {message}")]
    Parse {
        /// File name or preset name.
        source_name: String,
        /// The parser's message.
        message: String,
    },
    /// A parameter has a value outside its valid range.
    #[error("machine parameter {key} = {value}: {rule}")]
    Invalid {
        /// Dotted key, e.g. `eib.command_phase_bus_cycles`.
        key: String,
        /// The offending value.
        value: String,
        /// The rule it broke.
        rule: String,
    },
}

/// The kinds of MFC error: stable identifiers for programs and docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MfcErrorKind {
    /// Transfer size not 1, 2, 4, 8 or a multiple of 16 up to 16 KB.
    Size,
    /// Addresses not aligned as the size requires, or LS and EA low bits differ.
    Alignment,
    /// The local-store range runs past the end of the local store.
    LsRange,
    /// Tag group above 31.
    Tag,
    /// The effective address maps to nothing.
    Unmapped,
    /// Unknown or unsupported command opcode.
    Opcode,
    /// A DMA list is malformed (size, alignment, element count).
    List,
    /// An atomic command used wrongly (e.g. putllc without a reservation).
    Atomic,
    /// A local-store allocation does not fit.
    LsOverflow,
    /// A channel was used wrongly (e.g. a blocking read with an empty mask).
    Channel,
}

impl MfcErrorKind {
    /// The stable short name of this kind (`"size"`, `"alignment"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            MfcErrorKind::Size => "size",
            MfcErrorKind::Alignment => "alignment",
            MfcErrorKind::LsRange => "ls_range",
            MfcErrorKind::Tag => "tag",
            MfcErrorKind::Unmapped => "unmapped",
            MfcErrorKind::Opcode => "opcode",
            MfcErrorKind::List => "list",
            MfcErrorKind::Atomic => "atomic",
            MfcErrorKind::LsOverflow => "ls_overflow",
            MfcErrorKind::Channel => "channel",
        }
    }

    /// Every kind, for the documentation's error catalogue.
    pub const ALL: [MfcErrorKind; 10] = [
        MfcErrorKind::Size,
        MfcErrorKind::Alignment,
        MfcErrorKind::LsRange,
        MfcErrorKind::Tag,
        MfcErrorKind::Unmapped,
        MfcErrorKind::Opcode,
        MfcErrorKind::List,
        MfcErrorKind::Atomic,
        MfcErrorKind::LsOverflow,
        MfcErrorKind::Channel,
    ];

    /// What the rule is, in one line (for the error catalogue).
    pub fn rule(self) -> &'static str {
        match self {
            MfcErrorKind::Size => "transfer sizes are 1, 2, 4, 8 bytes or a multiple of 16 bytes up to 16384",
            MfcErrorKind::Alignment => {
                "1-8 byte transfers are naturally aligned; larger ones 16-byte aligned with equal low 4 bits of LS and EA"
            }
            MfcErrorKind::LsRange => "the local-store range must lie inside the 256 KB local store",
            MfcErrorKind::Tag => "tag groups are 0 to 31",
            MfcErrorKind::Unmapped => "the effective address must fall in main memory or a mapped local store",
            MfcErrorKind::Opcode => "the command opcode must be one the MFC implements",
            MfcErrorKind::List => "a DMA list has 1 to 2048 8-byte elements, each a valid transfer",
            MfcErrorKind::Atomic => "atomic commands move one 128-byte lock line, 128-byte aligned",
            MfcErrorKind::LsOverflow => "local-store allocations must fit in the local store",
            MfcErrorKind::Channel => "blocking channel reads need something that can satisfy them",
        }
    }
}

/// A command the real MFC would reject, raised in the issuing program.
#[derive(Debug, Clone, PartialEq)]
pub struct MfcError {
    /// Which rule was broken.
    pub kind: MfcErrorKind,
    /// Logical SPE number of the issuing program (`None` for the PPE).
    pub spe: Option<u32>,
    /// Simulated cycle of the issue.
    pub cycle: Cycle,
    /// The command as the SDK would spell it, e.g. `mfc_get(ls=0x100, ea=0x3, size=16, tag=2)`.
    pub command: String,
    /// The sentence explaining the violation.
    pub message: String,
}

impl fmt::Display for MfcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.spe {
            Some(s) => format!("SPE {s}"),
            None => "PPE".to_string(),
        };
        write!(
            f,
            "MFC error on {who} at cycle {}: {}: {}",
            self.cycle, self.command, self.message
        )
    }
}

impl std::error::Error for MfcError {}

/// One program that cannot make progress, for the deadlock report.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocked {
    /// The program, e.g. `SPE 3` or `PPE thread 0`.
    pub who: String,
    /// The call it is blocked in, e.g. `mfc_read_tag_status_all(mask=0x4)`.
    pub waits_on: String,
    /// Cycle at which it blocked.
    pub since: Cycle,
}

/// What one unfinished program was doing when a run was stopped, for the
/// livelock report.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// The program, e.g. `SPE 3 (physical 5)`.
    pub who: String,
    /// What it was doing, e.g. `polling spu_readchcnt(spu_read_in_mbox) (80000 times since cycle 12)`.
    pub doing: String,
}

/// Why a run stopped without finishing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A bad machine configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A command the MFC rejects. Raised in the issuing program at the call.
    #[error(transparent)]
    Mfc(#[from] MfcError),
    /// Every live program is blocked and nothing is in flight. Fatal.
    #[error("deadlock at cycle {cycle}: {}", describe_blocked(.blocked))]
    Deadlock {
        /// Cycle at which the chip went idle.
        cycle: Cycle,
        /// Who waits on what.
        blocked: Vec<Blocked>,
    },
    /// The run passed its simulated-time limit. Fatal.
    #[error("simulated-time limit reached: {limit} cycles ({limit_ns:.0} ns) passed and {running} program(s) still running; raise the limit (time_limit) if the run is expected to be this long{}", describe_activity(.activity))]
    Runaway {
        /// The limit in cycles.
        limit: Cycle,
        /// The limit in nanoseconds.
        limit_ns: f64,
        /// Programs not finished.
        running: usize,
        /// What each unfinished program was doing.
        activity: Vec<Activity>,
    },
    /// The host stopped the run: its watchdog (a host-time limit, Ctrl-C) said so.
    #[error("{reason}; stopped at cycle {cycle}{}", describe_activity(.activity))]
    Stopped {
        /// Cycle at which the run stopped.
        cycle: Cycle,
        /// Why, as the watchdog said it.
        reason: String,
        /// What each unfinished program was doing.
        activity: Vec<Activity>,
    },
    /// A program misused the API in a way that is not an MFC rule.
    #[error("{0}")]
    Usage(String),
    /// A native program raced with its own DMA (the checker is on:
    /// [`crate::Machine::set_check_dma`]; see [`crate::dma_check`]).
    #[error("DMA hazard on SPE {spe}: {}", .hazard.message)]
    DmaHazard {
        /// Logical SPE of the program.
        spe: u32,
        /// What raced with what.
        hazard: Box<crate::dma_check::Hazard>,
    },
    /// An invariant of the model does not hold (a link or port overbooked):
    /// a bug in cellsim, found by `Machine::verify`.
    #[error("{0}")]
    Invariant(String),
}

fn describe_activity(a: &[Activity]) -> String {
    a.iter()
        .map(|x| format!("; {}: {}", x.who, x.doing))
        .collect()
}

fn describe_blocked(b: &[Blocked]) -> String {
    let parts: Vec<String> = b
        .iter()
        .map(|x| format!("{} waits in {} since cycle {}", x.who, x.waits_on, x.since))
        .collect();
    format!(
        "every program is blocked and nothing is in flight: {}",
        parts.join("; ")
    )
}
