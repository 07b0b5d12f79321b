//! Programs: what an SPU asks of the chip, and native Rust SPE programs.
//!
//! Every program, Python or Rust, talks to the engine through the same
//! [`Request`] values: an SPE program issues one request at a time and is
//! resumed with a reply when the request is done in simulated time. That one
//! path is why Python and Rust programs have identical timing.
//!
//! A native program is an `async fn` taking an [`Spu`] handle; each SPU call
//! is awaited, so the code reads like the C it mirrors:
//!
//! ```
//! use cellsim_engine::{Machine, MachineConfig, Spu};
//!
//! async fn spe_main(spu: Spu) -> u32 {
//!     let buf = spu.ls_alloc(16384, 128).unwrap();
//!     spu.mfc_get(buf, spu.argp(), 16384, 3).await;
//!     spu.mfc_write_tag_mask(1 << 3).await;
//!     spu.mfc_read_tag_status_all().await;
//!     0
//! }
//!
//! let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
//! let ea = m.alloc(16384, 128).unwrap();
//! m.spawn_native(0, ea, 0, spe_main).unwrap();
//! let summary = m.run().unwrap();
//! assert!(summary.cycles > 0);
//! ```

use crate::dma_check::DmaChecker;
use crate::error::MfcErrorKind;
use crate::mfc::command::{MfcCommand, Opcode};
use crate::mfc::tags::TagUpdate;
use crate::poll::{PollLoop, PollRow, MAX_ROWS};
use crate::script::Script;
use crate::storage::Storage;
use crate::time::Cycle;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

/// An SPU channel a program reads or writes (architecture notes, "SPU channels").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// SPU_RdInMbox (29): blocks while the inbound mailbox is empty.
    InMbox,
    /// SPU_WrOutMbox (28): blocks while the outbound mailbox is full.
    OutMbox,
    /// SPU_WrOutIntrMbox (30): blocks while the outbound-interrupt mailbox is full.
    OutIntrMbox,
    /// SPU_RdSigNotify1 (3): blocks until a signal arrives; reading clears it.
    Signal1,
    /// SPU_RdSigNotify2 (4).
    Signal2,
    /// MFC_RdAtomicStat (27): blocks until the atomic command completes.
    AtomicStatus,
    /// MFC_RdListStallStat (25): blocks until a list stalls; returns the tag groups.
    ListStallStatus,
    /// MFC_WrListStallAck (26): resumes the stalled list of a tag group.
    ListStallAck,
    /// SPU_RdEventStat (0): blocks while no enabled event is pending; returns pending AND mask.
    ReadEventStatus,
    /// SPU_WrEventMask (1): the events SPU_RdEventStat reports.
    WriteEventMask,
    /// SPU_WrEventAck (2): clears the pending events written.
    WriteEventAck,
    /// SPU_RdEventMask (11): the event mask read back.
    ReadEventMask,
    /// MFC_WrTagUpdate (23): requests a tag-status update (0 immediate, 1 any,
    /// 2 all), which raises the tag-group event when met; charged with the
    /// tag-status read that follows it.
    WriteTagUpdate,
}

impl Channel {
    /// Every channel the model implements, with its CBEA channel number.
    pub const NUMBERS: [(u32, Channel); 13] = [
        (0, Channel::ReadEventStatus),
        (1, Channel::WriteEventMask),
        (2, Channel::WriteEventAck),
        (3, Channel::Signal1),
        (4, Channel::Signal2),
        (11, Channel::ReadEventMask),
        (23, Channel::WriteTagUpdate),
        (25, Channel::ListStallStatus),
        (26, Channel::ListStallAck),
        (27, Channel::AtomicStatus),
        (28, Channel::OutMbox),
        (29, Channel::InMbox),
        (30, Channel::OutIntrMbox),
    ];

    /// The channel with CBEA channel number `number`, if the model implements it.
    pub fn from_number(number: u32) -> Option<Channel> {
        Self::NUMBERS
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, c)| *c)
    }

    /// This channel's CBEA channel number.
    pub fn number(self) -> u32 {
        Self::NUMBERS
            .iter()
            .find(|(_, c)| *c == self)
            .map(|(n, _)| *n)
            .expect("every channel has a number")
    }

    /// The SDK call that uses this channel.
    pub fn sdk_name(self) -> &'static str {
        match self {
            Channel::InMbox => "spu_read_in_mbox",
            Channel::OutMbox => "spu_write_out_mbox",
            Channel::OutIntrMbox => "spu_write_out_intr_mbox",
            Channel::Signal1 => "spu_read_signal1",
            Channel::Signal2 => "spu_read_signal2",
            Channel::AtomicStatus => "mfc_read_atomic_status",
            Channel::ListStallStatus => "mfc_read_list_stall_status",
            Channel::ListStallAck => "mfc_write_list_stall_ack",
            Channel::ReadEventStatus => "spu_read_event_status",
            Channel::WriteEventMask => "spu_write_event_mask",
            Channel::WriteEventAck => "spu_write_event_ack",
            Channel::ReadEventMask => "spu_read_event_mask",
            Channel::WriteTagUpdate => "mfc_write_tag_update",
        }
    }
}

/// Atomic status bit: the putllc failed (its reservation was lost).
pub const MFC_PUTLLC_STATUS: u32 = 1;
/// Atomic status bit: a putlluc completed.
pub const MFC_PUTLLUC_STATUS: u32 = 2;
/// Atomic status bit: a getllar completed.
pub const MFC_GETLLAR_STATUS: u32 = 4;

// SPU events: the bits of SPU_RdEventStat, SPU_WrEventMask and
// SPU_WrEventAck (CBEA, "SPU Event Facility"; the names of spu_mfcio.h).
/// Multisource synchronization (Ms): not raised by this model.
pub const MFC_MULTI_SRC_SYNC_EVENT: u32 = 0x1000;
/// Privileged attention (A): not raised by this model.
pub const MFC_PRIV_ATTN_EVENT: u32 = 0x0800;
/// Lock-line reservation lost (Lr): another writer took this SPE's getllar reservation.
pub const MFC_LLR_LOST_EVENT: u32 = 0x0400;
/// Signal-notification 1 available (S1).
pub const MFC_SIGNAL_NOTIFY_1_EVENT: u32 = 0x0200;
/// Signal-notification 2 available (S2).
pub const MFC_SIGNAL_NOTIFY_2_EVENT: u32 = 0x0100;
/// SPU outbound mailbox available (Le): the PPE emptied it.
pub const MFC_OUT_MBOX_AVAILABLE_EVENT: u32 = 0x0080;
/// SPU outbound-interrupt mailbox available (Me).
pub const MFC_OUT_INTR_MBOX_AVAILABLE_EVENT: u32 = 0x0040;
/// Decrementer (Tm): it went from positive to negative.
pub const MFC_DECREMENTER_EVENT: u32 = 0x0020;
/// SPU inbound mailbox available (Mb): a message arrived in an empty mailbox.
pub const MFC_IN_MBOX_AVAILABLE_EVENT: u32 = 0x0010;
/// MFC SPU command queue available (Qv): a full queue got a free entry.
pub const MFC_COMMAND_QUEUE_AVAILABLE_EVENT: u32 = 0x0008;
/// DMA list stall-and-notify (Sn).
pub const MFC_LIST_STALL_NOTIFY_EVENT: u32 = 0x0002;
/// Tag-group status update (Tg): the update requested with MFC_WrTagUpdate is met.
pub const MFC_TAG_STATUS_UPDATE_EVENT: u32 = 0x0001;

// libspe2 events (`spe_event_handler_*`), as the PPE sees them.
/// An SPE wrote its outbound-interrupt mailbox.
pub const SPE_EVENT_OUT_INTR_MBOX: u32 = 0x1;
/// An SPE's inbound mailbox has room.
pub const SPE_EVENT_IN_MBOX: u32 = 0x2;
/// Proxy tag-group completion: not modelled.
pub const SPE_EVENT_TAG_GROUP: u32 = 0x4;
/// An SPE program stopped.
pub const SPE_EVENT_SPE_STOPPED: u32 = 0x8;

/// Which outbound mailbox a PPE reads.
pub use crate::mailbox::Outbound;
/// What a loop of accesses does to each element.
pub use crate::ppu::LoopOp;

/// A PPE loop of accesses to main memory, simulated access by access
/// through the caches (see [`crate::ppu`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PpeLoop {
    /// Load, store or copy.
    pub op: LoopOp,
    /// Effective address of the buffer loaded (load, copy) or stored (store).
    pub ea: u64,
    /// Copy: effective address of the destination.
    pub dst: u64,
    /// Bytes accessed (in each buffer for a copy).
    pub bytes: u64,
    /// Bytes per access: 1, 2, 4, 8 or 16 (a VMX register).
    pub elem: u8,
    /// Bytes from one access to the next (0: `elem`, a dense traversal).
    pub stride: u64,
    /// Hardware threads sharing the loop: 1, or 2 (each takes half).
    pub threads: u8,
    /// Each load's value is used before the next access issues (as when a
    /// program loads one value at a time); otherwise loads are independent.
    pub dependent: bool,
    /// The byte a store loop writes.
    pub fill: u8,
}

/// An SPU loop of loads or stores to its own local store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsAccessLoop {
    /// Load, store or copy.
    pub op: LoopOp,
    /// Local-store address of the buffer loaded (load, copy) or stored (store).
    pub lsa: u32,
    /// Copy: local-store address of the destination.
    pub dst: u32,
    /// Bytes accessed.
    pub bytes: u32,
    /// Bytes per access: 1, 2, 4, 8 or 16.
    pub elem: u8,
    /// The byte a store loop writes.
    pub fill: u8,
}

/// One request of a program to the chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Run for this many cycles (the program's own computation).
    Compute(Cycle),
    /// Run for `cycles` cycles that make `accesses` loads and stores to the
    /// local store: DMA takes the port first, so its traffic meanwhile
    /// delays them (see [`crate::ls_loop::PortShare`]).
    ComputeLs {
        /// Cycles of the computation alone.
        cycles: Cycle,
        /// Its local-store accesses (port uses).
        accesses: u64,
    },
    /// Issue an MFC command (channel writes, then the command enters the queue).
    Mfc(MfcCommand),
    /// `mfc_write_tag_mask`.
    WriteTagMask(u32),
    /// `mfc_read_tag_mask`: the tag-mask channel (22) read back.
    ReadTagMask,
    /// `mfc_read_tag_status_{immediate,any,all}`.
    ReadTagStatus(TagUpdate),
    /// `spu_read_decrementer`.
    ReadDecrementer,
    /// `spu_write_decrementer`.
    WriteDecrementer(u32),
    /// A (possibly blocking) channel read.
    ReadChannel(Channel),
    /// A (possibly blocking) channel write.
    WriteChannel(Channel, u32),
    /// `spu_readchcnt`: how many reads or writes the channel allows now.
    ChannelCount(Channel),
    /// PPE: a load of 1, 2, 4 or 8 bytes (main memory, or a local store or
    /// problem-state register through the memory map).
    PpeLoad {
        /// Effective address.
        ea: u64,
        /// Bytes.
        size: u8,
    },
    /// PPE: a store of 1, 2, 4 or 8 bytes.
    PpeStore {
        /// Effective address.
        ea: u64,
        /// Bytes.
        size: u8,
        /// Value (its low `size` bytes, stored big-endian).
        value: u64,
    },
    /// PPE: `lwarx`/`ldarx`, load and reserve.
    PpeLwarx {
        /// Effective address.
        ea: u64,
        /// 4 or 8 bytes.
        size: u8,
    },
    /// PPE: `stwcx.`/`stdcx.`, store if the reservation holds (reply 1 on success).
    PpeStwcx {
        /// Effective address.
        ea: u64,
        /// 4 or 8 bytes.
        size: u8,
        /// Value.
        value: u64,
    },
    /// PPE: read an SPE's outbound (or outbound-interrupt) mailbox through the
    /// problem-state area; with `wait`, poll until there is a message (reply:
    /// the message, or `u64::MAX` when none and not waiting).
    PpeReadMbox {
        /// Logical SPE.
        spe: u32,
        /// Which mailbox.
        which: Outbound,
        /// Wait for a message.
        wait: bool,
    },
    /// PPE: write an SPE's inbound mailbox; with `wait`, poll until there is
    /// room (reply 1 when written, 0 when full and not waiting).
    PpeWriteMbox {
        /// Logical SPE.
        spe: u32,
        /// The message.
        value: u32,
        /// Wait for room.
        wait: bool,
    },
    /// PPE: read SPU_Mbox_Stat of an SPE.
    PpeMboxStatus {
        /// Logical SPE.
        spe: u32,
    },
    /// PPE: write a signal-notification register of an SPE (`which` 1 or 2).
    PpeSignal {
        /// Logical SPE.
        spe: u32,
        /// Register, 1 or 2.
        which: u8,
        /// Value.
        value: u32,
    },
    /// PPE: a proxy DMA into an SPE's proxy command queue (`spe_mfcio_*`);
    /// waits while the queue is full.
    ProxyMfc {
        /// Logical SPE.
        spe: u32,
        /// The command (local-store addresses are that SPE's).
        cmd: MfcCommand,
    },
    /// PPE: proxy tag-group status of an SPE (`spe_mfcio_tag_status_read`).
    ProxyTagStatus {
        /// Logical SPE.
        spe: u32,
        /// Tag groups.
        mask: u32,
        /// Immediate, any or all.
        mode: TagUpdate,
    },
    /// PPE: a loop of loads, stores or copies through the caches; the reply
    /// is the cycles it took.
    PpeLoop(PpeLoop),
    /// SPU: a loop of loads, stores or copies in its own local store; the
    /// reply is the cycles it took.
    LsLoop(LsAccessLoop),
    /// PPE: libspe2 `spe_event_wait`: waits until one of the registered
    /// events holds (or, not waiting, looks once); the reply has each
    /// libspe2 event bit of logical SPE `s` at bit `4 * s`.
    PpeEventWait {
        /// The libspe2 event mask of logical SPE `s` at bits `4 * s..4 * s + 4`.
        masks: u64,
        /// Wait for an event (timeout -1) or look once (timeout 0).
        wait: bool,
    },
    /// Wait until another thread finishes (`pthread_join`, the end of
    /// `spe_context_run`); the reply is its exit value.
    Join(usize),
    /// The program ends with this exit value.
    Exit(u32),
}

impl Request {
    /// How the SDK spells this call, for error and deadlock reports.
    pub fn describe(&self, tag_mask: u32) -> String {
        match self {
            Request::Compute(c) => format!("compute({c})"),
            Request::ComputeLs { cycles, accesses } => {
                format!("compute({cycles}, ls_accesses={accesses})")
            }
            Request::Mfc(c) => c.to_string(),
            Request::WriteTagMask(m) => format!("mfc_write_tag_mask(0x{m:x})"),
            Request::ReadTagMask => "mfc_read_tag_mask()".into(),
            Request::ReadTagStatus(TagUpdate::Immediate) => {
                format!("mfc_read_tag_status_immediate(mask=0x{tag_mask:x})")
            }
            Request::ReadTagStatus(TagUpdate::Any) => {
                format!("mfc_read_tag_status_any(mask=0x{tag_mask:x})")
            }
            Request::ReadTagStatus(TagUpdate::All) => {
                format!("mfc_read_tag_status_all(mask=0x{tag_mask:x})")
            }
            Request::ReadDecrementer => "spu_read_decrementer()".into(),
            Request::WriteDecrementer(v) => format!("spu_write_decrementer({v})"),
            Request::ReadChannel(c) => format!("{}()", c.sdk_name()),
            Request::WriteChannel(c, v) => format!("{}({v})", c.sdk_name()),
            Request::ChannelCount(c) => format!("spu_readchcnt({})", c.sdk_name()),
            Request::PpeLoad { ea, size } => format!("load{size}(0x{ea:x})"),
            Request::PpeStore { ea, size, value } => format!("store{size}(0x{ea:x}, {value})"),
            Request::PpeLwarx { ea, .. } => format!("lwarx(0x{ea:x})"),
            Request::PpeStwcx { ea, value, .. } => format!("stwcx(0x{ea:x}, {value})"),
            Request::PpeReadMbox {
                spe,
                which: Outbound::Plain,
                ..
            } => {
                format!("spe_out_mbox_read(SPE {spe})")
            }
            Request::PpeReadMbox {
                spe,
                which: Outbound::Interrupt,
                ..
            } => {
                format!("spe_out_intr_mbox_read(SPE {spe})")
            }
            Request::PpeWriteMbox { spe, value, .. } => {
                format!("spe_in_mbox_write(SPE {spe}, {value})")
            }
            Request::PpeMboxStatus { spe } => format!("spe_mbox_status(SPE {spe})"),
            Request::PpeSignal { spe, which, value } => {
                format!("spe_signal_write(SPE {spe}, {which}, {value})")
            }
            Request::ProxyMfc { spe, cmd } => format!("spe_mfcio (SPE {spe}): {cmd}"),
            Request::ProxyTagStatus { spe, mask, .. } => {
                format!("spe_mfcio_tag_status_read(SPE {spe}, mask=0x{mask:x})")
            }
            Request::PpeLoop(l) => format!(
                "access_loop({}, 0x{:x}, {} B, element {} B, {} thread{})",
                l.op.name(),
                l.ea,
                l.bytes,
                l.elem,
                l.threads,
                if l.threads == 1 { "" } else { "s" }
            ),
            Request::LsLoop(l) => format!(
                "ls_access_loop({}, 0x{:x}, {} B, element {} B)",
                l.op.name(),
                l.lsa,
                l.bytes,
                l.elem
            ),
            Request::PpeEventWait { masks, .. } => format!("spe_event_wait(0x{masks:x})"),
            Request::Join(t) => format!("join(thread {t})"),
            Request::Exit(v) => format!("exit({v})"),
        }
    }
}

/// A native program in flight.
pub type ProgramFuture = Pin<Box<dyn Future<Output = u32>>>;

/// The mailbox between a native program and the engine.
#[derive(Debug)]
pub(crate) struct Port {
    pub(crate) request: Cell<Option<Request>>,
    pub(crate) reply: Cell<u64>,
    pub(crate) spe: u32,
    pub(crate) argp: u64,
    pub(crate) envp: u64,
    pub(crate) ls: Arc<Storage>,
    ls_next: Cell<u32>,
    ls_top: u32,
    /// A command loop the program declared with its last request.
    pub(crate) script: Cell<Option<Script>>,
    /// A polling loop the program declared with its last request.
    pub(crate) poll: RefCell<Option<Box<PollLoop>>>,
    /// The DMA hazard checker, when the machine has it on.
    pub(crate) check: Option<RefCell<DmaChecker>>,
}

/// The handle a native SPE program uses: the Rust twin of `spu_mfcio.h`.
#[derive(Debug, Clone)]
pub struct Spu {
    port: Rc<Port>,
}

/// The single DMAs of [`Spu`]: plain functions returning the call's future,
/// so that `#[track_caller]` sees the program's line when it issues (an
/// `async fn`'s body runs only when first polled, inside this file).
/// The SDK's channel calls of [`Spu`], each one request written once: a read
/// (waits until the channel has a word; returns it), a write of the call's one
/// argument (waits while the channel is full), a count (`spu_stat_*`: how many
/// reads or writes the channel allows now).
macro_rules! channel_calls {
    ($($(#[$doc:meta])* $name:ident => $how:ident $ch:ident $(($arg:ident))?,)*) => {$(
        channel_calls!(@one $(#[$doc])* $name $how $ch $($arg)?);
    )*};
    (@one $(#[$doc:meta])* $name:ident read $ch:ident) => {
        $(#[$doc])*
        pub async fn $name(&self) -> u32 {
            self.call(Request::ReadChannel(Channel::$ch)).await as u32
        }
    };
    (@one $(#[$doc:meta])* $name:ident write $ch:ident $arg:ident) => {
        $(#[$doc])*
        pub async fn $name(&self, $arg: u32) {
            self.call(Request::WriteChannel(Channel::$ch, $arg)).await;
        }
    };
    (@one $(#[$doc:meta])* $name:ident stat $ch:ident) => {
        $(#[$doc])*
        pub async fn $name(&self) -> u32 {
            self.call(Request::ChannelCount(Channel::$ch)).await as u32
        }
    };
}

macro_rules! single_dmas {
    ($($(#[$doc:meta])* $name:ident => $op:ident,)*) => {$(
        $(#[$doc])*
        #[track_caller]
        pub fn $name(&self, lsa: u32, ea: u64, size: u32, tag: u32) -> impl Future<Output = ()> + '_ {
            let call = self.dma(Opcode::$op, lsa, ea, size, tag);
            async move {
                call.await;
            }
        }
    )*};
}

impl Spu {
    pub(crate) fn new(
        spe: u32,
        argp: u64,
        envp: u64,
        ls: Arc<Storage>,
        ls_reserved: u32,
        check_dma: bool,
    ) -> (Spu, Rc<Port>) {
        let top = ls.len() as u32;
        let port = Rc::new(Port {
            request: Cell::new(None),
            reply: Cell::new(0),
            spe,
            argp,
            envp,
            ls,
            ls_next: Cell::new(ls_reserved),
            ls_top: top,
            script: Cell::new(None),
            poll: RefCell::new(None),
            check: check_dma.then(|| RefCell::new(DmaChecker::default())),
        });
        (Spu { port: port.clone() }, port)
    }

    /// Logical SPE number this program runs on.
    pub fn spe_id(&self) -> u32 {
        self.port.spe
    }

    /// The argument pointer passed to `spe_context_run`.
    pub fn argp(&self) -> u64 {
        self.port.argp
    }

    /// The environment pointer passed to `spe_context_run`.
    pub fn envp(&self) -> u64 {
        self.port.envp
    }

    /// Reserves `size` bytes of local store aligned to `align` (a power of two).
    pub fn ls_alloc(&self, size: u32, align: u32) -> Result<u32, (MfcErrorKind, String)> {
        ls_bump(&self.port.ls_next, self.port.ls_top, size, align)
    }

    /// Copies bytes out of the local store.
    #[track_caller]
    pub fn ls_read(&self, lsa: u32, out: &mut [u8]) {
        self.checked(lsa, out.len(), false);
        self.port.ls.read(lsa as usize, out)
    }

    /// Copies bytes into the local store.
    #[track_caller]
    pub fn ls_write(&self, lsa: u32, data: &[u8]) {
        self.checked(lsa, data.len(), true);
        self.port.ls.write(lsa as usize, data)
    }

    /// Reads a big-endian u32 from the local store.
    #[track_caller]
    pub fn ls_read_u32(&self, lsa: u32) -> u32 {
        self.checked(lsa, 4, false);
        self.port.ls.read_u32_be(lsa as usize)
    }

    /// Writes a big-endian u32 to the local store.
    #[track_caller]
    pub fn ls_write_u32(&self, lsa: u32, v: u32) {
        self.checked(lsa, 4, true);
        self.port.ls.write_u32_be(lsa as usize, v)
    }

    /// The DMA hazard checker sees an access of the program's (when on).
    #[track_caller]
    #[inline]
    fn checked(&self, lsa: u32, len: usize, write: bool) {
        if let Some(c) = &self.port.check {
            c.borrow_mut().access(lsa, len, write, Location::caller());
        }
    }

    /// A tag-status read's reply: the checker forgets the groups it reports done.
    fn tags_done(&self, status: u64) -> u32 {
        if let Some(c) = &self.port.check {
            c.borrow_mut().completed(status as u32);
        }
        status as u32
    }

    fn call(&self, r: Request) -> Call<'_> {
        Call {
            port: &self.port,
            request: Some(r),
        }
    }

    #[track_caller]
    fn dma(&self, op: Opcode, lsa: u32, ea: u64, size: u32, tag: u32) -> Call<'_> {
        if let Some(c) = &self.port.check {
            c.borrow_mut()
                .issue(op, lsa, ea, size, tag, Location::caller());
        }
        self.call(Request::Mfc(MfcCommand::single(op, lsa, ea, size, tag)))
    }

    single_dmas! {
        /// `mfc_get(ls, ea, size, tag, 0, 0)`.
        mfc_get => Get,
        /// `mfc_getb`.
        mfc_getb => GetB,
        /// `mfc_getf`.
        mfc_getf => GetF,
        /// `mfc_put(ls, ea, size, tag, 0, 0)`.
        mfc_put => Put,
        /// `mfc_putb`.
        mfc_putb => PutB,
        /// `mfc_putf`.
        mfc_putf => PutF,
    }
    /// The commands of `body` (1 to 4), in order, `times` times: the same
    /// requests, at the same cycles, as
    /// `for _ in 0..times { for c in body { issue c } }`, but the engine
    /// issues them itself, so that a steady state may span them (see
    /// [`crate::script`]). Use it for loops whose commands do not depend on
    /// anything the program reads.
    pub async fn mfc_repeat(&self, body: &[MfcCommand], times: u64) {
        let Some(mut script) = Script::new(body, times) else {
            return;
        };
        let first = script.take().expect("a script has a command");
        self.port.script.set(Some(script));
        self.call(Request::Mfc(first)).await;
    }
    /// A polling loop: the same requests, at the same cycles, as
    /// ```text
    /// loop {
    ///     compute(pause);
    ///     for (i, r) in rows.iter().enumerate() {
    ///         mfc_get(r.lsa, r.ea, r.size, r.tag);
    ///         mfc_write_tag_mask(1 << r.tag);
    ///         mfc_read_tag_status_all();
    ///         if r's bytes in the local store differ from what they held
    ///             when mfc_poll was called { return i; }
    ///     }
    /// }
    /// ```
    /// but the engine makes them itself and runs the program again only
    /// when a row has changed (see [`crate::poll`]). `rows`: 1 to
    /// [`MAX_ROWS`], each inside the local store; a program that breaks
    /// this panics (an error of the run).
    pub async fn mfc_poll(&self, pause: Cycle, rows: &[PollRow]) -> usize {
        assert!(
            (1..=MAX_ROWS).contains(&rows.len()),
            "mfc_poll: 1 to {MAX_ROWS} rows, not {}",
            rows.len()
        );
        for r in rows {
            if let Err(e) = r.check(self.port.ls.len()) {
                panic!("{e}");
            }
        }
        let p = PollLoop::new(pause, rows, self.port.ls.clone());
        let first = p.first();
        *self.port.poll.borrow_mut() = Some(Box::new(p));
        self.call(first).await as usize
    }
    /// `mfc_barrier(tag)`.
    #[track_caller]
    pub fn mfc_barrier(&self, tag: u32) -> impl Future<Output = ()> + '_ {
        let call = self.dma(Opcode::Barrier, 0, 0, 0, tag);
        async move {
            call.await;
        }
    }
    /// `mfc_write_tag_mask(mask)`.
    pub async fn mfc_write_tag_mask(&self, mask: u32) {
        self.call(Request::WriteTagMask(mask)).await;
    }
    /// `mfc_read_tag_mask()`: the current tag mask.
    pub async fn mfc_read_tag_mask(&self) -> u32 {
        self.call(Request::ReadTagMask).await as u32
    }
    /// `mfc_read_tag_status_all()`: waits until every group in the mask is done.
    pub async fn mfc_read_tag_status_all(&self) -> u32 {
        let status = self.call(Request::ReadTagStatus(TagUpdate::All)).await;
        self.tags_done(status)
    }
    /// `mfc_read_tag_status_any()`: waits until some group in the mask is done.
    pub async fn mfc_read_tag_status_any(&self) -> u32 {
        let status = self.call(Request::ReadTagStatus(TagUpdate::Any)).await;
        self.tags_done(status)
    }
    /// `mfc_read_tag_status_immediate()`.
    pub async fn mfc_read_tag_status_immediate(&self) -> u32 {
        let status = self
            .call(Request::ReadTagStatus(TagUpdate::Immediate))
            .await;
        self.tags_done(status)
    }
    /// `spu_read_decrementer()`.
    pub async fn spu_read_decrementer(&self) -> u32 {
        self.call(Request::ReadDecrementer).await as u32
    }
    /// `spu_write_decrementer(v)`.
    pub async fn spu_write_decrementer(&self, v: u32) {
        self.call(Request::WriteDecrementer(v)).await;
    }
    /// Spends `cycles` SPU cycles computing.
    pub async fn compute(&self, cycles: Cycle) {
        self.call(Request::Compute(cycles)).await;
    }
    /// Spends `cycles` SPU cycles computing, with `accesses` loads and
    /// stores to the local store among them, which DMA traffic delays.
    pub async fn compute_ls(&self, cycles: Cycle, accesses: u64) {
        self.call(Request::ComputeLs { cycles, accesses }).await;
    }
    /// `mfc_getl(ls, ea, list, list_size, tag)`: a DMA list into the local store.
    pub async fn mfc_getl(&self, lsa: u32, ea: u64, list: u32, list_size: u32, tag: u32) {
        self.list_dma(Opcode::GetL, lsa, ea, list, list_size, tag)
            .await;
    }
    /// `mfc_putl(ls, ea, list, list_size, tag)`: a DMA list out of the local store.
    pub async fn mfc_putl(&self, lsa: u32, ea: u64, list: u32, list_size: u32, tag: u32) {
        self.list_dma(Opcode::PutL, lsa, ea, list, list_size, tag)
            .await;
    }
    /// A DMA list command (not checked by the DMA hazard checker: its
    /// main-memory side is its elements').
    async fn list_dma(&self, op: Opcode, lsa: u32, ea: u64, list: u32, size: u32, tag: u32) {
        let cmd = MfcCommand::single(op, lsa, ea, size, tag);
        self.call(Request::Mfc(MfcCommand { list, ..cmd })).await;
    }
    /// `mfc_getllar(ls, ea)`: get a lock line and reserve it.
    pub async fn mfc_getllar(&self, lsa: u32, ea: u64) {
        self.dma(Opcode::GetLLAR, lsa, ea, 128, 0).await;
    }
    /// `mfc_putllc(ls, ea)`: put the lock line if the reservation holds.
    pub async fn mfc_putllc(&self, lsa: u32, ea: u64) {
        self.dma(Opcode::PutLLC, lsa, ea, 128, 0).await;
    }
    /// `mfc_putlluc(ls, ea)`: put the lock line unconditionally.
    pub async fn mfc_putlluc(&self, lsa: u32, ea: u64) {
        self.dma(Opcode::PutLLUC, lsa, ea, 128, 0).await;
    }
    channel_calls! {
        /// `mfc_read_atomic_status()`: waits for the atomic command; returns its status bits.
        mfc_read_atomic_status => read AtomicStatus,
        /// `spu_read_in_mbox()`: waits for a message in the inbound mailbox.
        spu_read_in_mbox => read InMbox,
        /// `spu_write_out_mbox(v)`: waits while the outbound mailbox is full.
        spu_write_out_mbox => write OutMbox(v),
        /// `spu_write_out_intr_mbox(v)`.
        spu_write_out_intr_mbox => write OutIntrMbox(v),
        /// `spu_stat_in_mbox()`: messages waiting.
        spu_stat_in_mbox => stat InMbox,
        /// `spu_read_signal1()`: waits for a signal; returns and clears it.
        spu_read_signal1 => read Signal1,
        /// `spu_read_signal2()`.
        spu_read_signal2 => read Signal2,
        /// `mfc_read_list_stall_status()`: waits for a stalled list; returns its tag groups.
        mfc_read_list_stall_status => read ListStallStatus,
        /// `mfc_write_list_stall_ack(tag)`: lets the stalled list of `tag` go on.
        mfc_write_list_stall_ack => write ListStallAck(tag),
        /// `spu_write_event_mask(mask)`: the events `spu_read_event_status` reports
        /// (the first write starts tracking this program's events).
        spu_write_event_mask => write WriteEventMask(mask),
        /// `spu_read_event_mask()`.
        spu_read_event_mask => read ReadEventMask,
        /// `spu_read_event_status()`: waits until an enabled event is pending;
        /// returns the pending events AND the mask.
        spu_read_event_status => read ReadEventStatus,
        /// `spu_stat_event_status()`: 1 if an enabled event is pending.
        spu_stat_event_status => stat ReadEventStatus,
        /// `spu_write_event_ack(events)`: clears these pending events.
        spu_write_event_ack => write WriteEventAck(events),
        /// `mfc_write_tag_update_any()` (1), `_all()` (2), `_immediate()` (0):
        /// requests a tag-status update; the tag-group event fires when it is met.
        mfc_write_tag_update => write WriteTagUpdate(mode),
    }
    /// `mfc_sndsig(ls, ea, tag)`: sends the 4-byte word at `ls` to a signal register.
    pub async fn mfc_sndsig(&self, lsa: u32, ea: u64, tag: u32) {
        self.dma(Opcode::SndSig, lsa, ea, 4, tag).await;
    }
    /// A loop of `bytes / elem` loads, stores or copies over the local store
    /// (16 bytes per cycle at best, contending with DMA for the port);
    /// returns the cycles it took.
    pub async fn ls_access_loop(&self, l: LsAccessLoop) -> u64 {
        self.call(Request::LsLoop(l)).await
    }
}

/// The handle a native PPE program uses: loads and stores, lwarx/stwcx, the
/// SPEs' mailboxes and signals, and joining other threads.
#[derive(Debug, Clone)]
pub struct Ppe {
    port: Rc<Port>,
}

impl Ppe {
    pub(crate) fn new(memory: Arc<Storage>) -> (Ppe, Rc<Port>) {
        let port = Rc::new(Port {
            request: Cell::new(None),
            reply: Cell::new(0),
            spe: u32::MAX,
            argp: 0,
            envp: 0,
            ls: memory,
            ls_next: Cell::new(0),
            ls_top: 0,
            script: Cell::new(None),
            poll: RefCell::new(None),
            check: None,
        });
        (Ppe { port: port.clone() }, port)
    }

    fn call(&self, r: Request) -> Call<'_> {
        Call {
            port: &self.port,
            request: Some(r),
        }
    }

    /// Loads `size` (1, 2, 4, 8) big-endian bytes from `ea`.
    pub async fn load(&self, ea: u64, size: u8) -> u64 {
        self.call(Request::PpeLoad { ea, size }).await
    }
    /// Stores the low `size` bytes of `value` at `ea`.
    pub async fn store(&self, ea: u64, size: u8, value: u64) {
        self.call(Request::PpeStore { ea, size, value }).await;
    }
    /// `lwarx` (4 bytes) or `ldarx` (8).
    pub async fn lwarx(&self, ea: u64, size: u8) -> u64 {
        self.call(Request::PpeLwarx { ea, size }).await
    }
    /// `stwcx.` / `stdcx.`: true when the store happened.
    pub async fn stwcx(&self, ea: u64, size: u8, value: u64) -> bool {
        self.call(Request::PpeStwcx { ea, size, value }).await != 0
    }
    /// `spe_in_mbox_write` (blocking).
    pub async fn spe_in_mbox_write(&self, spe: u32, value: u32) {
        self.call(Request::PpeWriteMbox {
            spe,
            value,
            wait: true,
        })
        .await;
    }
    /// `spe_out_mbox_read` (blocking until a message is there).
    pub async fn spe_out_mbox_read(&self, spe: u32) -> u32 {
        self.call(Request::PpeReadMbox {
            spe,
            which: Outbound::Plain,
            wait: true,
        })
        .await as u32
    }
    /// `spe_out_intr_mbox_read` (blocking).
    pub async fn spe_out_intr_mbox_read(&self, spe: u32) -> u32 {
        self.call(Request::PpeReadMbox {
            spe,
            which: Outbound::Interrupt,
            wait: true,
        })
        .await as u32
    }
    /// `spe_signal_write(spe, which, value)`.
    pub async fn spe_signal_write(&self, spe: u32, which: u8, value: u32) {
        self.call(Request::PpeSignal { spe, which, value }).await;
    }
    /// `spe_mfcio_get(spe, ls, ea, size, tag)`: a proxy DMA into an SPE's local store.
    pub async fn proxy_get(&self, spe: u32, lsa: u32, ea: u64, size: u32, tag: u32) {
        let cmd = MfcCommand::single(Opcode::Get, lsa, ea, size, tag);
        self.call(Request::ProxyMfc { spe, cmd }).await;
    }
    /// `spe_mfcio_put(spe, ls, ea, size, tag)`.
    pub async fn proxy_put(&self, spe: u32, lsa: u32, ea: u64, size: u32, tag: u32) {
        let cmd = MfcCommand::single(Opcode::Put, lsa, ea, size, tag);
        self.call(Request::ProxyMfc { spe, cmd }).await;
    }
    /// `spe_mfcio_tag_status_read(spe, mask, SPE_TAG_ALL)`.
    pub async fn proxy_wait_all(&self, spe: u32, mask: u32) -> u32 {
        self.call(Request::ProxyTagStatus {
            spe,
            mask,
            mode: TagUpdate::All,
        })
        .await as u32
    }
    /// A loop of accesses to main memory through the caches (the element
    /// size, the threads and the op decide its speed); returns the cycles it took.
    pub async fn access_loop(&self, l: PpeLoop) -> u64 {
        self.call(Request::PpeLoop(l)).await
    }
    /// libspe2 `spe_event_wait` over `(logical SPE, SPE_EVENT_* mask)`
    /// pairs: waits until some hold (`wait`) or looks once; returns the
    /// events that hold, `(spe, SPE_EVENT_* bits)`, in SPE order.
    pub async fn spe_event_wait(&self, events: &[(u32, u32)], wait: bool) -> Vec<(u32, u32)> {
        let masks = events
            .iter()
            .filter(|(spe, _)| *spe < 16)
            .fold(0u64, |m, &(spe, e)| m | ((e as u64 & 0xF) << (4 * spe)));
        let got = self.call(Request::PpeEventWait { masks, wait }).await;
        (0..16u32)
            .map(|spe| (spe, (got >> (4 * spe)) as u32 & 0xF))
            .filter(|&(_, e)| e != 0)
            .collect()
    }
    /// Waits for another thread to finish; returns its exit value.
    pub async fn join(&self, thread: usize) -> u32 {
        self.call(Request::Join(thread)).await as u32
    }
    /// Spends `cycles` core cycles computing.
    pub async fn compute(&self, cycles: Cycle) {
        self.call(Request::Compute(cycles)).await;
    }
}

/// Bump allocation in a local store (shared by Rust and Python programs).
pub fn ls_bump(
    next: &Cell<u32>,
    top: u32,
    size: u32,
    align: u32,
) -> Result<u32, (MfcErrorKind, String)> {
    if align == 0 || !align.is_power_of_two() {
        return Err((
            MfcErrorKind::LsOverflow,
            format!("ls_alloc alignment {align} is not a power of two"),
        ));
    }
    let start = next.get().div_ceil(align) * align;
    let end = start as u64 + size as u64;
    if end > top as u64 {
        return Err((
            MfcErrorKind::LsOverflow,
            format!(
                "ls_alloc({size}, align={align}) needs local store up to 0x{end:x} but it ends at 0x{top:x} ({} bytes left)",
                top.saturating_sub(start)
            ),
        ));
    }
    next.set(end as u32);
    Ok(start)
}

/// The future of one SPU call: hands its request to the engine on the first
/// poll, returns the reply on the second (after the engine resumed it).
struct Call<'a> {
    port: &'a Port,
    request: Option<Request>,
}

impl Future for Call<'_> {
    type Output = u64;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u64> {
        match self.request.take() {
            Some(r) => {
                self.port.request.set(Some(r));
                Poll::Pending
            }
            None => Poll::Ready(self.port.reply.get()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Channel;

    #[test]
    fn channel_numbers_are_the_cbea_table_both_ways() {
        assert_eq!(Channel::from_number(29), Some(Channel::InMbox));
        assert_eq!(Channel::from_number(3), Some(Channel::Signal1));
        assert_eq!(Channel::from_number(0), Some(Channel::ReadEventStatus));
        assert_eq!(Channel::from_number(13), None); // SPU_RdMachStat: not modelled
        for (n, c) in Channel::NUMBERS {
            assert_eq!(c.number(), n);
            assert_eq!(Channel::from_number(n), Some(c));
        }
    }
}
