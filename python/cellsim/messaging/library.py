"""Keller and Varbanescu 2010's message-passing library: the SPE side (Python twin of
``crates/cellsim-programs/src/messaging.rs``) and the PPE side that sets it up.

Every task has send and receive buffers in its local store at addresses
exchanged at start-up. ``send`` copies the data into a free send buffer and
puts the new send count into the receiver's row of a notification matrix in
main memory (one 128-byte row per receiver, one 16-byte slot per sender); the
receiver polls by reading its whole row with one get, pulls the packet with an
SPE-to-SPE DMA from the sender's local store into its own, and puts its
receive count into the sender's row of an acknowledgement matrix; the sender
polls its acknowledgement row and frees the buffer. Packet ``n`` between two
tasks travels in buffer ``n % nbuf`` on both sides.

The start-up exchange goes through main memory: :func:`setup` (the PPE) writes
one control block per task with its peers and the local-store address of every
buffer; each task fetches its own with one get. In ``pinned`` mode the PPE
writes the task id straight into the local store at :data:`TASK_ID_LSA`
(Keller and Varbanescu 2010's deterministic variant); otherwise it is the task's ``envp``.

:func:`forward_task` and :func:`exchange_task` are SPE programs built on
:class:`Endpoint`; each is the line-by-line twin of the native kernel of the
same name (same SPU calls in the same order, hence the same simulated cycles).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..exceptions import UsageError
from ..machine import EaBuffer, Machine
from ..spu import (
    compute,
    library_wait_tags,
    ls_alloc,
    mfc_get,
    mfc_put,
    spu_ls,
)

__all__ = [
    "CB_BYTES",
    "MAX_NBUF",
    "MAX_PEERS",
    "PINNED",
    "TASK_ID_LSA",
    "Endpoint",
    "InPeer",
    "OutPeer",
    "Setup",
    "TaskSpec",
    "copy_cycles",
    "exchange_task",
    "forward_task",
    "packet_size",
    "packets_per_iteration",
    "row_bytes",
    "setup",
]

MAX_TASKS = 16
"""Most tasks: one per SPE of a two-chip blade."""
MAX_PEERS = 8
MAX_NBUF = 16
ROW_BYTES = 128
"""Bytes of a matrix row of up to :data:`ROW_TASKS` tasks (one 16-byte slot each)."""
ROW_TASKS = 8
SLOT_BYTES = 16
CB_BYTES = 640
TASK_ID_LSA = 0x3F80
PINNED = 0xFFFFFFFF
MAGIC = 0xCE110001
NONE = 0xFFFFFFFF
EXIT_BAD_CB = 0xBAD00001
TAG_POLL, TAG_DATA, TAG_SIG = 0, 1, 2
MAX_DMA = 16384

# control-block word offsets (crates/cellsim-programs/src/messaging.rs, mod cb)
_MAGIC, _TASK, _NTASKS, _PACKET, _NBUF, _POLL, _CALL, _ITER = range(8)
_NOTIFY, _ACK, _DONE, _N_OUT, _N_IN = 8, 10, 12, 14, 15
_ROW, _ACKROW, _SIG, _RESULT, _PAYLOAD, _ROW_STRIDE, _FLAGS, _PASS_DELAY = 16, 17, 18, 19, 20, 21, 22, 23
FLAG_WAIT_EACH = 1
"""Control-block flag: wait for every DMA as it is issued (``messaging.dma_wait = "each"``)."""
DMA_WAITS = ("batched", "each")
"""When the library waits for its DMAs: the choices of the machine file's ``messaging.dma_wait``."""
_OUT, _OUT_WORDS = 24, 6
_IN, _IN_WORDS = _OUT + MAX_PEERS * _OUT_WORDS, 8
_WORDS = _IN + MAX_PEERS * _IN_WORDS


def row_bytes(tasks: int) -> int:
    """Bytes of a notification or acknowledgement row for ``tasks`` tasks:
    128 (one line) up to 8 tasks, as the library had it on one chip; 16 bytes
    per task beyond, rounded up to whole 128-byte lines."""
    return ROW_BYTES * max(1, -(-tasks // ROW_TASKS))


def copy_cycles(nbytes: int) -> int:
    """SPU cycles to copy ``nbytes`` in the local store: a quadword load and a
    quadword store, both on the odd pipeline, per 16 bytes."""
    return 2 * -(-int(nbytes) // 16)


def packet_size(nbytes: int, packet: int, index: int) -> int:
    """Bytes of packet ``index`` of an iteration of ``nbytes`` in packets of
    at most ``packet`` bytes (the last one rounded up to 16 bytes)."""
    full = nbytes // packet
    if index < full:
        return packet
    return -(-(nbytes - full * packet) // 16) * 16


def packets_per_iteration(nbytes: int, packet: int) -> int:
    """Packets per iteration of a stream of ``nbytes`` per iteration."""
    return max(-(-int(nbytes) // packet), 1)


# -- the PPE side ----------------------------------------------------------------------


@dataclass(frozen=True)
class OutPeer:
    """A task this task sends to: ``target`` packets in all, the first
    ``initial`` of them its own payloads; ``bytes`` per iteration (exchange)."""

    task: int
    target: int
    initial: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class InPeer:
    """A task this task receives from: ``target`` packets in all; the first
    ``fwd_count`` go on to out-peer ``fwd`` (an index into ``outs``)."""

    task: int
    target: int
    fwd: int | None = None
    fwd_count: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class TaskSpec:
    """What one task sends and receives."""

    outs: tuple[OutPeer, ...]
    ins: tuple[InPeer, ...]

    @property
    def payloads(self) -> int:
        """Payload packets in the task's local store (its initial packets; at least one)."""
        return max(sum(o.initial for o in self.outs), 1)


@dataclass
class Layout:
    """Where one task's buffers are in its local store."""

    cb: int
    row: int
    ackrow: int
    sig: int
    result: int
    payload: int
    send: list[int]
    recv: list[int]
    end: int


@dataclass
class Setup:
    """What :func:`setup` made: pass ``argp`` and ``envp[task]`` to the task programs."""

    argp: int
    envp: list[int]
    notify: EaBuffer
    ack: EaBuffer
    done: EaBuffer
    layouts: list[Layout]
    payloads: list[np.ndarray]
    tasks: list[TaskSpec]
    spes: list[int]
    packet: int
    nbuf: int
    extra: dict[str, Any] = field(default_factory=dict)


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _layout(m: Machine, t: TaskSpec, packet: int, nbuf: int, stride: int) -> Layout:
    cb = _align(m.facts.ls_reserved_bytes, 128)
    at = cb + CB_BYTES
    row = _align(at, 128)
    ackrow = row + stride
    sig = ackrow + stride
    result = _align(sig + 16 * (len(t.outs) + len(t.ins) + 1), 16)
    payload = _align(result + 16, 128)
    at = payload + t.payloads * packet
    send = []
    for _ in t.outs:
        at = _align(at, 128)
        send.append(at)
        at += nbuf * packet
    recv = []
    for _ in t.ins:
        at = _align(at, 128)
        recv.append(at)
        at += nbuf * packet
    return Layout(cb, row, ackrow, sig, result, payload, send, recv, at)


def check_parameters(packet: int, nbuf: int, poll_cycles: int, call_cycles: int) -> None:
    """Validates the library's parameters (``UsageError`` naming the value)."""
    if not (16 <= packet <= MAX_DMA and packet % 16 == 0):
        raise UsageError(f"packet size {packet} must be a multiple of 16 from 16 to {MAX_DMA} bytes")
    if not 1 <= nbuf <= MAX_NBUF:
        raise UsageError(f"buffers per neighbour {nbuf} must be 1 to {MAX_NBUF}")
    if poll_cycles < 0 or call_cycles < 0:
        raise UsageError(f"polling interval {poll_cycles} and call cost {call_cycles} must not be negative")


def setup(
    m: Machine,
    tasks: Sequence[TaskSpec],
    spes: Sequence[int],
    *,
    packet: int,
    nbuf: int = 2,
    poll_cycles: int = 200,
    call_cycles: int = 40,
    iterations: int = 0,
    pinned: bool = False,
    seed: int = 0,
    done_bytes: int = 128,
    dma_wait: str = "batched",
    pass_delay_cycles: int = 0,
) -> Setup:
    """The PPE's side of the start-up: allocates the notification and
    acknowledgement matrices, the done flags and one control block per task,
    lays out each task's local store (checking that it fits), fills the
    payloads with seeded random bytes and, in ``pinned`` mode, writes each task
    id into its SPE's local store at :data:`TASK_ID_LSA`.

    Args:
        m: the machine, before it runs.
        tasks: what each task sends and receives.
        spes: the logical SPE of each task.
        packet: bytes of a full packet (a multiple of 16, at most 16 KB).
        nbuf: buffers per peer and direction.
        poll_cycles: SPU cycles between polls when nothing happened.
        call_cycles: SPU cycles of bookkeeping per send and per received packet.
        iterations: iterations of :func:`exchange_task`.
        pinned: task ids written into the local stores, else passed as ``envp``.
        seed: seed of the payload bytes.
        done_bytes: size of the done-flag region (at least 128).
        dma_wait: when the library waits for its DMAs (:data:`DMA_WAITS`).
        pass_delay_cycles: SPU cycles the library waits after every pass of its loop
            that did something (0: none; ``messaging.polling = "every_pass"``).
    """
    check_parameters(packet, nbuf, poll_cycles, call_cycles)
    if dma_wait not in DMA_WAITS:
        raise UsageError(f"dma_wait {dma_wait!r} is not one of {', '.join(DMA_WAITS)}")
    if pass_delay_cycles < 0:
        raise UsageError(f"pass delay {pass_delay_cycles} must not be negative")
    n = len(tasks)
    if n > MAX_TASKS:
        raise UsageError(
            f"{n} tasks: the library supports at most {MAX_TASKS} (the SPEs of a two-chip blade)"
        )
    stride = row_bytes(n)
    if len(spes) != n or len(set(spes)) != n:
        raise UsageError(f"logical SPEs {list(spes)} must be {n} distinct SPEs, one per task")
    for s in spes:
        if not 0 <= s < m.spe_count:
            raise UsageError(f"logical SPE {s} is not one of the {m.spe_count} SPEs of {m.name}")
    ls_top = m.facts.ls_bytes
    layouts = [_layout(m, t, packet, nbuf, stride) for t in tasks]
    for i, (t, lay) in enumerate(zip(tasks, layouts, strict=True)):
        if len(t.outs) > MAX_PEERS or len(t.ins) > MAX_PEERS:
            raise UsageError(
                f"task {i} has {max(len(t.outs), len(t.ins))} peers; the library's control block takes "
                f"at most {MAX_PEERS} each way"
            )
        if lay.end > ls_top:
            raise UsageError(
                f"packet size {packet} does not fit the local-store buffers: task {i} needs "
                f"{lay.end - lay.cb} bytes from 0x{lay.cb:x} ({t.payloads} payload, "
                f"{len(t.outs)} send and {len(t.ins)} receive peers x {nbuf} buffers of {packet} B) "
                f"but the local store ends at 0x{ls_top:x}"
            )
    # one row per task (at least 8 rows, the matrices' size on one chip)
    notify = m.alloc(stride * max(n, ROW_TASKS), 128)
    ack = m.alloc(stride * max(n, ROW_TASKS), 128)
    done = m.alloc(max(done_bytes, 128, SLOT_BYTES * n), 128)
    cbs = m.alloc(CB_BYTES * n, 128)
    rng = np.random.default_rng(seed)
    payloads = []
    for i, (t, lay, spe) in enumerate(zip(tasks, layouts, spes, strict=True)):
        w = np.zeros(CB_BYTES // 4, dtype=">u4")
        w[_MAGIC], w[_TASK], w[_NTASKS] = MAGIC, i, n
        w[_PACKET], w[_NBUF], w[_POLL], w[_CALL], w[_ITER] = (
            packet,
            nbuf,
            poll_cycles,
            call_cycles,
            iterations,
        )
        for off, ea in ((_NOTIFY, int(notify)), (_ACK, int(ack)), (_DONE, int(done))):
            w[off], w[off + 1] = ea >> 32, ea & 0xFFFFFFFF
        w[_N_OUT], w[_N_IN] = len(t.outs), len(t.ins)
        w[_ROW], w[_ACKROW], w[_SIG], w[_RESULT], w[_PAYLOAD], w[_ROW_STRIDE] = (
            lay.row,
            lay.ackrow,
            lay.sig,
            lay.result,
            lay.payload,
            stride,
        )
        w[_FLAGS] = FLAG_WAIT_EACH if dma_wait == "each" else 0
        w[_PASS_DELAY] = pass_delay_cycles
        for o, op in enumerate(t.outs):
            b = _OUT + o * _OUT_WORDS
            w[b : b + _OUT_WORDS] = [op.task, spes[op.task], lay.send[o], op.target, op.initial, op.bytes]
        for j, p in enumerate(t.ins):
            peer = tasks[p.task]
            try:
                o = next(k for k, q in enumerate(peer.outs) if q.task == i)
            except StopIteration:
                raise UsageError(f"task {i} receives from task {p.task}, which does not send to it") from None
            b = _IN + j * _IN_WORDS
            fwd = NONE if p.fwd is None else p.fwd
            w[b : b + _IN_WORDS] = [
                p.task,
                spes[p.task],
                layouts[p.task].send[o],
                lay.recv[j],
                p.target,
                fwd,
                p.fwd_count,
                p.bytes,
            ]
        cbs.array()[i * CB_BYTES : (i + 1) * CB_BYTES] = w.view(np.uint8)
        data = rng.integers(0, 256, size=t.payloads * packet, dtype=np.uint8)
        ls = m.local_store(spe)
        ls[lay.payload : lay.payload + data.size] = data
        payloads.append(data)
        if pinned:
            ls[TASK_ID_LSA : TASK_ID_LSA + 4] = np.array([i], dtype=">u4").view(np.uint8)
    envp = [PINNED if pinned else i for i in range(n)]
    return Setup(int(cbs), envp, notify, ack, done, layouts, payloads, list(tasks), list(spes), packet, nbuf)


# -- the SPE side -----------------------------------------------------------------------


class Endpoint:
    """One task's end of the library (twin of ``messaging::Endpoint``).

    Open it with :meth:`open` inside an SPE program; ``sent``, ``acked``,
    ``notified``, ``pulled`` and ``recvd`` count packets per peer.
    """

    # Read from the control block by open(); the fields of messaging::Endpoint.
    ls: np.ndarray
    words: np.ndarray
    task: int
    packet: int
    nbuf: int
    poll_cycles: int
    call_cycles: int
    wait_each: bool
    pass_delay: int
    iterations: int
    ntasks: int
    notify_ea: int
    ack_ea: int
    done_ea: int
    n_out: int
    n_in: int
    row_lsa: int
    ackrow_lsa: int
    sig_lsa: int
    result_lsa: int
    payload_lsa: int
    row_bytes: int
    outs: list[list[int]]
    ins: list[list[int]]

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.acked: list[int] = []
        self.notified: list[int] = []
        self.pulled: list[int] = []
        self.recvd: list[int] = []
        self.errors = 0

    @classmethod
    def open(cls, argp: int, envp: int) -> Endpoint | int:
        """Fetches this task's control block (one get) and opens the endpoint;
        returns the exit code instead if the control block is not one."""
        ep = cls()
        ls = spu_ls()
        ep.ls = ls
        ep.words = ls.view(">u4")
        task = int(ep.words[TASK_ID_LSA // 4]) if envp == PINNED else int(envp) & 0xFFFFFFFF
        cb = ls_alloc(CB_BYTES, 128)
        mfc_get(cb, argp + task * CB_BYTES, CB_BYTES, TAG_POLL)
        library_wait_tags(1 << TAG_POLL)
        w = [int(x) for x in ep.words[int(cb) // 4 : int(cb) // 4 + _WORDS]]
        if w[_MAGIC] != MAGIC or w[_TASK] != task:
            return EXIT_BAD_CB
        ep.task = task
        ep.packet, ep.nbuf = w[_PACKET], min(max(w[_NBUF], 1), MAX_NBUF)
        ep.poll_cycles, ep.call_cycles, ep.iterations, ep.ntasks = w[_POLL], w[_CALL], w[_ITER], w[_NTASKS]
        ep.notify_ea = (w[_NOTIFY] << 32) | w[_NOTIFY + 1]
        ep.ack_ea = (w[_ACK] << 32) | w[_ACK + 1]
        ep.done_ea = (w[_DONE] << 32) | w[_DONE + 1]
        ep.n_out, ep.n_in = min(w[_N_OUT], MAX_PEERS), min(w[_N_IN], MAX_PEERS)
        ep.row_lsa, ep.ackrow_lsa, ep.sig_lsa = w[_ROW], w[_ACKROW], w[_SIG]
        ep.result_lsa, ep.payload_lsa = w[_RESULT], w[_PAYLOAD]
        ep.row_bytes = w[_ROW_STRIDE] or ROW_BYTES
        ep.wait_each = bool(w[_FLAGS] & FLAG_WAIT_EACH)
        ep.pass_delay = w[_PASS_DELAY]
        ep.outs = [w[_OUT + o * _OUT_WORDS : _OUT + (o + 1) * _OUT_WORDS] for o in range(ep.n_out)]
        ep.ins = [w[_IN + j * _IN_WORDS : _IN + (j + 1) * _IN_WORDS] for j in range(ep.n_in)]
        ep.sent, ep.acked = [0] * ep.n_out, [0] * ep.n_out
        ep.notified, ep.pulled, ep.recvd = [0] * ep.n_in, [0] * ep.n_in, [0] * ep.n_in
        return ep

    # out-peer record: task, spe, send_lsa, target, initial, bytes
    # in-peer record: task, spe, peer_send_lsa, recv_lsa, target, fwd, fwd_count, bytes

    def _u32(self, lsa: int) -> int:
        return int(self.words[lsa // 4])

    def _set_u32(self, lsa: int, v: int) -> None:
        self.words[lsa // 4] = v

    def free(self, o: int) -> int:
        """Free send buffers towards out-peer ``o``."""
        return self.nbuf - (self.sent[o] - self.acked[o])

    def send_buffer(self, o: int, slot: int) -> int:
        """LS address of send buffer ``slot`` towards out-peer ``o``."""
        return self.outs[o][2] + slot * self.packet

    def recv_buffer(self, j: int, slot: int) -> int:
        """LS address of receive buffer ``slot`` of in-peer ``j``."""
        return self.ins[j][3] + slot * self.packet

    def send(self, o: int, src: int, size: int) -> int:
        """Sends ``size`` bytes from LS address ``src`` to out-peer ``o`` (a
        free buffer must exist): copies them into the next send buffer and puts
        the new send count into the receiver's notification row."""
        slot = self.sent[o] % self.nbuf
        buf = self.send_buffer(o, slot)
        if src != buf:
            self.ls[buf : buf + size] = self.ls[src : src + size]
        compute(self.call_cycles + copy_cycles(size))
        self.sent[o] += 1
        sig = self.sig_lsa + 16 * o
        self._set_u32(sig, self.sent[o])
        ea = self.notify_ea + self.outs[o][0] * self.row_bytes + self.task * SLOT_BYTES
        mfc_put(sig, ea, 16, TAG_SIG)
        self._wait_if_each(TAG_SIG)
        return buf

    def _wait_if_each(self, tag: int) -> None:
        """In the wait-for-each library, waits for the DMA just issued in ``tag``'s group."""
        if self.wait_each:
            library_wait_tags(1 << tag)

    def poll_notifications(self) -> None:
        """Reads this task's notification row with one get."""
        mfc_get(self.row_lsa, self.notify_ea + self.task * self.row_bytes, self.ntasks * SLOT_BYTES, TAG_POLL)
        library_wait_tags(1 << TAG_POLL)
        for j in range(self.n_in):
            self.notified[j] = self._u32(self.row_lsa + self.ins[j][0] * SLOT_BYTES)

    def poll_acks(self) -> bool:
        """Reads this task's acknowledgement row with one get; whether a buffer was freed."""
        mfc_get(self.ackrow_lsa, self.ack_ea + self.task * self.row_bytes, self.ntasks * SLOT_BYTES, TAG_POLL)
        library_wait_tags(1 << TAG_POLL)
        freed = False
        for o in range(self.n_out):
            a = self._u32(self.ackrow_lsa + self.outs[o][0] * SLOT_BYTES)
            if a != self.acked[o]:
                self.acked[o] = a
                freed = True
        return freed

    def pending(self, j: int) -> int:
        """Packets in-peer ``j`` has notified that are not pulled yet."""
        return self.notified[j] - self.pulled[j]

    def pull(self, j: int, size: int) -> int:
        """Issues the get of in-peer ``j``'s next packet into the matching receive buffer."""
        slot = self.pulled[j] % self.nbuf
        p = self.ins[j]
        dst = self.recv_buffer(j, slot)
        mfc_get(dst, Machine.ls_ea(p[1]) + p[2] + slot * self.packet, size, TAG_DATA)
        self._wait_if_each(TAG_DATA)
        self.pulled[j] += 1
        return dst

    def wait_pulls(self) -> None:
        """Waits for the packet gets issued (each was waited for already in the wait-for-each library)."""
        if not self.wait_each:
            library_wait_tags(1 << TAG_DATA)

    def ack(self, j: int) -> None:
        """Acknowledges in-peer ``j``'s next pulled packet."""
        compute(self.call_cycles)
        self.recvd[j] += 1
        sig = self.sig_lsa + 16 * (self.n_out + j)
        self._set_u32(sig, self.recvd[j])
        ea = self.ack_ea + self.ins[j][0] * self.row_bytes + self.task * SLOT_BYTES
        mfc_put(sig, ea, 16, TAG_SIG)
        self._wait_if_each(TAG_SIG)

    def end_pass(self, progressed: bool) -> None:
        """The end of a pass of a task's loop: one without progress waits the
        polling interval, one with progress the pass's own delay (twin of
        ``Endpoint::end_pass``)."""
        if not progressed:
            compute(self.poll_cycles)
        elif self.pass_delay:
            compute(self.pass_delay)

    def all_acked(self) -> bool:
        """Whether every packet sent so far is acknowledged."""
        return all(a == s for a, s in zip(self.acked, self.sent, strict=True))

    def close(self) -> None:
        """Writes the result block, puts the done flag, waits for every put."""
        self._set_u32(self.result_lsa, 1)
        self._set_u32(self.result_lsa + 4, self.errors)
        sig = self.sig_lsa + 16 * (self.n_out + self.n_in)
        self._set_u32(sig, 1)
        if self.done_ea:
            mfc_put(sig, self.done_ea + self.task * SLOT_BYTES, 16, TAG_SIG)
        library_wait_tags((1 << TAG_POLL) | (1 << TAG_DATA) | (1 << TAG_SIG))


def forward_task(speid: int, argp: int, envp: int) -> int:
    """Sends the task's initial packets and forwards what it receives (seed
    001's ring task; twin of ``messaging::forward_task``)."""
    ep = Endpoint.open(argp, envp)
    if isinstance(ep, int):
        return ep
    packet, nbuf = ep.packet, ep.nbuf
    outs, ins = ep.outs, ep.ins
    initial_sent = [0] * ep.n_out
    base = [0] * ep.n_out
    for o in range(1, ep.n_out):
        base[o] = base[o - 1] + outs[o - 1][4]
    done = [0] * ep.n_in
    while True:
        progressed = False
        for o in range(ep.n_out):
            while initial_sent[o] < outs[o][4] and ep.free(o) > 0:
                ep.send(o, ep.payload_lsa + (base[o] + initial_sent[o]) * packet, packet)
                initial_sent[o] += 1
                progressed = True
        if any(ep.pulled[j] < ins[j][4] for j in range(ep.n_in)):
            ep.poll_notifications()
            order = []
            for j in range(ep.n_in):
                while ep.pending(j) > 0 and ep.pulled[j] < ins[j][4] and ep.pulled[j] - done[j] < nbuf:
                    ep.pull(j, packet)
                    order.append(j)
            if order:
                ep.wait_pulls()
                for j in order:
                    ep.ack(j)
                progressed = True
        for j in range(ep.n_in):
            while done[j] < ep.recvd[j]:
                k = done[j]
                p = ins[j]
                if k < p[6]:
                    o = p[5]
                    if initial_sent[o] < outs[o][4] or ep.free(o) == 0:
                        break
                    ep.send(o, ep.recv_buffer(j, k % nbuf), packet)
                done[j] += 1
                progressed = True
        if not ep.all_acked() and ep.poll_acks():
            progressed = True
        received = all(done[j] == ins[j][4] for j in range(ep.n_in))
        sent = all(ep.sent[o] == outs[o][3] for o in range(ep.n_out))
        if received and sent and ep.all_acked():
            break
        ep.end_pass(progressed)
    ep.close()
    return 0


def exchange_task(speid: int, argp: int, envp: int) -> int:
    """Iterations of a communication pattern (twin of ``messaging::exchange_task``):
    in iteration ``t`` the task sends each out-peer its bytes per iteration,
    once it has received all of iteration ``t - 1``; packets carry the sender
    and their sequence number in their first 8 bytes, checked on arrival."""
    ep = Endpoint.open(argp, envp)
    if isinstance(ep, int):
        return ep
    packet, iterations = ep.packet, ep.iterations
    outs, ins = ep.outs, ep.ins
    ppi_out = [packets_per_iteration(p[5], packet) for p in outs]
    ppi_in = [packets_per_iteration(p[7], packet) for p in ins]
    words = ep.words
    it = 0
    while True:
        progressed = False
        if it < iterations and all(ep.recvd[j] >= it * ppi_in[j] for j in range(ep.n_in)):
            for o in range(ep.n_out):
                while ep.sent[o] < (it + 1) * ppi_out[o] and ep.free(o) > 0:
                    seq = ep.sent[o]
                    size = packet_size(outs[o][5], packet, seq % ppi_out[o])
                    words[ep.payload_lsa // 4] = ep.task
                    words[ep.payload_lsa // 4 + 1] = seq
                    ep.send(o, ep.payload_lsa, size)
                    progressed = True
            if all(ep.sent[o] == (it + 1) * ppi_out[o] for o in range(ep.n_out)):
                it += 1
                progressed = True
        if any(ep.pulled[j] < ins[j][4] for j in range(ep.n_in)):
            ep.poll_notifications()
            order = []
            for j in range(ep.n_in):
                while ep.pending(j) > 0 and ep.pulled[j] < ins[j][4]:
                    k = ep.pulled[j]
                    ep.pull(j, packet_size(ins[j][7], packet, k % ppi_in[j]))
                    order.append(j)
            if order:
                ep.wait_pulls()
                for j in order:
                    k = ep.recvd[j]
                    buf = ep.recv_buffer(j, k % ep.nbuf)
                    if int(words[buf // 4]) != ins[j][0] or int(words[buf // 4 + 1]) != k:
                        ep.errors += 1
                    ep.ack(j)
                progressed = True
        if not ep.all_acked() and ep.poll_acks():
            progressed = True
        received = all(ep.recvd[j] == ins[j][4] for j in range(ep.n_in))
        if it == iterations and received and ep.all_acked():
            break
        ep.end_pass(progressed)
    ep.close()
    return 0
