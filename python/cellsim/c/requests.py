"""The request codes and SPU channel numbers of the C runtime (``cellsim_rt.h``, ``spu_mfcio.h``)."""

from ..spu import (
    MFC_RD_ATOMIC_STAT as MFC_RD_ATOMIC_STAT,
)
from ..spu import (
    MFC_RD_LIST_STALL_STAT as MFC_RD_LIST_STALL_STAT,
)
from ..spu import (
    MFC_WR_LIST_STALL_ACK as MFC_WR_LIST_STALL_ACK,
)
from ..spu import (
    MFC_WR_TAG_UPDATE as MFC_WR_TAG_UPDATE,
)
from ..spu import (
    SPU_RD_EVENT_MASK as SPU_RD_EVENT_MASK,
)
from ..spu import (
    SPU_RD_EVENT_STAT as SPU_RD_EVENT_STAT,
)
from ..spu import (
    SPU_RD_IN_MBOX as SPU_RD_IN_MBOX,
)
from ..spu import (
    SPU_RD_SIG_NOTIFY_1 as SPU_RD_SIG_NOTIFY_1,
)
from ..spu import (
    SPU_RD_SIG_NOTIFY_2 as SPU_RD_SIG_NOTIFY_2,
)
from ..spu import (
    SPU_WR_EVENT_ACK as SPU_WR_EVENT_ACK,
)
from ..spu import (
    SPU_WR_EVENT_MASK as SPU_WR_EVENT_MASK,
)
from ..spu import (
    SPU_WR_OUT_INTR_MBOX as SPU_WR_OUT_INTR_MBOX,
)
from ..spu import (
    SPU_WR_OUT_MBOX as SPU_WR_OUT_MBOX,
)

DONE = 0
EXIT = 1
DMA = 2
READ_CH = 3
WRITE_CH = 4
CHCNT = 5
COMPUTE = 6
CTX_CREATE = 10
CTX_DESTROY = 11
PROGRAM_LOAD = 12
CTX_RUN = 13
IN_MBOX_WRITE = 14
OUT_MBOX_READ = 15
MBOX_STATUS = 16
SIGNAL_WRITE = 17
LS_AREA = 18
PS_AREA = 19
THREAD_CREATE = 20
THREAD_JOIN = 21
ALLOC = 22
PPE_COMPUTE = 23
MFCIO = 24
MFCIO_STATUS = 25
SPE_COUNT = 26
LSA = 27
EVENT_HANDLER = 28
EVENT_WAIT = 29
TIME = 30
# TIME's first argument
TIME_TIMEBASE, TIME_TIMEBASE_HZ, TIME_CORE_HZ = 0, 1, 2
IMAGE_OPEN = 31
STOP_INFO = 32
# EVENT_HANDLER's first argument
EVENT_CREATE, EVENT_DESTROY, EVENT_REGISTER, EVENT_DEREGISTER = 0, 1, 2, 3

# SPU channels, by their CBEA numbers (the ones cellsim.spu names are imported from it).
SPU_WR_DEC = 7
SPU_RD_DEC = 8
MFC_WR_MS_SYNC_REQ = 9
MFC_RD_TAG_MASK = 12
SPU_RD_MACH_STAT = 13
MFC_LSA = 16
MFC_EAH = 17
MFC_EAL = 18
MFC_SIZE = 19
MFC_TAG_ID = 20
MFC_CMD = 21
MFC_WR_TAG_MASK = 22
MFC_RD_TAG_STAT = 24

CHANNEL_NAMES = {
    0: "SPU_RdEventStat",
    1: "SPU_WrEventMask",
    2: "SPU_WrEventAck",
    3: "SPU_RdSigNotify1",
    4: "SPU_RdSigNotify2",
    7: "SPU_WrDec",
    8: "SPU_RdDec",
    9: "MFC_WrMSSyncReq",
    11: "SPU_RdEventMask",
    12: "MFC_RdTagMask",
    13: "SPU_RdMachStat",
    14: "SPU_WrSRR0",
    15: "SPU_RdSRR0",
    16: "MFC_LSA",
    17: "MFC_EAH",
    18: "MFC_EAL",
    19: "MFC_Size",
    20: "MFC_TagID",
    21: "MFC_Cmd",
    22: "MFC_WrTagMask",
    23: "MFC_WrTagUpdate",
    24: "MFC_RdTagStat",
    25: "MFC_RdListStallStat",
    26: "MFC_WrListStallAck",
    27: "MFC_RdAtomicStat",
    28: "SPU_WrOutMbox",
    29: "SPU_RdInMbox",
    30: "SPU_WrOutIntrMbox",
}
