//! Message passing between SPEs (Keller and Varbanescu 2010's library) and the programs built on it.
//!
//! The design is the one Keller and Varbanescu 2010 describes for the Hagen library: every task
//! has send and receive buffers in its local store at addresses exchanged at
//! start-up; a send writes a notification into a matrix in main memory (one
//! 128-byte row per receiver, one 16-byte slot per sender); the receiver polls
//! by reading its whole row with one get, pulls the packet with an SPE-to-SPE
//! DMA from the sender's local store into its own, and writes an
//! acknowledgement into the sender's row of an acknowledgement matrix; the
//! sender polls its acknowledgement row and frees the buffer.
//!
//! Notifications and acknowledgements are counters: slot `[r][s]` of the
//! notification matrix holds how many packets `s` has sent to `r`, slot
//! `[s][r]` of the acknowledgement matrix how many of them `r` has pulled. A
//! pair of tasks has `nbuf` buffers on each side; packet `n` travels in buffer
//! `n % nbuf`.
//!
//! The start-up exchange goes through main memory: the PPE writes one control
//! block per task (task id, peers, the local-store addresses of every buffer,
//! the matrices; see [`cb`]) and each task fetches its own with one get. Where
//! the task id comes from is the seed's two placement modes: passed as `envp`
//! (`default`), or written by the PPE straight into the local store at
//! [`TASK_ID_LSA`] (`pinned`, `envp` = [`PINNED`]).
//!
//! Programs (each the twin of a Python program in `cellsim.messaging`, same
//! SPU calls in the same order, hence the same simulated cycles):
//! - [`forward_task`]: sends its initial packets, and forwards received
//!   packets to another peer (the ring benchmark of Keller and Varbanescu 2010);
//! - [`exchange_task`]: iterations of "send so many bytes to each out-peer,
//!   receive from each in-peer" (any communication graph);
//! - [`hv_traffic`]: background memory traffic of the PS3 hypervisor's SPE;
//! - [`os_noise`]: a PPE thread standing for the operating system: memory-mapped
//!   reads of the SPEs' status registers at random intervals.

use cellsim_engine::memory_map::{ps, MemoryMap};
use cellsim_engine::program::{Ppe, Spu};
use cellsim_engine::time::Cycle;
use cellsim_engine::PollRow;
use serde::Deserialize;

/// Most tasks (one per SPE of a two-chip blade).
pub const MAX_TASKS: usize = 16;
/// Most peers of one task, each way.
pub const MAX_PEERS: usize = 8;
/// Bytes of one matrix row (one receiver's notifications or one sender's
/// acks) of up to [`ROW_TASKS`] tasks; the control block's
/// [`cb::ROW_STRIDE`] gives the row of more tasks (0 means this).
pub const ROW_BYTES: u64 = 128;
/// Tasks whose slots fit one [`ROW_BYTES`] row.
pub const ROW_TASKS: usize = 8;
/// Bytes of one slot of a matrix row.
pub const SLOT_BYTES: u64 = 16;
/// Bytes of one task's control block in main memory.
pub const CB_BYTES: u32 = 640;
/// Where the PPE writes the task id in `pinned` mode (a global of the program image).
pub const TASK_ID_LSA: u32 = 0x3F80;
/// `envp` of a task that reads its id from [`TASK_ID_LSA`].
pub const PINNED: u64 = 0xFFFF_FFFF;
/// Control-block magic number (format version 1).
pub const MAGIC: u32 = 0xCE11_0001;
/// "No peer" in a control block.
pub const NONE: u32 = 0xFFFF_FFFF;

/// Most buffers per peer and direction.
pub const MAX_NBUF: u32 = 16;

/// Tag group of the polling gets (and the control block).
pub const TAG_POLL: u32 = 0;
/// Tag group of the packet gets.
pub const TAG_DATA: u32 = 1;
/// Tag group of the notification, acknowledgement and done puts.
pub const TAG_SIG: u32 = 2;

/// [`cb::FLAGS`]: wait for every DMA before going on (the machine file's
/// `messaging.dma_wait = "each"`), not for a poll's packet gets together.
pub const FLAG_WAIT_EACH: u32 = 1;

/// Exit value of a task whose control block is not one (bad magic).
pub const EXIT_BAD_CB: u32 = 0xBAD0_0001;

/// Word offsets of the control block (big-endian u32 words).
pub mod cb {
    /// [`super::MAGIC`].
    pub const MAGIC: usize = 0;
    /// This task's id.
    pub const TASK: usize = 1;
    /// Tasks in all.
    pub const NTASKS: usize = 2;
    /// Bytes of a full packet (a multiple of 16, at most 16 KB).
    pub const PACKET: usize = 3;
    /// Buffers per peer and direction.
    pub const NBUF: usize = 4;
    /// SPU cycles between two polls when nothing happened.
    pub const POLL_CYCLES: usize = 5;
    /// SPU cycles of the library's bookkeeping per send and per received packet.
    pub const CALL_CYCLES: usize = 6;
    /// Iterations ([`super::exchange_task`]).
    pub const ITERATIONS: usize = 7;
    /// Notification matrix (high, low word).
    pub const NOTIFY_EA: usize = 8;
    /// Acknowledgement matrix (high, low word).
    pub const ACK_EA: usize = 10;
    /// Done flags, one 16-byte slot per task (high, low word).
    pub const DONE_EA: usize = 12;
    /// Out-peers in use.
    pub const N_OUT: usize = 14;
    /// In-peers in use.
    pub const N_IN: usize = 15;
    /// LS buffer for the notification row.
    pub const ROW_LSA: usize = 16;
    /// LS buffer for the acknowledgement row.
    pub const ACKROW_LSA: usize = 17;
    /// LS of the 16-byte slots the puts are made from: one per out-peer
    /// (notifications), one per in-peer (acknowledgements), one for done.
    pub const SIG_LSA: usize = 18;
    /// LS of the result block (written at the end: done marker, errors).
    pub const RESULT_LSA: usize = 19;
    /// LS of the task's own payload (initial packets).
    pub const PAYLOAD_LSA: usize = 20;
    /// Bytes from one matrix row to the next (0: [`super::ROW_BYTES`]); the
    /// local-store row buffers are this long too.
    pub const ROW_STRIDE: usize = 21;
    /// How the library runs ([`super::FLAG_WAIT_EACH`]; 0: as the paper reads).
    pub const FLAGS: usize = 22;
    /// SPU cycles the library waits after every pass of its loop that did
    /// something (0: it waits only after an idle pass, [`POLL_CYCLES`]).
    pub const PASS_DELAY: usize = 23;
    /// First out-peer record ([`OUT_WORDS`] words each).
    pub const OUT: usize = 24;
    /// Words per out-peer: task, logical SPE, LS of my `nbuf` send buffers,
    /// packets to send in all, initial packets (from the payload), bytes per iteration.
    pub const OUT_WORDS: usize = 6;
    /// First in-peer record ([`IN_WORDS`] words each).
    pub const IN: usize = OUT + super::MAX_PEERS * OUT_WORDS;
    /// Words per in-peer: task, logical SPE, LS of its send buffers for me,
    /// LS of my `nbuf` receive buffers, packets to receive in all, out-peer
    /// they are forwarded to (or NONE), how many of them are forwarded, bytes
    /// per iteration.
    pub const IN_WORDS: usize = 8;
    /// Words in use.
    pub const WORDS: usize = IN + super::MAX_PEERS * IN_WORDS;
}

/// Cycles the SPU spends copying `bytes` in its local store: a quadword load
/// and a quadword store, both on the odd pipeline, per 16 bytes.
pub fn copy_cycles(bytes: u32) -> Cycle {
    2 * bytes.div_ceil(16) as Cycle
}

/// Bytes of packet `index` (0-based within an iteration) of a stream of
/// `bytes` per iteration in packets of at most `packet` bytes; the last one
/// is rounded up to 16 bytes.
pub fn packet_size(bytes: u32, packet: u32, index: u32) -> u32 {
    let full = bytes / packet;
    if index < full {
        packet
    } else {
        (bytes - full * packet).div_ceil(16) * 16
    }
}

/// Packets per iteration of a stream of `bytes` per iteration.
pub fn packets_per_iteration(bytes: u32, packet: u32) -> u32 {
    bytes.div_ceil(packet).max(1)
}

/// Rows the last idle wait ([`Endpoint::idle`]) fetched: the next round
/// reads them from the local store instead of getting them again.
#[derive(Debug, Clone, Copy, Default)]
struct Fresh {
    notifications: bool,
    acks: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct OutPeer {
    task: u32,
    send_lsa: u32,
    target: u32,
    initial: u32,
    bytes: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct InPeer {
    task: u32,
    spe: u32,
    peer_send_lsa: u32,
    recv_lsa: u32,
    target: u32,
    fwd: u32,
    fwd_count: u32,
    bytes: u32,
}

/// One task's end of the message-passing library.
#[derive(Debug)]
pub struct Endpoint {
    spu: Spu,
    /// This task's id.
    pub task: u32,
    /// Bytes of a full packet.
    pub packet: u32,
    /// Buffers per peer and direction.
    pub nbuf: u32,
    /// Cycles between polls when idle.
    pub poll_cycles: Cycle,
    call_cycles: Cycle,
    /// [`FLAG_WAIT_EACH`]: every DMA is waited for as it is issued.
    wait_each: bool,
    /// Cycles waited after every pass that did something (0: none).
    pass_delay: Cycle,
    iterations: u32,
    ntasks: u32,
    row_bytes: u64,
    notify_ea: u64,
    ack_ea: u64,
    done_ea: u64,
    row_lsa: u32,
    ackrow_lsa: u32,
    sig_lsa: u32,
    result_lsa: u32,
    payload_lsa: u32,
    n_out: usize,
    n_in: usize,
    outs: [OutPeer; MAX_PEERS],
    ins: [InPeer; MAX_PEERS],
    /// Packets sent to each out-peer.
    pub sent: [u32; MAX_PEERS],
    /// Of those, acknowledged.
    pub acked: [u32; MAX_PEERS],
    /// Packets each in-peer has notified.
    pub notified: [u32; MAX_PEERS],
    /// Of those, pulls issued.
    pub pulled: [u32; MAX_PEERS],
    /// Of those, pulled and acknowledged.
    pub recvd: [u32; MAX_PEERS],
    /// Packets whose header was wrong ([`exchange_task`]).
    pub errors: u32,
    /// Host buffer for the copies of [`Endpoint::send`].
    scratch: Vec<u8>,
}

impl Endpoint {
    /// Fetches this task's control block (one get of [`CB_BYTES`] from
    /// `argp + task * CB_BYTES`) and opens the endpoint. The task id is `envp`,
    /// or in `pinned` mode (`envp == PINNED`) the word at [`TASK_ID_LSA`].
    pub async fn open(spu: Spu, argp: u64, envp: u64) -> Result<Endpoint, u32> {
        let task = if envp == PINNED {
            spu.ls_read_u32(TASK_ID_LSA)
        } else {
            envp as u32
        };
        let Ok(cb_lsa) = spu.ls_alloc(CB_BYTES, 128) else {
            return Err(EXIT_BAD_CB);
        };
        spu.mfc_get(
            cb_lsa,
            argp + task as u64 * CB_BYTES as u64,
            CB_BYTES,
            TAG_POLL,
        )
        .await;
        spu.mfc_write_tag_mask(1 << TAG_POLL).await;
        spu.mfc_read_tag_status_all().await;
        let w = |i: usize| spu.ls_read_u32(cb_lsa + 4 * i as u32);
        let ea = |i: usize| ((w(i) as u64) << 32) | w(i + 1) as u64;
        if w(cb::MAGIC) != MAGIC || w(cb::TASK) != task {
            return Err(EXIT_BAD_CB);
        }
        let n_out = (w(cb::N_OUT) as usize).min(MAX_PEERS);
        let n_in = (w(cb::N_IN) as usize).min(MAX_PEERS);
        let mut outs = [OutPeer::default(); MAX_PEERS];
        for (o, p) in outs.iter_mut().enumerate().take(n_out) {
            let b = cb::OUT + o * cb::OUT_WORDS;
            *p = OutPeer {
                task: w(b),
                send_lsa: w(b + 2),
                target: w(b + 3),
                initial: w(b + 4),
                bytes: w(b + 5),
            };
        }
        let mut ins = [InPeer::default(); MAX_PEERS];
        for (j, p) in ins.iter_mut().enumerate().take(n_in) {
            let b = cb::IN + j * cb::IN_WORDS;
            *p = InPeer {
                task: w(b),
                spe: w(b + 1),
                peer_send_lsa: w(b + 2),
                recv_lsa: w(b + 3),
                target: w(b + 4),
                fwd: w(b + 5),
                fwd_count: w(b + 6),
                bytes: w(b + 7),
            };
        }
        Ok(Endpoint {
            task,
            packet: w(cb::PACKET),
            nbuf: w(cb::NBUF).clamp(1, MAX_NBUF),
            poll_cycles: w(cb::POLL_CYCLES) as Cycle,
            call_cycles: w(cb::CALL_CYCLES) as Cycle,
            wait_each: w(cb::FLAGS) & FLAG_WAIT_EACH != 0,
            pass_delay: w(cb::PASS_DELAY) as Cycle,
            iterations: w(cb::ITERATIONS),
            ntasks: w(cb::NTASKS),
            row_bytes: match w(cb::ROW_STRIDE) {
                0 => ROW_BYTES,
                b => b as u64,
            },
            notify_ea: ea(cb::NOTIFY_EA),
            ack_ea: ea(cb::ACK_EA),
            done_ea: ea(cb::DONE_EA),
            row_lsa: w(cb::ROW_LSA),
            ackrow_lsa: w(cb::ACKROW_LSA),
            sig_lsa: w(cb::SIG_LSA),
            result_lsa: w(cb::RESULT_LSA),
            payload_lsa: w(cb::PAYLOAD_LSA),
            n_out,
            n_in,
            outs,
            ins,
            sent: [0; MAX_PEERS],
            acked: [0; MAX_PEERS],
            notified: [0; MAX_PEERS],
            pulled: [0; MAX_PEERS],
            recvd: [0; MAX_PEERS],
            errors: 0,
            scratch: Vec::new(),
            spu,
        })
    }

    /// Free send buffers towards out-peer `o`.
    pub fn free(&self, o: usize) -> u32 {
        self.nbuf - (self.sent[o] - self.acked[o])
    }

    /// LS address of send buffer `slot` towards out-peer `o`.
    fn send_buffer(&self, o: usize, slot: u32) -> u32 {
        self.outs[o].send_lsa + slot * self.packet
    }

    /// LS address of receive buffer `slot` of in-peer `j`.
    pub fn recv_buffer(&self, j: usize, slot: u32) -> u32 {
        self.ins[j].recv_lsa + slot * self.packet
    }

    /// Sends `size` bytes from `src` to out-peer `o` (a free buffer must
    /// exist): copies them into the next send buffer and puts the new send
    /// count into the receiver's notification row. Returns the buffer.
    pub async fn send(&mut self, o: usize, src: u32, size: u32) -> u32 {
        let slot = self.sent[o] % self.nbuf;
        let buf = self.send_buffer(o, slot);
        if src != buf {
            let mut tmp = std::mem::take(&mut self.scratch);
            tmp.resize(size as usize, 0);
            self.spu.ls_read(src, &mut tmp);
            self.spu.ls_write(buf, &tmp);
            self.scratch = tmp;
        }
        self.spu.compute(self.call_cycles + copy_cycles(size)).await;
        self.sent[o] += 1;
        let sig = self.sig_lsa + 16 * o as u32;
        self.spu.ls_write_u32(sig, self.sent[o]);
        let ea = self.notify_ea
            + self.outs[o].task as u64 * self.row_bytes
            + self.task as u64 * SLOT_BYTES;
        self.spu.mfc_put(sig, ea, 16, TAG_SIG).await;
        self.wait_if_each(TAG_SIG).await;
        buf
    }

    /// In the wait-for-each library, waits for the DMA just issued in `tag`'s
    /// group (the round trip a blocking call pays).
    async fn wait_if_each(&self, tag: u32) {
        if self.wait_each {
            self.spu.mfc_write_tag_mask(1 << tag).await;
            self.spu.mfc_read_tag_status_all().await;
        }
    }

    /// Reads this task's notification row with one get and updates what
    /// every in-peer has notified.
    pub async fn poll_notifications(&mut self) {
        self.fetch(self.notification_row()).await;
        self.read_notifications();
    }

    /// Reads this task's acknowledgement row with one get; returns whether
    /// any buffer was freed.
    pub async fn poll_acks(&mut self) -> bool {
        self.fetch(self.ack_row()).await;
        self.read_acks()
    }

    /// This task's notification row and its local-store buffer.
    fn notification_row(&self) -> PollRow {
        self.own_row(self.notify_ea, self.row_lsa)
    }

    /// This task's acknowledgement row and its local-store buffer.
    fn ack_row(&self) -> PollRow {
        self.own_row(self.ack_ea, self.ackrow_lsa)
    }

    /// This task's row of the matrix at `matrix_ea`, polled into `lsa`.
    fn own_row(&self, matrix_ea: u64, lsa: u32) -> PollRow {
        PollRow {
            lsa,
            ea: matrix_ea + self.task as u64 * self.row_bytes,
            size: self.ntasks * SLOT_BYTES as u32,
            tag: TAG_POLL,
        }
    }

    /// Gets a row and waits for it.
    async fn fetch(&self, r: PollRow) {
        self.spu.mfc_get(r.lsa, r.ea, r.size, r.tag).await;
        self.spu.mfc_write_tag_mask(1 << r.tag).await;
        self.spu.mfc_read_tag_status_all().await;
    }

    /// What every in-peer has notified, from the row in the local store.
    fn read_notifications(&mut self) {
        for j in 0..self.n_in {
            let at = self.row_lsa + self.ins[j].task * SLOT_BYTES as u32;
            self.notified[j] = self.spu.ls_read_u32(at);
        }
    }

    /// The acknowledgements, from the row in the local store; whether any
    /// buffer was freed.
    fn read_acks(&mut self) -> bool {
        let mut freed = false;
        for o in 0..self.n_out {
            let at = self.ackrow_lsa + self.outs[o].task * SLOT_BYTES as u32;
            let a = self.spu.ls_read_u32(at);
            if a != self.acked[o] {
                self.acked[o] = a;
                freed = true;
            }
        }
        freed
    }

    /// [`Endpoint::poll_notifications`], or only its reading when `fresh`
    /// says the row is in the local store already.
    async fn notifications(&mut self, fresh: &mut Fresh) {
        if !std::mem::take(&mut fresh.notifications) {
            self.fetch(self.notification_row()).await;
        }
        self.read_notifications();
    }

    /// [`Endpoint::poll_acks`], or only its reading when `fresh` says the
    /// row is in the local store already.
    async fn acks(&mut self, fresh: &mut Fresh) -> bool {
        if !std::mem::take(&mut fresh.acks) {
            self.fetch(self.ack_row()).await;
        }
        self.read_acks()
    }

    /// After a round of the task's loop that made no progress: what the
    /// plain loop does next, `compute(poll_cycles)` and rounds that poll the
    /// notification row (when `notifications`) and the acknowledgement row
    /// (when `acks`) and find them as they were, declared to the engine as
    /// one polling loop (`Spu::mfc_poll`). It returns once a row fetched
    /// differs: the rows fetched in that last round are in the local store
    /// ([`Fresh`]), and the task's loop goes on from there, as the plain
    /// loop would (a row as it was gives the round no progress: the round
    /// before saw the same with the same state).
    async fn idle(&mut self, notifications: bool, acks: bool) -> Fresh {
        let mut rows = [self.notification_row(); 2];
        let mut n = 0;
        if notifications {
            n += 1;
        }
        if acks {
            rows[n] = self.ack_row();
            n += 1;
        }
        if n == 0 {
            self.spu.compute(self.poll_cycles).await;
            return Fresh::default();
        }
        let changed = self.spu.mfc_poll(self.poll_cycles, &rows[..n]).await;
        Fresh {
            notifications,
            acks: acks && changed == n - 1,
        }
    }

    /// Some in-peer has packets left to pull.
    fn pulls_left(&self) -> bool {
        (0..self.n_in).any(|j| self.pulled[j] < self.ins[j].target)
    }

    /// A pass's acknowledgements: whether any came in (none looked for once
    /// every send is acknowledged).
    async fn acks_in(&mut self, fresh: &mut Fresh) -> bool {
        !self.all_acked() && self.acks(fresh).await
    }

    /// The end of a pass of a task's loop: one without progress idles until
    /// a row it polls changes ([`Endpoint::idle`]; `fresh` says what it read),
    /// one with progress spends the pass's own delay.
    async fn end_pass(&mut self, progressed: bool, fresh: &mut Fresh) {
        if !progressed {
            let polls = self.pulls_left();
            *fresh = self.idle(polls, !self.all_acked()).await;
        } else if self.pass_delay > 0 {
            self.spu.compute(self.pass_delay).await;
        }
    }

    /// Packets in-peer `j` has notified that are not pulled yet.
    pub fn pending(&self, j: usize) -> u32 {
        self.notified[j] - self.pulled[j]
    }

    /// Issues the get of in-peer `j`'s next packet (`size` bytes) from its
    /// send buffer into the matching receive buffer; returns that buffer.
    pub async fn pull(&mut self, j: usize, size: u32) -> u32 {
        let slot = self.pulled[j] % self.nbuf;
        let p = self.ins[j];
        let dst = self.recv_buffer(j, slot);
        let src = MemoryMap::ls_ea(p.spe) + (p.peer_send_lsa + slot * self.packet) as u64;
        self.spu.mfc_get(dst, src, size, TAG_DATA).await;
        self.wait_if_each(TAG_DATA).await;
        self.pulled[j] += 1;
        dst
    }

    /// Waits for the packet gets issued (each was waited for already in the
    /// wait-for-each library).
    pub async fn wait_pulls(&mut self) {
        if self.wait_each {
            return;
        }
        self.spu.mfc_write_tag_mask(1 << TAG_DATA).await;
        self.spu.mfc_read_tag_status_all().await;
    }

    /// The next pulled packet of in-peer `j` has landed: acknowledge it (its
    /// sender may reuse the buffer).
    pub async fn ack(&mut self, j: usize) {
        self.spu.compute(self.call_cycles).await;
        self.recvd[j] += 1;
        let sig = self.sig_lsa + 16 * (self.n_out + j) as u32;
        self.spu.ls_write_u32(sig, self.recvd[j]);
        let ea =
            self.ack_ea + self.ins[j].task as u64 * self.row_bytes + self.task as u64 * SLOT_BYTES;
        self.spu.mfc_put(sig, ea, 16, TAG_SIG).await;
        self.wait_if_each(TAG_SIG).await;
    }

    /// Whether every packet sent so far is acknowledged.
    fn all_acked(&self) -> bool {
        (0..self.n_out).all(|o| self.acked[o] == self.sent[o])
    }

    /// Ends the task: writes the result block (done marker, errors), puts the
    /// done flag into main memory and waits for every put.
    pub async fn close(&mut self) {
        self.spu.ls_write_u32(self.result_lsa, 1);
        self.spu.ls_write_u32(self.result_lsa + 4, self.errors);
        let sig = self.sig_lsa + 16 * (self.n_out + self.n_in) as u32;
        self.spu.ls_write_u32(sig, 1);
        if self.done_ea != 0 {
            let ea = self.done_ea + self.task as u64 * SLOT_BYTES;
            self.spu.mfc_put(sig, ea, 16, TAG_SIG).await;
        }
        self.spu
            .mfc_write_tag_mask((1 << TAG_POLL) | (1 << TAG_DATA) | (1 << TAG_SIG))
            .await;
        self.spu.mfc_read_tag_status_all().await;
    }
}

/// A task that sends its initial packets and forwards what it receives: the
/// ring of Keller and Varbanescu 2010 (each task starts two packets and forwards every packet
/// it receives to its other neighbour). Everything comes from the control
/// block: per out-peer the packets to send in all and how many of them are
/// initial ones (this task's payloads, numbered out-peer by out-peer), per
/// in-peer the packets to receive, the out-peer they go on to and how many of
/// them do (the rest are absorbed).
///
/// A packet is pulled only into a free receive buffer and waits there until
/// a send buffer towards its next hop is free: with `nbuf` buffers on both
/// sides a ring holds `2 nbuf` packets per task and direction, so it cannot
/// deadlock while it carries fewer.
#[allow(clippy::needless_range_loop)] // per-peer arrays, indexed like the Python twin
pub async fn forward_task(spu: Spu, argp: u64, envp: u64) -> u32 {
    let mut ep = match Endpoint::open(spu.clone(), argp, envp).await {
        Ok(ep) => ep,
        Err(code) => return code,
    };
    let packet = ep.packet;
    let mut initial_sent = [0u32; MAX_PEERS];
    let mut base = [0u32; MAX_PEERS];
    for o in 1..ep.n_out {
        base[o] = base[o - 1] + ep.outs[o - 1].initial;
    }
    // Received packets whose receive buffer is free again (forwarded or absorbed).
    let mut done = [0u32; MAX_PEERS];
    let mut order = [0usize; MAX_PEERS * MAX_NBUF as usize];
    let mut fresh = Fresh::default();
    loop {
        let mut progressed = false;
        // 1. initial packets, as buffers allow
        for o in 0..ep.n_out {
            while initial_sent[o] < ep.outs[o].initial && ep.free(o) > 0 {
                let src = ep.payload_lsa + (base[o] + initial_sent[o]) * packet;
                ep.send(o, src, packet).await;
                initial_sent[o] += 1;
                progressed = true;
            }
        }
        // 2. pull what was notified into free receive buffers
        if ep.pulls_left() {
            ep.notifications(&mut fresh).await;
            let mut n = 0;
            for j in 0..ep.n_in {
                while ep.pending(j) > 0
                    && ep.pulled[j] < ep.ins[j].target
                    && ep.pulled[j] - done[j] < ep.nbuf
                {
                    ep.pull(j, packet).await;
                    order[n] = j;
                    n += 1;
                }
            }
            if n > 0 {
                ep.wait_pulls().await;
                for &j in &order[..n] {
                    ep.ack(j).await;
                }
                progressed = true;
            }
        }
        // 3. forward received packets, in order, as send buffers allow
        for j in 0..ep.n_in {
            while done[j] < ep.recvd[j] {
                let k = done[j];
                let p = ep.ins[j];
                if k < p.fwd_count {
                    let o = p.fwd as usize;
                    if initial_sent[o] < ep.outs[o].initial || ep.free(o) == 0 {
                        break;
                    }
                    let buf = ep.recv_buffer(j, k % ep.nbuf);
                    ep.send(o, buf, packet).await;
                }
                done[j] += 1;
                progressed = true;
            }
        }
        // 4. acknowledgements
        progressed |= ep.acks_in(&mut fresh).await;
        let received = (0..ep.n_in).all(|j| done[j] == ep.ins[j].target);
        let sent = (0..ep.n_out).all(|o| ep.sent[o] == ep.outs[o].target);
        if received && sent && ep.all_acked() {
            break;
        }
        ep.end_pass(progressed, &mut fresh).await;
    }
    ep.close().await;
    0
}

/// Writes the 8-byte header of an [`exchange_task`] packet: sender and sequence number.
fn write_header(spu: &Spu, buf: u32, task: u32, seq: u32) {
    spu.ls_write_u32(buf, task);
    spu.ls_write_u32(buf + 4, seq);
}

/// Iterations of a communication pattern: in iteration `t` the task sends its
/// out-peer's bytes per iteration (in packets of at most `packet` bytes) to
/// each out-peer, once it has received every packet of iteration `t - 1`
/// from each in-peer; it pulls whatever has been notified all along. Each
/// packet carries the sender and its sequence number in its first 8 bytes;
/// the receiver counts wrong ones in [`Endpoint::errors`].
#[allow(clippy::needless_range_loop)] // per-peer arrays, indexed like the Python twin
pub async fn exchange_task(spu: Spu, argp: u64, envp: u64) -> u32 {
    let mut ep = match Endpoint::open(spu.clone(), argp, envp).await {
        Ok(ep) => ep,
        Err(code) => return code,
    };
    let packet = ep.packet;
    let iterations = ep.iterations;
    let mut ppi_out = [0u32; MAX_PEERS];
    for (o, p) in ppi_out.iter_mut().enumerate().take(ep.n_out) {
        *p = packets_per_iteration(ep.outs[o].bytes, packet);
    }
    let mut ppi_in = [0u32; MAX_PEERS];
    for (j, p) in ppi_in.iter_mut().enumerate().take(ep.n_in) {
        *p = packets_per_iteration(ep.ins[j].bytes, packet);
    }
    let mut order = [0usize; MAX_PEERS * MAX_NBUF as usize];
    let mut iter = 0u32;
    let mut fresh = Fresh::default();
    loop {
        let mut progressed = false;
        // 1. this iteration's sends, once the last iteration's data is in
        if iter < iterations && (0..ep.n_in).all(|j| ep.recvd[j] >= iter * ppi_in[j]) {
            for o in 0..ep.n_out {
                while ep.sent[o] < (iter + 1) * ppi_out[o] && ep.free(o) > 0 {
                    let seq = ep.sent[o];
                    let size = packet_size(ep.outs[o].bytes, packet, seq % ppi_out[o]);
                    write_header(&spu, ep.payload_lsa, ep.task, seq);
                    ep.send(o, ep.payload_lsa, size).await;
                    progressed = true;
                }
            }
            if (0..ep.n_out).all(|o| ep.sent[o] == (iter + 1) * ppi_out[o]) {
                iter += 1;
                progressed = true;
            }
        }
        // 2. receive what was notified
        if ep.pulls_left() {
            ep.notifications(&mut fresh).await;
            let mut n = 0;
            for j in 0..ep.n_in {
                while ep.pending(j) > 0 && ep.pulled[j] < ep.ins[j].target {
                    let k = ep.pulled[j];
                    let size = packet_size(ep.ins[j].bytes, packet, k % ppi_in[j]);
                    ep.pull(j, size).await;
                    order[n] = j;
                    n += 1;
                }
            }
            if n > 0 {
                ep.wait_pulls().await;
                for &j in &order[..n] {
                    let k = ep.recvd[j];
                    let buf = ep.recv_buffer(j, k % ep.nbuf);
                    if spu.ls_read_u32(buf) != ep.ins[j].task || spu.ls_read_u32(buf + 4) != k {
                        ep.errors += 1;
                    }
                    ep.ack(j).await;
                }
                progressed = true;
            }
        }
        // 3. acknowledgements
        progressed |= ep.acks_in(&mut fresh).await;
        let received = (0..ep.n_in).all(|j| ep.recvd[j] == ep.ins[j].target);
        if iter == iterations && received && ep.all_acked() {
            break;
        }
        ep.end_pass(progressed, &mut fresh).await;
    }
    ep.close().await;
    0
}

/// Parameters of [`hv_traffic`].
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HvTraffic {
    /// The tasks' done flags (16 bytes each, in a region of at least `size` bytes).
    pub done_ea: u64,
    /// Tasks to wait for.
    pub tasks: u32,
    /// A scratch region of `size` bytes the puts write.
    pub scratch_ea: u64,
    /// Bytes of each get and put (a multiple of 16, at least 16 x tasks).
    pub size: u32,
    /// Mean SPU cycles between two rounds (uniform in 0..2x).
    pub interval: Cycle,
    /// Seed of the intervals.
    #[serde(default = "crate::one")]
    pub seed: u64,
}

impl HvTraffic {
    /// The sizes the hypervisor's rounds cannot have.
    pub fn check(&self) -> Result<(), String> {
        let (size, tasks) = (self.size, self.tasks);
        if !size.is_multiple_of(16) || size < 16 * tasks || size > 16384 {
            return Err(format!(
                "hv_traffic: size {size} must be a multiple of 16 from 16 x tasks to 16384"
            ));
        }
        Ok(())
    }
}

/// xorshift64*: the seeded draws of the background programs.
fn next_random(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11
}

/// The PS3 hypervisor's SPE as background traffic: every `interval` cycles
/// on average it reads `size` bytes from main memory and writes `size` bytes
/// back; it stops once every task's done flag is set (the flags are in the
/// region it reads).
pub async fn hv_traffic(spu: Spu, p: HvTraffic) -> u32 {
    let Ok(a) = spu.ls_alloc(p.size, 128) else {
        return u32::MAX;
    };
    let Ok(b) = spu.ls_alloc(p.size, 128) else {
        return u32::MAX;
    };
    let mut x = p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rounds = 0u32;
    loop {
        spu.mfc_get(a, p.done_ea, p.size, 0).await;
        spu.mfc_put(b, p.scratch_ea, p.size, 0).await;
        spu.mfc_write_tag_mask(1).await;
        spu.mfc_read_tag_status_all().await;
        rounds += 1;
        if (0..p.tasks).all(|t| spu.ls_read_u32(a + 16 * t) != 0) {
            return rounds;
        }
        let gap = next_random(&mut x) % (2 * p.interval.max(1));
        spu.compute(gap).await;
    }
}

/// Parameters of [`os_noise`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsNoise {
    /// The tasks' done flags (16 bytes each).
    pub done_ea: u64,
    /// Tasks to wait for.
    pub tasks: u32,
    /// Logical SPEs whose status registers are read (at most [`MAX_TASKS`]).
    pub spes: Vec<u32>,
    /// Mean core cycles between two reads (uniform in 0..2x).
    pub interval: Cycle,
    /// Seed of the intervals and of the SPE picked.
    #[serde(default = "crate::one")]
    pub seed: u64,
}

impl OsNoise {
    /// The SPE counts the noise cannot pick from.
    pub fn check(&self) -> Result<(), String> {
        if self.spes.len() > MAX_TASKS {
            return Err(format!(
                "os_noise: at most {MAX_TASKS} SPEs, not {}",
                self.spes.len()
            ));
        }
        Ok(())
    }
}

/// The operating system on the PPE as background traffic: at random
/// intervals a memory-mapped read of a random SPE's mailbox status register
/// (what spufs does), a bus request from the PPE's ramp through the command
/// bus and the rings; it stops once every task's done flag is set (cacheable
/// loads of main memory, which cost no bus traffic in this model).
pub async fn os_noise(ppe: Ppe, p: OsNoise) -> u32 {
    let mut x = p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut reads = 0u32;
    loop {
        let gap = next_random(&mut x) % (2 * p.interval.max(1));
        ppe.compute(gap).await;
        if !p.spes.is_empty() {
            let spe = p.spes[(next_random(&mut x) % p.spes.len() as u64) as usize];
            ppe.load(MemoryMap::ps_ea(spe) + ps::SPU_MBOX_STAT as u64, 4)
                .await;
            reads += 1;
        }
        let mut done = true;
        for t in 0..p.tasks {
            if ppe.load(p.done_ea + 16 * t as u64, 4).await == 0 {
                done = false;
                break;
            }
        }
        if done {
            return reads;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellsim_engine::{Machine, MachineConfig, ThreadState};

    #[test]
    fn packet_sizes_and_copy_cost() {
        assert_eq!(packets_per_iteration(1000, 512), 2);
        assert_eq!(packet_size(1000, 512, 0), 512);
        assert_eq!(packet_size(1000, 512, 1), 496);
        assert_eq!(packet_size(20, 512, 0), 32);
        assert_eq!(copy_cycles(1024), 128);
    }

    #[test]
    fn a_task_without_a_control_block_stops_with_an_error_code() {
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
        let cbs = m.alloc(CB_BYTES as u64, 128).unwrap();
        m.spawn_native(0, cbs, 0, move |spu| forward_task(spu, cbs, 0))
            .unwrap();
        let s = m.run().unwrap();
        assert!(matches!(
            s.threads[0].state,
            ThreadState::Finished {
                code: EXIT_BAD_CB,
                ..
            }
        ));
    }

    #[test]
    fn background_programs_stop_when_the_tasks_are_done() {
        let mut m = Machine::new(MachineConfig::load("qs20-1chip", &[]).unwrap(), 1);
        let done = m.alloc(128, 128).unwrap();
        let scratch = m.alloc(128, 128).unwrap();
        for t in 0..2u64 {
            m.memory().write_u32_be((done + 16 * t) as usize, 1);
        }
        let p = HvTraffic {
            done_ea: done,
            tasks: 2,
            scratch_ea: scratch,
            size: 128,
            interval: 1000,
            seed: 3,
        };
        m.spawn_native(0, 0, 0, move |spu| hv_traffic(spu, p))
            .unwrap();
        let n = OsNoise {
            done_ea: done,
            tasks: 2,
            spes: vec![0],
            interval: 1000,
            seed: 3,
        };
        m.spawn_ppe_native(move |ppe| os_noise(ppe, n));
        let s = m.run().unwrap();
        for t in &s.threads {
            assert!(matches!(t.state, ThreadState::Finished { code: 1, .. }));
        }
    }
}
