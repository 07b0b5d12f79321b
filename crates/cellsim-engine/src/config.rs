//! Machine configurations: one TOML file per machine.
//!
//! A machine is data, not code: the presets in `machines/*.toml` are compiled
//! into the engine, and any file with the same keys describes a new machine.
//! Unknown keys are errors (a typo must not silently fall back to a default).
//! [`MachineConfig::load`] accepts a preset name or a path; overrides are
//! `section.key=value` strings applied before validation, so a sweep over a
//! parameter needs no new file.

pub mod software;
pub mod variants;

use crate::error::ConfigError;
use crate::time::{bus, Clock, Cycle};
use serde::Deserialize;
use std::collections::BTreeMap;
pub use variants::{Choice, Status, Variant};

/// The machines shipped with the engine: (name, TOML text).
pub const PRESETS: &[(&str, &str)] = &[
    ("qs20-1chip", include_str!("../machines/qs20-1chip.toml")),
    ("qs20", include_str!("../machines/qs20.toml")),
    ("ps3", include_str!("../machines/ps3.toml")),
    ("qs22", include_str!("../machines/qs22.toml")),
    ("blade21", include_str!("../machines/blade21.toml")),
];

/// How logical SPE numbers (what software sees) map to physical SPEs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Placement {
    /// `"random"` (seeded shuffle, as libspe did), `"local"` (the same, chip 0's
    /// SPEs first) or `"identity"`.
    Named(String),
    /// Physical SPE number for each logical SPE.
    Explicit(Vec<u32>),
}

/// SPU parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpuParams {
    /// Local-store size in KB.
    pub ls_kb: u32,
    /// Local-store access latency seen by a DMA read or write, SPU cycles.
    pub ls_access_cycles: u64,
    /// Bytes at the bottom of the local store kept for program text and stack.
    pub ls_reserved_bytes: u32,
    /// Cost of one channel read or write, SPU cycles.
    pub channel_cycles: u64,
    /// SPU load latency from its own local store, cycles.
    pub ls_load_latency_cycles: u64,
    /// Odd-pipeline issue slots of a load narrower than 16 bytes (quadword load and rotate).
    pub ls_narrow_load_slots: u64,
    /// Odd-pipeline issue slots of a store narrower than 16 bytes (quadword
    /// load, shuffle control, shuffle, quadword store).
    pub ls_narrow_store_slots: u64,
    /// Local-store cycles a DMA bus request (up to 128 bytes) takes from the
    /// SPU's loads and stores.
    pub dma_ls_cycles: u64,
    /// Cycles between two double-precision SIMD instructions (issue rate of
    /// the DP pipeline). Read by the software's cost model (`cellsim.mpi`),
    /// not by the engine.
    pub dp_issue_cycles: u64,
    /// Cycles from a double-precision multiply-add's issue to the use of its
    /// result. Read by the software's cost model, not by the engine.
    pub dp_latency_cycles: u64,
}

/// MFC parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MfcParams {
    /// Entries in the SPU command queue.
    pub queue_depth: u32,
    /// Entries in the proxy command queue.
    pub proxy_queue_depth: u32,
    /// SPU cycles to issue a DMA (the channel writes).
    pub issue_cycles: u64,
    /// SPU cycles from enqueue to the first bus request at the command bus.
    pub to_eib_cycles: u64,
    /// SPU cycles to fetch one DMA-list element.
    pub list_element_cycles: u64,
    /// SPU cycles from the last bus request's completion to the tag status update.
    pub completion_cycles: u64,
    /// Bus cycles between two bus requests unrolled by the DMAC.
    pub unroll_bus_cycles: u64,
    /// SPU cycles between the starts of two commands (the DMAC's per-command set-up).
    pub command_cycles: u64,
    /// Latency of a problem-state register (mailbox, signal, MFC command
    /// registers) reached through the memory map, ns.
    pub mmio_access_ns: f64,
    /// Which command the DMAC unrolls each bus request from (a model
    /// variant: the machine file's `[variants.unroll]`).
    #[serde(default)]
    pub unroll: Unroll,
    /// Commands the DMAC unrolls in turn when `unroll = "turns"`.
    #[serde(default = "unroll_turns_default")]
    pub unroll_turns: u32,
    /// When the DMAC fetches a DMA list's elements, and whether each is
    /// reselected (a model variant: the machine file's `[variants.list_fetch]`).
    #[serde(default)]
    pub list_fetch: ListFetch,
}

impl MfcParams {
    /// Commands the DMAC unrolls in turn; 0: the oldest ready one first.
    pub fn turns(&self) -> u8 {
        match self.unroll {
            Unroll::Oldest => 0,
            Unroll::Turns => self.unroll_turns as u8,
        }
    }
}

fn unroll_turns_default() -> u32 {
    4
}

/// Which command the DMAC unrolls each bus request from (`mfc.unroll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unroll {
    /// The oldest ready command of the direction whose turn it is: a command
    /// is unrolled to its end before the next one starts.
    #[default]
    Oldest,
    /// Up to `mfc.unroll_turns` started commands of a direction take turns,
    /// one bus request each (Kumar et al. 2007: "DMA commands may be executed
    /// out-of-order").
    Turns,
}

/// When the DMAC fetches the elements of a DMA list (`mfc.list_fetch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListFetch {
    /// The next element is fetched while the current one unrolls: only the
    /// first pays the fetch.
    #[default]
    Ahead,
    /// Each element is fetched when the one before it is unrolled, and the
    /// list waits for it.
    Each,
    /// As `Ahead`, and each element after the first is reselected like a new
    /// command: it waits for and occupies the DMAC's command set-up.
    Reselect,
}

/// The Broadband Interface between the two chips of a blade (see [`crate::bif`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BifParams {
    /// Data bandwidth of each direction of the link, GB/s.
    pub link_gbs: f64,
    /// Latency of the link each way, ns. A coherent command's combined
    /// response waits for the other chip's snoop, two crossings, which runs
    /// while this chip snoops (see [`Timing::bif_snoop`]).
    pub link_latency_ns: f64,
}

/// How pages of main memory are placed on the chips' memories (see [`crate::numa`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumaPolicy {
    /// On the allocating thread's node (chip 0), falling back to the other.
    FirstTouch,
    /// Alternating between the nodes, page by page.
    Interleave,
    /// All on one node.
    Node(u8),
    /// This many per mille of the pages on node 1, chosen by a hash of the page.
    Weighted(u32),
}

impl NumaPolicy {
    /// Parses `first-touch`, `interleave`, `node0`, `node1`, `weighted:300`.
    pub fn parse(s: &str) -> Option<NumaPolicy> {
        match s {
            "first-touch" => Some(NumaPolicy::FirstTouch),
            "interleave" => Some(NumaPolicy::Interleave),
            _ => {
                if let Some(n) = s.strip_prefix("node") {
                    n.parse().ok().map(NumaPolicy::Node)
                } else {
                    let w: u32 = s.strip_prefix("weighted:")?.parse().ok()?;
                    (w <= 1000).then_some(NumaPolicy::Weighted(w))
                }
            }
        }
    }
}

/// Main memory pages and their placement.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaParams {
    /// Base page size of the kernel, KB (4 or 64; 16384 for huge pages throughout).
    pub page_kb: u64,
    /// The default placement policy (see [`NumaPolicy::parse`]).
    pub policy: String,
}

/// The MFC's TLB (see [`crate::mfc::tlb`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbParams {
    /// Entries (0: translation not modelled).
    pub entries: u32,
    /// Ways per set.
    pub ways: u32,
    /// What a miss holds its command, ns.
    pub miss_ns: f64,
}

/// PPE parameters: the PPU's two threads and its caches (see [`crate::ppu`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpeParams {
    /// L1 data cache, KB.
    pub l1_kb: u32,
    /// L1 data cache ways.
    pub l1_ways: u32,
    /// L2 cache, KB.
    pub l2_kb: u32,
    /// L2 ways.
    pub l2_ways: u32,
    /// Load-to-use latency of an L1 hit, cycles.
    pub l1_hit_cycles: u64,
    /// Cycles a 16-byte (VMX) load or store occupies the load/store unit (a scalar one: 1).
    pub vmx_access_cycles: u64,
    /// Loads per thread that may wait for L1 misses (load-miss queue entries).
    pub load_miss_entries: u32,
    /// An L1 miss that hits the L2: from the load to its line in the L1, cycles.
    pub l2_hit_cycles: u64,
    /// Width of each of the L2-to-L1 read bus and the L1-to-L2 write bus, bytes per cycle.
    pub l1_l2_bus_bytes_per_cycle: u32,
    /// Stores per thread between the L1 and the L2 (store-queue entries).
    pub store_queue_entries: u32,
    /// A store that hits the L2 holds its entry this long after crossing the write bus, cycles.
    pub l2_store_cycles: u64,
    /// L2 line fetches (misses and prefetches) in flight.
    pub l2_miss_machines: u32,
    /// Dirty lines on their way from the L2 to memory (castout-queue entries).
    pub castout_entries: u32,
    /// Lines the L2 fetches ahead of a stream of load misses.
    pub prefetch_lines: u32,
    /// Elements a copy loop loads before it stores them (the compiler's unrolling).
    pub copy_unroll: u32,
    /// spe_context_run: from the call to the SPE program's first instruction, ns.
    pub context_run_ns: f64,
}

/// Bus interface unit parameters (per element).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BiuParams {
    /// Unrolled bus requests that can wait for the command bus.
    pub queue_depth: u32,
    /// Bus requests in flight (accepted by the command bus, not complete).
    pub max_outstanding: u32,
    /// Whether a put's data waits in an outbound line buffer of its element
    /// (a model variant: see the machine file's `[variants.put_lines]`).
    #[serde(default)]
    pub put_flow: BiuPutFlow,
    /// Outbound line buffers for puts, when they need one.
    #[serde(default = "put_lines_default")]
    pub put_lines: u32,
}

fn put_lines_default() -> u32 {
    8
}

/// Whether a put's data needs an outbound line of its element (`biu.put_flow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BiuPutFlow {
    /// Puts go to the command bus like gets.
    #[default]
    None,
    /// A put holds one of `biu.put_lines` outbound lines from the command
    /// bus's acceptance until its data has left (see [`crate::eib::command_bus`]).
    Lines,
}

/// Element Interconnect Bus parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EibParams {
    /// Data rings in each direction.
    pub rings_per_direction: u32,
    /// Concurrent transfers a ring may carry (on disjoint segments).
    pub max_transfers_per_ring: u32,
    /// Minimum bus cycles between two transfer starts on one ring.
    pub ring_start_interval_bus_cycles: u64,
    /// Bus cycles for data to cross one ring segment.
    pub hop_bus_cycles: u64,
    /// Bytes per beat (ring and port width).
    pub beat_bytes: u32,
    /// Bus cycles of the command phase (snoop and combined response).
    pub command_phase_bus_cycles: u64,
    /// Ready transfers per element the data arbiter looks at (1 = FIFO head only).
    pub arbiter_window: u32,
    /// Bus cycles for a write acknowledgement to reach the requester.
    pub put_ack_bus_cycles: u64,
    /// Bus cycles a receiving port idles when its next transfer comes from
    /// another sender than its last one.
    pub recv_switch_bus_cycles: u64,
    /// The data arbiter serves the memory controller first (000: "the
    /// arbiter gives priority to requests coming from the memory
    /// controller"). Always on for the machines; `false` only isolates the
    /// mechanism (docs/messaging.md, "What costs per message"). Machine
    /// files written before it existed keep the priority.
    #[serde(default = "mic_priority_default")]
    pub mic_priority: bool,
    /// How a put's data waits for room at its receiver (a model variant:
    /// see the machine file's `[variants.put_flow]`).
    #[serde(default)]
    pub put_flow: PutFlow,
    /// Write buffers per receiving port when puts need a credit.
    #[serde(default = "put_credits_default")]
    pub put_credits: u32,
    /// Whether a command to a unit whose command queue is full gets a
    /// "retry" combined response (a model variant: the machine file's
    /// `[variants.command_retry]`).
    #[serde(default)]
    pub command_retry: CommandRetry,
    /// Commands an element other than the memory controller holds, from the
    /// command bus's acceptance until its data has left or arrived, when
    /// `command_retry = "target"`.
    #[serde(default = "target_queue_default")]
    pub target_queue: u32,
    /// Bus cycles a requester waits after a retry's combined response before
    /// it sends again.
    #[serde(default = "retry_backoff_default")]
    pub retry_backoff_bus_cycles: u64,
    /// How long the data arbiter takes to decide a grant (a model variant:
    /// the machine file's `[variants.grant_delay]`).
    #[serde(default)]
    pub grant_delay: GrantDelay,
    /// The decision's bus cycles (`grant_delay = "fixed"`), or per segment
    /// of the transfer's path (`"hops"`).
    #[serde(default = "grant_delay_default")]
    pub grant_delay_bus_cycles: u64,
    /// What a transfer whose ports are free but no ring's path is does (a
    /// model variant: the machine file's `[variants.ring_conflict]`).
    #[serde(default)]
    pub ring_conflict: RingConflict,
    /// With `ring_conflict = "rerequest"`, the bus cycles between a denied
    /// transfer's requests.
    #[serde(default = "rerequest_default")]
    pub rerequest_bus_cycles: u64,
    /// Which way a transfer exactly halfway round goes (a model variant:
    /// the machine file's `[variants.halfway]`).
    #[serde(default)]
    pub halfway: Halfway,
}

fn target_queue_default() -> u32 {
    8
}

fn retry_backoff_default() -> u64 {
    16
}

fn grant_delay_default() -> u64 {
    1
}

fn rerequest_default() -> u64 {
    8
}

/// What a transfer denied a ring does (`eib.ring_conflict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RingConflict {
    /// It stays with the arbiter and starts as soon as a path is free.
    #[default]
    Wait,
    /// It asks again every `eib.rerequest_bus_cycles`, and starts at the
    /// first request that finds a path free.
    Rerequest,
}

/// Whether a command whose target's queue is full is retried (`eib.command_retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandRetry {
    /// Every command is accepted (the targets' queues never fill).
    #[default]
    None,
    /// Each element but the memory controller holds `eib.target_queue`
    /// commands until its data has moved; one more gets a retry and is sent
    /// again after `eib.retry_backoff_bus_cycles` (see [`crate::eib::retry`]).
    Target,
    /// The same with a snoop queue: a command holds its slot only until
    /// the combined response.
    Snoop,
    /// As `Target`, with a read queue and a write queue per element, each
    /// `eib.target_queue` deep.
    Split,
}

/// The data arbiter's decision time (`eib.grant_delay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrantDelay {
    /// A transfer may be granted as soon as its data is ready.
    #[default]
    None,
    /// `eib.grant_delay_bus_cycles` after its data is ready.
    Fixed,
    /// `eib.grant_delay_bus_cycles` per segment of its path after its data is ready.
    Hops,
}

/// Which way a transfer exactly halfway round the ring goes (`eib.halfway`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Halfway {
    /// Either: the first ring of the four whose path is free.
    #[default]
    Either,
    /// Always clockwise.
    Clockwise,
    /// Clockwise from an even ramp, counter-clockwise from an odd one.
    BySource,
}

fn mic_priority_default() -> bool {
    true
}

fn put_credits_default() -> u32 {
    4
}

/// How a put's data waits for room at its receiver (`eib.put_flow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PutFlow {
    /// The receiver always has room: data moves when the rings allow.
    #[default]
    None,
    /// Each receiving port has `eib.put_credits` line buffers; a put's data
    /// moves only into a free one (see [`crate::eib::inbound`]).
    Credits,
}

/// Memory interface controller and DRAM parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicParams {
    /// DRAM bandwidth, reads and writes together, GB/s.
    pub dram_gbs: f64,
    /// DRAM read latency from admission to data ready, ns.
    pub dram_latency_ns: f64,
    /// DRAM requests in progress per requesting element (its window).
    pub reads_per_requester: u32,
    /// Writes take slots of the requester's window too (else only reads do).
    pub window_counts_writes: bool,
    /// 128-byte write buffers in the MIC.
    pub write_buffer_lines: u32,
    /// Average interval between two DRAM refreshes, ns.
    pub refresh_interval_ns: f64,
    /// How long one refresh keeps the DRAM busy, ns (0: no refresh).
    pub refresh_ns: f64,
    /// Bus cycles after the command bus at which the MIC sees a command.
    pub snoop_bus_cycles: u64,
    /// Bus cycles to take write data into a buffer before acknowledging it.
    pub accept_bus_cycles: u64,
    /// The DRAM's organisation (a model variant: `[variants.dram_banks]`).
    #[serde(default)]
    pub dram: Dram,
    /// Banks, when `dram = "banks"` (lines interleaved over them).
    #[serde(default = "banks_default")]
    pub banks: u32,
    /// Bytes of a bank's row (one open per bank), when `dram = "banks"`.
    #[serde(default = "row_bytes_default")]
    pub row_bytes: u32,
    /// Closing a bank's open row and opening another, ns, when `dram = "banks"`.
    #[serde(default = "row_miss_ns_default")]
    pub row_miss_ns: f64,
    /// Whether the data bus pays for turning between reads and writes
    /// (a model variant: `[variants.rw_turnaround]`).
    #[serde(default)]
    pub turnaround: Turnaround,
    /// The turn's idle time, ns, when `turnaround = "gap"`.
    #[serde(default = "turnaround_ns_default")]
    pub turnaround_ns: f64,
    /// What a write of less than a line costs the DRAM (a model variant:
    /// `[variants.partial_write]`).
    #[serde(default)]
    pub partial_write: PartialWrite,
    /// When the write buffers drain into DRAM (a model variant:
    /// `[variants.write_drain]`).
    #[serde(default)]
    pub write_drain: WriteDrain,
    /// Writes held before a batch drains, when `write_drain = "batch"`.
    #[serde(default = "drain_lines_default")]
    pub drain_lines: u32,
    /// Whether a read's latency varies from access to access (a model
    /// variant: `[variants.latency_noise]`).
    #[serde(default)]
    pub latency_noise: LatencyNoise,
    /// The width of a read's latency noise, ns, centred on `dram_latency_ns`,
    /// when `latency_noise = "uniform"`.
    #[serde(default = "latency_noise_ns_default")]
    pub latency_noise_ns: f64,
    /// What the memory controller does with a command when it already holds
    /// `command_slots` (a model variant: `[variants.mic_queue]`).
    #[serde(default)]
    pub queue_full: QueueFull,
    /// Commands the memory controller holds, from the command bus's
    /// acceptance until their data has left it (a read) or arrived (a
    /// write), when `queue_full = "retry"`.
    #[serde(default = "command_slots_default")]
    pub command_slots: u32,
}

/// What a write of less than a 128-byte line costs the DRAM (`mic.partial_write`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartialWrite {
    /// Its own bytes' burst, like any write.
    #[default]
    Posted,
    /// Read-modify-write: the line is read, merged and written back whole.
    Rmw,
}

fn banks_default() -> u32 {
    8
}

fn row_bytes_default() -> u32 {
    2048
}

fn row_miss_ns_default() -> f64 {
    20.0
}

fn turnaround_ns_default() -> f64 {
    5.0
}

fn drain_lines_default() -> u32 {
    8
}

fn command_slots_default() -> u32 {
    64
}

fn latency_noise_ns_default() -> f64 {
    10.0
}

/// Whether a DRAM read's latency varies from access to access (`mic.latency_noise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyNoise {
    /// Every read takes `mic.dram_latency_ns`.
    #[default]
    None,
    /// Each read's latency is drawn uniformly from `mic.dram_latency_ns` give
    /// or take half of `mic.latency_noise_ns` (the machine's seed, its own stream).
    Uniform,
}

/// The DRAM's organisation (`mic.dram`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dram {
    /// One data bus; every access costs its burst after the latency.
    #[default]
    Flat,
    /// Banks with one open row each; a row miss costs `mic.row_miss_ns` first.
    Banks,
}

/// What the memory controller does with a command it has no room for (`mic.queue_full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueFull {
    /// Every command is accepted (its reads wait in the requester's window).
    #[default]
    Accept,
    /// A command that finds `mic.command_slots` held is answered "retry";
    /// its requester backs off `eib.retry_backoff_bus_cycles` (see
    /// [`crate::eib::retry`]).
    Retry,
}

/// Whether the DRAM data bus pays to turn between reads and writes (`mic.turnaround`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Turnaround {
    /// Reads and writes follow each other back to back.
    #[default]
    None,
    /// The bus idles `mic.turnaround_ns` at each change of direction.
    Gap,
}

/// When the MIC's write buffers drain into DRAM (`mic.write_drain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteDrain {
    /// Each write takes the data bus in the order it arrives.
    #[default]
    Arrival,
    /// Reads first: a write arriving while the bus is busy waits in its
    /// buffer until `mic.drain_lines` have gathered (or the buffers run out),
    /// and they drain together; a write that finds the bus idle drains at once.
    Batch,
}

/// A whole machine, as read from its TOML file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Short name (`qs20`).
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// Core clock, GHz.
    pub core_ghz: f64,
    /// Decrementer (timebase) frequency, MHz.
    pub timebase_mhz: f64,
    /// Main memory size, MB (split evenly over the chips' memories).
    pub memory_mb: u64,
    /// Chips (1, or 2 for a blade joined by the BIF).
    #[serde(default = "one")]
    pub chips: u32,
    /// Element names in physical ramp order.
    pub ramps: Vec<String>,
    /// Physical SPE numbers available to software.
    pub spes: Vec<u32>,
    /// Logical-to-physical SPE placement policy.
    pub placement: Placement,
    /// SPU section.
    pub spu: SpuParams,
    /// MFC section.
    pub mfc: MfcParams,
    /// BIU section.
    pub biu: BiuParams,
    /// EIB section.
    pub eib: EibParams,
    /// MIC section.
    pub mic: MicParams,
    /// PPE section.
    pub ppe: PpeParams,
    /// Memory pages and their placement.
    pub numa: NumaParams,
    /// The MFC's address translation.
    pub tlb: TlbParams,
    /// The link between the chips, on a two-chip machine.
    #[serde(default)]
    pub bif: Option<BifParams>,
    /// The model's variants: mechanisms no source fixes, each with its
    /// candidate forms (see [`variants`]), by name.
    #[serde(default)]
    pub variants: BTreeMap<String, Variant>,
    /// The message-passing library's settings (software, checked here).
    #[serde(default)]
    pub messaging: software::MessagingParams,
}

fn one() -> u32 {
    1
}

/// Derived timing in SPU cycles, computed once from a [`MachineConfig`].
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Core clock.
    pub clock: Clock,
    /// SPU cycles per decrementer tick.
    pub cycles_per_tick: f64,
    /// Local store size in bytes.
    pub ls_bytes: u32,
    /// LS access latency, cycles.
    pub ls_access: Cycle,
    /// Channel read/write, cycles.
    pub channel: Cycle,
    /// DMA issue, cycles.
    pub issue: Cycle,
    /// Enqueue to first request at the command bus, cycles.
    pub to_eib: Cycle,
    /// List element fetch, cycles.
    pub list_element: Cycle,
    /// When list elements are fetched (variant `mfc.list_fetch`).
    pub list_fetch: ListFetch,
    /// Last request done to tag status update, cycles.
    pub completion: Cycle,
    /// Between two unrolled requests, cycles.
    pub unroll: Cycle,
    /// Between two command starts, cycles.
    pub command: Cycle,
    /// Problem-state register access, cycles.
    pub mmio_access: Cycle,
    /// spe_context_run start-up, cycles.
    pub context_run: Cycle,
    /// Command phase, cycles.
    pub command_phase: Cycle,
    /// Per segment, cycles.
    pub hop: Cycle,
    /// Per 16-byte beat, cycles.
    pub beat: Cycle,
    /// Between transfer starts on one ring, cycles.
    pub ring_start_interval: Cycle,
    /// Write acknowledgement, cycles.
    pub put_ack: Cycle,
    /// A receiving port's gap when it changes sender, cycles.
    pub recv_switch: Cycle,
    /// A retried command's back-off after its combined response, cycles
    /// (variant `eib.command_retry`).
    pub retry_backoff: Cycle,
    /// The data arbiter's decision, cycles (per segment with
    /// `eib.grant_delay = "hops"`; variant `eib.grant_delay`).
    pub grant_delay: Cycle,
    /// MIC snoop delay, cycles.
    pub mic_snoop: Cycle,
    /// MIC write acceptance, cycles.
    pub mic_accept: Cycle,
    /// DRAM read latency, cycles.
    pub dram_latency: Cycle,
    /// DRAM bytes per SPU cycle.
    pub dram_bytes_per_cycle: f64,
    /// What the other chip's snoop adds to a coherent command's response,
    /// cycles: the link's round trip beyond this chip's command phase (0 on one chip).
    pub bif_snoop: Cycle,
    /// One crossing of the BIF, cycles (0 on one chip).
    pub bif_latency: Cycle,
}

impl MachineConfig {
    /// Loads a preset by name or a TOML file by path, then applies overrides
    /// (`"eib.arbiter_window=2"`) and validates.
    pub fn load(name_or_path: &str, overrides: &[String]) -> Result<Self, ConfigError> {
        let (source, text) = Self::source_text(name_or_path)?;
        Self::from_toml(&source, &text, overrides)
    }

    /// The resolved machine file of [`MachineConfig::load`]'s arguments, as
    /// TOML text: its `base` machines merged in, the overrides applied,
    /// validated. What a run's record keeps of its machine.
    pub fn resolved_toml(name_or_path: &str, overrides: &[String]) -> Result<String, ConfigError> {
        let (source, text) = Self::source_text(name_or_path)?;
        let table = Self::table(&source, &text, overrides)?;
        Self::from_table(&source, table.clone())?;
        toml::to_string(&table).map_err(|e| ConfigError::Parse {
            source_name: source,
            message: e.to_string(),
        })
    }

    fn source_text(name_or_path: &str) -> Result<(String, String), ConfigError> {
        if let Some((_, t)) = PRESETS.iter().find(|(n, _)| *n == name_or_path) {
            Ok((name_or_path.to_string(), t.to_string()))
        } else if std::path::Path::new(name_or_path).is_file() {
            let t = std::fs::read_to_string(name_or_path).map_err(|e| ConfigError::Parse {
                source_name: name_or_path.to_string(),
                message: e.to_string(),
            })?;
            Ok((name_or_path.to_string(), t))
        } else {
            Err(ConfigError::UnknownMachine {
                name: name_or_path.to_string(),
                known: PRESETS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }

    /// Parses TOML text (named `source` in errors), applies overrides, validates.
    pub fn from_toml(source: &str, text: &str, overrides: &[String]) -> Result<Self, ConfigError> {
        Self::from_table(source, Self::table(source, text, overrides)?)
    }

    fn table(source: &str, text: &str, overrides: &[String]) -> Result<toml::Table, ConfigError> {
        let mut table = resolve_base(source, text, 0)?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        Ok(table)
    }

    fn from_table(source: &str, table: toml::Table) -> Result<Self, ConfigError> {
        let parse_err = |message: String| ConfigError::Parse {
            source_name: source.to_string(),
            message,
        };
        let checked = table.clone();
        let mut cfg: MachineConfig = table
            .try_into()
            .map_err(|e: toml::de::Error| parse_err(e.to_string()))?;
        cfg.validate()?;
        variants::check(&checked, &mut cfg.variants)?;
        Ok(cfg)
    }

    /// The names of the shipped presets.
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|(n, _)| *n).collect()
    }

    /// The TOML text of a shipped preset.
    pub fn preset_text(name: &str) -> Option<&'static str> {
        PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: String, rule: &str| {
            Err(ConfigError::Invalid {
                key: key.to_string(),
                value,
                rule: rule.to_string(),
            })
        };
        // Every float of the schema is finite and within its range (unit in the key):
        // NaN, infinities and absurd values are refused here, naming their own key,
        // before any of them becomes a cycle count.
        let (mfc, mic) = (&self.mfc, &self.mic);
        let mut floats = vec![
            ("core_ghz", self.core_ghz, 0.1, 100.0),
            ("timebase_mhz", self.timebase_mhz, 0.001, 100_000.0),
            ("mfc.mmio_access_ns", mfc.mmio_access_ns, 0.0, 1e6),
            ("ppe.context_run_ns", self.ppe.context_run_ns, 0.0, 1e9),
            ("mic.dram_gbs", mic.dram_gbs, 0.001, 10_000.0),
            ("mic.dram_latency_ns", mic.dram_latency_ns, 0.0, 1e6),
            ("mic.refresh_interval_ns", mic.refresh_interval_ns, 1.0, 1e9),
            ("mic.refresh_ns", mic.refresh_ns, 0.0, 1e9),
            ("tlb.miss_ns", self.tlb.miss_ns, 0.0, 1e6),
            (
                "messaging.pass_delay_ns",
                self.messaging.pass_delay_ns,
                0.0,
                1e6,
            ),
        ];
        if let Some(b) = &self.bif {
            floats.push(("bif.link_gbs", b.link_gbs, 0.001, 10_000.0));
            floats.push(("bif.link_latency_ns", b.link_latency_ns, 0.0, 1e6));
        }
        for (key, v, lo, hi) in floats {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return bad(
                    key,
                    v.to_string(),
                    &format!("must be a finite number from {lo} to {hi}"),
                );
            }
        }
        if self.memory_mb == 0 || self.memory_mb > 64 * 1024 {
            return bad(
                "memory_mb",
                self.memory_mb.to_string(),
                "must be between 1 and 65536",
            );
        }
        let mut expected: Vec<String> = ["PPE", "MIC", "IOIF0", "IOIF1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        expected.extend((0..8).map(|i| format!("SPE{i}")));
        let mut got = self.ramps.clone();
        got.sort();
        expected.sort();
        if got != expected {
            return bad(
                "ramps",
                format!("{:?}", self.ramps),
                "must list PPE, MIC, IOIF0, IOIF1 and SPE0..SPE7 once each, in physical order",
            );
        }
        let spes_here = self.chips.clamp(1, crate::topology::MAX_CHIPS as u32) * 8;
        if self.spes.is_empty() || self.spes.iter().any(|&s| s >= spes_here) {
            return bad(
                "spes",
                format!("{:?}", self.spes),
                &format!(
                    "must list physical SPE numbers 0..{} (8 per chip)",
                    spes_here - 1
                ),
            );
        }
        let mut s = self.spes.clone();
        s.sort();
        s.dedup();
        if s.len() != self.spes.len() {
            return bad("spes", format!("{:?}", self.spes), "must not repeat an SPE");
        }
        match &self.placement {
            Placement::Named(n) if ["random", "local", "identity"].contains(&n.as_str()) => {}
            Placement::Named(n) => {
                return bad(
                    "placement",
                    n.clone(),
                    "must be \"random\", \"local\", \"identity\" or a list",
                )
            }
            Placement::Explicit(v) => {
                let mut v2 = v.clone();
                v2.sort();
                if v2 != s {
                    return bad(
                        "placement",
                        format!("{v:?}"),
                        "an explicit placement must be a permutation of the available SPEs",
                    );
                }
            }
        }
        if self.spu.ls_kb != 256 {
            return bad(
                "spu.ls_kb",
                self.spu.ls_kb.to_string(),
                "the Cell local store is 256 KB",
            );
        }
        if self.spu.ls_reserved_bytes >= self.spu.ls_kb * 1024
            || !self.spu.ls_reserved_bytes.is_multiple_of(16)
        {
            return bad(
                "spu.ls_reserved_bytes",
                self.spu.ls_reserved_bytes.to_string(),
                "must be a multiple of 16 below the local-store size",
            );
        }
        if !(1..=64).contains(&self.mfc.queue_depth) {
            return bad(
                "mfc.queue_depth",
                self.mfc.queue_depth.to_string(),
                "must be 1 to 64",
            );
        }
        if !(1..=64).contains(&self.mfc.proxy_queue_depth) {
            return bad(
                "mfc.proxy_queue_depth",
                self.mfc.proxy_queue_depth.to_string(),
                "must be 1 to 64",
            );
        }
        if !(1..=64).contains(&self.mfc.unroll_turns) {
            return bad(
                "mfc.unroll_turns",
                self.mfc.unroll_turns.to_string(),
                "must be from 1 to 64 (commands unrolled in turn)",
            );
        }
        if self.mfc.unroll_bus_cycles == 0 {
            return bad("mfc.unroll_bus_cycles", "0".into(), "must be at least 1");
        }
        if !(1..=256).contains(&self.biu.queue_depth) {
            return bad(
                "biu.queue_depth",
                self.biu.queue_depth.to_string(),
                "must be 1 to 256",
            );
        }
        if !(1..=256).contains(&self.biu.max_outstanding) {
            return bad(
                "biu.max_outstanding",
                self.biu.max_outstanding.to_string(),
                "must be 1 to 256",
            );
        }
        if !(1..=4).contains(&self.eib.rings_per_direction) {
            return bad(
                "eib.rings_per_direction",
                self.eib.rings_per_direction.to_string(),
                "must be 1 to 4",
            );
        }
        if !(1..=6).contains(&self.eib.max_transfers_per_ring) {
            return bad(
                "eib.max_transfers_per_ring",
                self.eib.max_transfers_per_ring.to_string(),
                "must be 1 to 6",
            );
        }
        if self.eib.beat_bytes != 16 {
            return bad(
                "eib.beat_bytes",
                self.eib.beat_bytes.to_string(),
                "the EIB moves 16 bytes per beat",
            );
        }
        if self.eib.hop_bus_cycles == 0 {
            return bad("eib.hop_bus_cycles", "0".into(), "must be at least 1");
        }
        if self.eib.ring_start_interval_bus_cycles == 0 {
            return bad(
                "eib.ring_start_interval_bus_cycles",
                "0".into(),
                "must be at least 1",
            );
        }
        if !(1..=64).contains(&self.biu.put_lines) {
            return bad(
                "biu.put_lines",
                self.biu.put_lines.to_string(),
                "must be 1 to 64",
            );
        }
        if !(1..=64).contains(&self.eib.put_credits) {
            return bad(
                "eib.put_credits",
                self.eib.put_credits.to_string(),
                "must be 1 to 64",
            );
        }
        if !(1..=64).contains(&self.eib.target_queue) {
            return bad(
                "eib.target_queue",
                self.eib.target_queue.to_string(),
                "must be 1 to 64",
            );
        }
        if !(1..=1024).contains(&self.mic.command_slots) {
            return bad(
                "mic.command_slots",
                self.mic.command_slots.to_string(),
                "must be 1 to 1024",
            );
        }
        if !(1..=1024).contains(&self.eib.rerequest_bus_cycles) {
            return bad(
                "eib.rerequest_bus_cycles",
                self.eib.rerequest_bus_cycles.to_string(),
                "must be 1 to 1024 (bus cycles between a denied transfer's requests)",
            );
        }
        if !(1..=16).contains(&self.eib.arbiter_window) {
            return bad(
                "eib.arbiter_window",
                self.eib.arbiter_window.to_string(),
                "must be 1 to 16",
            );
        }
        let ppe = &self.ppe;
        for (key, v, lo, hi) in [
            ("ppe.l1_ways", ppe.l1_ways, 1, 16),
            ("ppe.l2_ways", ppe.l2_ways, 1, 32),
            ("ppe.load_miss_entries", ppe.load_miss_entries, 1, 32),
            ("ppe.store_queue_entries", ppe.store_queue_entries, 1, 32),
            ("ppe.l2_miss_machines", ppe.l2_miss_machines, 1, 32),
            ("ppe.castout_entries", ppe.castout_entries, 1, 32),
            ("ppe.prefetch_lines", ppe.prefetch_lines, 0, 64),
            (
                "ppe.copy_unroll",
                ppe.copy_unroll,
                1,
                crate::ppu::MAX_UNROLL as u32,
            ),
        ] {
            if !(lo..=hi).contains(&v) {
                return bad(key, v.to_string(), &format!("must be {lo} to {hi}"));
            }
        }
        for (key, kb, ways) in [
            ("ppe.l1_kb", ppe.l1_kb, ppe.l1_ways),
            ("ppe.l2_kb", ppe.l2_kb, ppe.l2_ways),
        ] {
            let lines = kb as u64 * 1024 / 128;
            if kb == 0 || !kb.is_power_of_two() || lines < ways as u64 {
                return bad(
                    key,
                    kb.to_string(),
                    "must be a power of two holding at least one 128-byte line per way",
                );
            }
        }
        if ppe.l2_kb < ppe.l1_kb {
            return bad(
                "ppe.l2_kb",
                ppe.l2_kb.to_string(),
                "the L2 includes the L1: it cannot be smaller",
            );
        }
        if ![8, 16, 32, 64, 128].contains(&ppe.l1_l2_bus_bytes_per_cycle) {
            return bad(
                "ppe.l1_l2_bus_bytes_per_cycle",
                ppe.l1_l2_bus_bytes_per_cycle.to_string(),
                "must be 8, 16, 32, 64 or 128",
            );
        }
        if ppe.vmx_access_cycles == 0 || ppe.l1_hit_cycles == 0 {
            return bad(
                "ppe.vmx_access_cycles",
                ppe.vmx_access_cycles.to_string(),
                "access costs must be at least 1 cycle",
            );
        }
        if self.spu.dp_issue_cycles == 0 {
            return bad(
                "spu.dp_issue_cycles",
                "0".to_string(),
                "must be at least 1 (one DP instruction a cycle at the most)",
            );
        }
        if self.spu.dp_latency_cycles < self.spu.dp_issue_cycles {
            return bad(
                "spu.dp_latency_cycles",
                self.spu.dp_latency_cycles.to_string(),
                "must be at least spu.dp_issue_cycles (a result is not ready before the next instruction issues)",
            );
        }
        if self.spu.ls_narrow_load_slots == 0 || self.spu.ls_narrow_store_slots < 2 {
            return bad(
                "spu.ls_narrow_store_slots",
                self.spu.ls_narrow_store_slots.to_string(),
                "a narrow load takes at least 1 slot, a narrow store at least 2 (load and store)",
            );
        }
        if self.mic.dram_gbs <= 0.0 {
            return bad(
                "mic.dram_gbs",
                self.mic.dram_gbs.to_string(),
                "must be positive",
            );
        }
        if self.mic.dram_latency_ns < 0.0 {
            return bad(
                "mic.dram_latency_ns",
                self.mic.dram_latency_ns.to_string(),
                "must not be negative",
            );
        }
        if self.mic.reads_per_requester == 0 {
            return bad("mic.reads_per_requester", "0".into(), "must be at least 1");
        }
        if !(1..=64).contains(&self.mic.banks) || !self.mic.banks.is_power_of_two() {
            return bad(
                "mic.banks",
                self.mic.banks.to_string(),
                "must be a power of two from 1 to 64",
            );
        }
        if !(128..=65536).contains(&self.mic.row_bytes) || !self.mic.row_bytes.is_power_of_two() {
            return bad(
                "mic.row_bytes",
                self.mic.row_bytes.to_string(),
                "must be a power of two from 128 to 65536",
            );
        }
        for (key, v) in [
            ("mic.row_miss_ns", self.mic.row_miss_ns),
            ("mic.turnaround_ns", self.mic.turnaround_ns),
            ("mic.latency_noise_ns", self.mic.latency_noise_ns),
        ] {
            if !(0.0..=1000.0).contains(&v) {
                return bad(key, v.to_string(), "must be from 0 to 1000 ns");
            }
        }
        if self.mic.latency_noise == LatencyNoise::Uniform
            && self.mic.latency_noise_ns > 2.0 * self.mic.dram_latency_ns
        {
            return bad(
                "mic.latency_noise_ns",
                self.mic.latency_noise_ns.to_string(),
                "must be at most twice mic.dram_latency_ns (the noise is centred on the latency)",
            );
        }
        if self.mic.write_buffer_lines == 0 {
            return bad("mic.write_buffer_lines", "0".into(), "must be at least 1");
        }
        if self.mic.write_drain == WriteDrain::Batch
            && !(1..=self.mic.write_buffer_lines).contains(&self.mic.drain_lines)
        {
            return bad(
                "mic.drain_lines",
                self.mic.drain_lines.to_string(),
                "must be from 1 to mic.write_buffer_lines",
            );
        }
        if !(self.mic.refresh_interval_ns > 0.0
            && (0.0..self.mic.refresh_interval_ns).contains(&self.mic.refresh_ns))
        {
            return bad(
                "mic.refresh_ns",
                self.mic.refresh_ns.to_string(),
                "must be at least 0 and shorter than mic.refresh_interval_ns (positive)",
            );
        }
        if !(1..=crate::topology::MAX_CHIPS as u32).contains(&self.chips) {
            return bad(
                "chips",
                self.chips.to_string(),
                "must be 1, or 2 for a blade",
            );
        }
        match (&self.bif, self.chips) {
            (None, 2) => {
                return bad(
                    "bif",
                    "missing".into(),
                    "a two-chip machine needs a [bif] section (link_gbs, link_latency_ns)",
                )
            }
            (Some(_), 1) => {
                return bad(
                    "bif",
                    "present".into(),
                    "a one-chip machine has no BIF link: remove [bif] or set chips = 2",
                )
            }
            (Some(b), _) => {
                if b.link_gbs.is_nan() || b.link_gbs <= 0.0 || b.link_latency_ns < 0.0 {
                    return bad(
                        "bif.link_gbs",
                        b.link_gbs.to_string(),
                        "the link's bandwidth must be positive and its latencies not negative",
                    );
                }
            }
            (None, _) => {}
        }
        if ![4, 64, 16384].contains(&self.numa.page_kb) {
            return bad(
                "numa.page_kb",
                self.numa.page_kb.to_string(),
                "pages are 4 KB, 64 KB or 16384 KB (huge)",
            );
        }
        match NumaPolicy::parse(&self.numa.policy) {
            None => {
                return bad(
                    "numa.policy",
                    self.numa.policy.clone(),
                    "must be first-touch, interleave, node0, node1 or weighted:N (N per mille)",
                )
            }
            Some(NumaPolicy::Node(n)) if n as u32 >= self.chips => {
                return bad(
                    "numa.policy",
                    self.numa.policy.clone(),
                    "names a NUMA node the machine does not have (one node per chip)",
                )
            }
            _ => {}
        }
        let t = &self.tlb;
        if t.entries > 0
            && (t.ways == 0
                || !t.entries.is_multiple_of(t.ways)
                || !(t.entries / t.ways).is_power_of_two())
        {
            return bad(
                "tlb.entries",
                format!("{} in {} ways", t.entries, t.ways),
                "a power-of-two number of sets of `ways` entries",
            );
        }
        Ok(())
    }

    /// The core clock.
    pub fn clock(&self) -> Clock {
        Clock {
            hz: self.core_ghz * 1e9,
        }
    }

    /// Timing in SPU cycles.
    pub fn timing(&self) -> Timing {
        let clock = self.clock();
        Timing {
            clock,
            cycles_per_tick: clock.hz / (self.timebase_mhz * 1e6),
            ls_bytes: self.spu.ls_kb * 1024,
            ls_access: self.spu.ls_access_cycles,
            channel: self.spu.channel_cycles,
            issue: self.mfc.issue_cycles,
            to_eib: self.mfc.to_eib_cycles,
            list_element: self.mfc.list_element_cycles,
            list_fetch: self.mfc.list_fetch,
            completion: self.mfc.completion_cycles,
            unroll: bus(self.mfc.unroll_bus_cycles),
            command: self.mfc.command_cycles,
            mmio_access: clock.ns_to_cycles(self.mfc.mmio_access_ns),
            context_run: clock.ns_to_cycles(self.ppe.context_run_ns),
            command_phase: bus(self.eib.command_phase_bus_cycles),
            hop: bus(self.eib.hop_bus_cycles),
            beat: bus(1),
            ring_start_interval: bus(self.eib.ring_start_interval_bus_cycles),
            put_ack: bus(self.eib.put_ack_bus_cycles),
            recv_switch: bus(self.eib.recv_switch_bus_cycles),
            retry_backoff: bus(self.eib.retry_backoff_bus_cycles),
            grant_delay: bus(self.eib.grant_delay_bus_cycles),
            mic_snoop: bus(self.mic.snoop_bus_cycles),
            mic_accept: bus(self.mic.accept_bus_cycles),
            dram_latency: clock.ns_to_cycles(self.mic.dram_latency_ns),
            dram_bytes_per_cycle: clock.gbs_to_bytes_per_cycle(self.mic.dram_gbs),
            // The other chip snoops while this one does: the response waits
            // for the slower, the link's round trip or this chip's phase.
            bif_snoop: self.bif.as_ref().map_or(0, |b| {
                clock
                    .ns_to_cycles(2.0 * b.link_latency_ns)
                    .saturating_sub(bus(self.eib.command_phase_bus_cycles))
            }),
            bif_latency: self
                .bif
                .as_ref()
                .map_or(0, |b| clock.ns_to_cycles(b.link_latency_ns)),
        }
    }

    /// The default page placement (validated).
    pub fn numa_policy(&self) -> NumaPolicy {
        NumaPolicy::parse(&self.numa.policy).unwrap_or(NumaPolicy::FirstTouch)
    }

    /// Main memory size in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mb * 1024 * 1024
    }

    /// The PPU's parameters in cycles.
    pub fn ppu(&self) -> crate::ppu::PpuParams {
        let p = &self.ppe;
        crate::ppu::PpuParams {
            l1_bytes: p.l1_kb as u64 * 1024,
            l1_ways: p.l1_ways as usize,
            l2_bytes: p.l2_kb as u64 * 1024,
            l2_ways: p.l2_ways as usize,
            l1_hit: p.l1_hit_cycles,
            vmx_access: p.vmx_access_cycles,
            load_miss_entries: p.load_miss_entries as usize,
            l2_hit: p.l2_hit_cycles,
            line_transfer: 128 / p.l1_l2_bus_bytes_per_cycle as u64,
            store_queue_entries: p.store_queue_entries as usize,
            l2_store: p.l2_store_cycles,
            miss_machines: p.l2_miss_machines as usize,
            castouts: p.castout_entries as usize,
            prefetch: p.prefetch_lines as u64,
            copy_unroll: p.copy_unroll as usize,
            memory_bytes: self.memory_bytes(),
        }
    }
}

/// Parses a machine file; when it names a `base` machine, merges it over that
/// machine's table (sections merge key by key).
fn resolve_base(source: &str, text: &str, depth: u32) -> Result<toml::Table, ConfigError> {
    let parse_err = |message: String| ConfigError::Parse {
        source_name: source.to_string(),
        message,
    };
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| parse_err(e.to_string()))?;
    let Some(base) = table.remove("base") else {
        return Ok(table);
    };
    let base = base
        .as_str()
        .ok_or_else(|| parse_err("base must be a machine name".into()))?
        .to_string();
    if depth > 8 {
        return Err(parse_err("base machines nest too deeply (a cycle?)".into()));
    }
    let base_text = match MachineConfig::preset_text(&base) {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(&base).map_err(|_| ConfigError::UnknownMachine {
            name: base.clone(),
            known: PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })?,
    };
    let mut merged = resolve_base(&base, &base_text, depth + 1)?;
    merge(&mut merged, table);
    Ok(merged)
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// Applies one `section.key=value` override to a parsed TOML table.
fn apply_override(table: &mut toml::Table, o: &str) -> Result<(), ConfigError> {
    let invalid = |rule: &str| ConfigError::Invalid {
        key: o.to_string(),
        value: String::new(),
        rule: rule.to_string(),
    };
    let (key, raw) = o
        .split_once('=')
        .ok_or_else(|| invalid("an override is written section.key=value"))?;
    let key = key.trim();
    let raw = raw.trim();
    // Parse the value as TOML; bare words become strings (placement=identity).
    let value: toml::Value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts
        .pop()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("empty key"))?;
    let mut t = table;
    for p in parts {
        t = t
            .get_mut(p)
            .and_then(|v| v.as_table_mut())
            .ok_or_else(|| ConfigError::Invalid {
                key: key.to_string(),
                value: raw.to_string(),
                rule: format!("no section '{p}' in the machine file"),
            })?;
    }
    if !t.contains_key(last) {
        return Err(ConfigError::Invalid {
            key: key.to_string(),
            value: raw.to_string(),
            rule: "no such parameter in the machine file".to_string(),
        });
    }
    t.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_load_and_validate() {
        for name in MachineConfig::preset_names() {
            let c = MachineConfig::load(name, &[]).unwrap();
            assert_eq!(c.name, name);
            assert_eq!(c.ramps.len(), 12);
        }
    }

    #[test]
    fn overrides_change_one_value() {
        let c = MachineConfig::load(
            "qs20-1chip",
            &["eib.arbiter_window=3".into(), "placement=identity".into()],
        )
        .unwrap();
        assert_eq!(c.eib.arbiter_window, 3);
        assert_eq!(c.placement, Placement::Named("identity".into()));
    }

    #[test]
    fn bad_override_names_the_key() {
        let e = MachineConfig::load("qs20-1chip", &["eib.no_such=3".into()]).unwrap_err();
        assert!(e.to_string().contains("eib.no_such"), "{e}");
        let e = MachineConfig::load("qs20-1chip", &["mfc.queue_depth=0".into()]).unwrap_err();
        assert!(e.to_string().contains("mfc.queue_depth"), "{e}");
    }

    #[test]
    fn unknown_machine_lists_presets() {
        let e = MachineConfig::load("cray1", &[]).unwrap_err();
        assert!(e.to_string().contains("qs20-1chip"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = MachineConfig::preset_text("qs20-1chip")
            .unwrap()
            .replace("[mic]", "[mic]\nbogus = 1");
        let e = MachineConfig::from_toml("x", &text, &[]).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }

    #[test]
    fn derived_machines_inherit_from_their_base() {
        let p = MachineConfig::load("ps3", &[]).unwrap();
        assert_eq!(p.spes.len(), 6);
        assert_eq!(p.memory_mb, 256);
        assert_eq!(p.eib.command_phase_bus_cycles, 50);
    }

    #[test]
    fn the_dp_unit_is_the_chips_and_a_derived_machine_keeps_it() {
        let dp = |c: &MachineConfig| (c.spu.dp_issue_cycles, c.spu.dp_latency_cycles);
        assert_eq!(dp(&MachineConfig::load("qs20", &[]).unwrap()), (7, 13));
        assert_eq!(dp(&MachineConfig::load("qs22", &[]).unwrap()), (1, 9));
        let mine = "base = \"qs22\"\nname = \"mine\"\ndescription = \"a QS22\"\n";
        assert_eq!(
            dp(&MachineConfig::from_toml("x", mine, &[]).unwrap()),
            (1, 9)
        );
        let e = MachineConfig::load("qs22", &["spu.dp_latency_cycles=0".into()]).unwrap_err();
        assert!(e.to_string().contains("spu.dp_latency_cycles"), "{e}");
    }

    #[test]
    fn table1_cycles_convert() {
        let t = MachineConfig::load("qs20-1chip", &[]).unwrap().timing();
        assert_eq!(t.command_phase, 100);
        assert!((t.dram_bytes_per_cycle - 8.0).abs() < 1e-9);
    }
}
