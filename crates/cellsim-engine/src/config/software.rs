//! Settings of the software the experiments run on a machine, kept in the
//! machine file so that a model variant of the software is selected and
//! scored like one of the hardware (`--set messaging.dma_wait=each`).
//!
//! The engine only checks them; the programs read them from the control
//! blocks their PPE side writes (`cellsim.messaging`).

use serde::Deserialize;

/// Keller and Varbanescu's message-passing library (`[messaging]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagingParams {
    /// When the library waits for its DMAs (a model variant:
    /// `[variants.library_dma_wait]`).
    #[serde(default)]
    pub dma_wait: DmaWait,
    /// When the library waits between two passes of its loop (a model
    /// variant: `[variants.library_polling]`).
    #[serde(default)]
    pub polling: Polling,
    /// The wait after every pass, ns, when `polling = "every_pass"`.
    #[serde(default = "pass_delay_ns_default")]
    pub pass_delay_ns: f64,
}

fn pass_delay_ns_default() -> f64 {
    100.0
}

/// When the library waits between two passes of its loop (`messaging.polling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polling {
    /// Only after a pass that found nothing to do (its idle wait).
    #[default]
    OnIdle,
    /// After every pass: a delay loop of `pass_delay_ns` between two polls
    /// ("from time to time"), besides the idle wait.
    EveryPass,
}

/// When the library waits for the DMAs it issues (`messaging.dma_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DmaWait {
    /// The packet gets of a poll are issued together and waited for once;
    /// notification and acknowledgement puts are not waited for.
    #[default]
    Batched,
    /// Every DMA is waited for before the library goes on: each packet get,
    /// each notification and each acknowledgement put.
    Each,
}
