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
//! let mut m = Machine::new(MachineConfig::load("qs20", &[]).unwrap(), 1);
//! let ea = m.alloc(16384, 128).unwrap();
//! m.spawn_native(0, ea, 0, spe_main).unwrap();
//! let summary = m.run().unwrap();
//! assert!(summary.cycles > 0);
//! ```

use crate::error::MfcErrorKind;
use crate::mfc::command::{MfcCommand, Opcode};
use crate::mfc::tags::TagUpdate;
use crate::storage::Storage;
use crate::time::Cycle;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

/// One request of a program to the chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Run on the SPU for this many cycles (the program's own computation).
    Compute(Cycle),
    /// Issue an MFC command (channel writes, then the command enters the queue).
    Mfc(MfcCommand),
    /// `mfc_write_tag_mask`.
    WriteTagMask(u32),
    /// `mfc_read_tag_status_{immediate,any,all}`.
    ReadTagStatus(TagUpdate),
    /// `spu_read_decrementer`.
    ReadDecrementer,
    /// `spu_write_decrementer`.
    WriteDecrementer(u32),
    /// The program ends with this exit value.
    Exit(u32),
}

impl Request {
    /// How the SDK spells this call, for error and deadlock reports.
    pub fn describe(&self, tag_mask: u32) -> String {
        match self {
            Request::Compute(c) => format!("compute({c})"),
            Request::Mfc(c) => c.to_string(),
            Request::WriteTagMask(m) => format!("mfc_write_tag_mask(0x{m:x})"),
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
}

/// The handle a native SPE program uses: the Rust twin of `spu_mfcio.h`.
#[derive(Debug, Clone)]
pub struct Spu {
    port: Rc<Port>,
}

impl Spu {
    pub(crate) fn new(
        spe: u32,
        argp: u64,
        envp: u64,
        ls: Arc<Storage>,
        ls_reserved: u32,
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
    pub fn ls_read(&self, lsa: u32, out: &mut [u8]) {
        self.port.ls.read(lsa as usize, out)
    }

    /// Copies bytes into the local store.
    pub fn ls_write(&self, lsa: u32, data: &[u8]) {
        self.port.ls.write(lsa as usize, data)
    }

    /// Reads a big-endian u32 from the local store.
    pub fn ls_read_u32(&self, lsa: u32) -> u32 {
        self.port.ls.read_u32_be(lsa as usize)
    }

    /// Writes a big-endian u32 to the local store.
    pub fn ls_write_u32(&self, lsa: u32, v: u32) {
        self.port.ls.write_u32_be(lsa as usize, v)
    }

    fn call(&self, r: Request) -> Call<'_> {
        Call {
            port: &self.port,
            request: Some(r),
        }
    }

    fn dma(&self, op: Opcode, lsa: u32, ea: u64, size: u32, tag: u32) -> Call<'_> {
        self.call(Request::Mfc(MfcCommand {
            op,
            lsa,
            ea,
            size,
            tag,
        }))
    }

    /// `mfc_get(ls, ea, size, tag, 0, 0)`.
    pub async fn mfc_get(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::Get, lsa, ea, size, tag).await;
    }
    /// `mfc_getb`.
    pub async fn mfc_getb(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::GetB, lsa, ea, size, tag).await;
    }
    /// `mfc_getf`.
    pub async fn mfc_getf(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::GetF, lsa, ea, size, tag).await;
    }
    /// `mfc_put(ls, ea, size, tag, 0, 0)`.
    pub async fn mfc_put(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::Put, lsa, ea, size, tag).await;
    }
    /// `mfc_putb`.
    pub async fn mfc_putb(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::PutB, lsa, ea, size, tag).await;
    }
    /// `mfc_putf`.
    pub async fn mfc_putf(&self, lsa: u32, ea: u64, size: u32, tag: u32) {
        self.dma(Opcode::PutF, lsa, ea, size, tag).await;
    }
    /// `mfc_barrier(tag)`.
    pub async fn mfc_barrier(&self, tag: u32) {
        self.dma(Opcode::Barrier, 0, 0, 0, tag).await;
    }
    /// `mfc_write_tag_mask(mask)`.
    pub async fn mfc_write_tag_mask(&self, mask: u32) {
        self.call(Request::WriteTagMask(mask)).await;
    }
    /// `mfc_read_tag_status_all()`: waits until every group in the mask is done.
    pub async fn mfc_read_tag_status_all(&self) -> u32 {
        self.call(Request::ReadTagStatus(TagUpdate::All)).await as u32
    }
    /// `mfc_read_tag_status_any()`: waits until some group in the mask is done.
    pub async fn mfc_read_tag_status_any(&self) -> u32 {
        self.call(Request::ReadTagStatus(TagUpdate::Any)).await as u32
    }
    /// `mfc_read_tag_status_immediate()`.
    pub async fn mfc_read_tag_status_immediate(&self) -> u32 {
        self.call(Request::ReadTagStatus(TagUpdate::Immediate))
            .await as u32
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
