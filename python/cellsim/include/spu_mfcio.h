/* spu_mfcio.h for cellsim: the SPU's MFC I/O interface (DMA, tag groups, mailboxes,
 * signals, atomics, channels), written for cellsim from the public documentation
 * of the Cell SDK (C/C++ Language Extensions for the CBEA, the SPU channels of the
 * CBEA). Every call is a request to the simulator, made in simulated time; the
 * macros pass __FILE__ and __LINE__ so errors name the C line. */
#ifndef CELLSIM_SPU_MFCIO_H
#define CELLSIM_SPU_MFCIO_H

#include <stdint.h>

#include "cellsim_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SPU channels, by their CBEA numbers. */
#define SPU_RdEventStat 0
#define SPU_WrEventMask 1
#define SPU_WrEventAck 2
#define SPU_RdSigNotify1 3
#define SPU_RdSigNotify2 4
#define SPU_WrDec 7
#define SPU_RdDec 8
#define MFC_WrMSSyncReq 9
#define SPU_RdEventMask 11
#define MFC_RdTagMask 12
#define SPU_RdMachStat 13
#define SPU_WrSRR0 14
#define SPU_RdSRR0 15
#define MFC_LSA 16
#define MFC_EAH 17
#define MFC_EAL 18
#define MFC_Size 19
#define MFC_TagID 20
#define MFC_Cmd 21
#define MFC_WrTagMask 22
#define MFC_WrTagUpdate 23
#define MFC_RdTagStat 24
#define MFC_RdListStallStat 25
#define MFC_WrListStallAck 26
#define MFC_RdAtomicStat 27
#define SPU_WrOutMbox 28
#define SPU_RdInMbox 29
#define SPU_WrOutIntrMbox 30

/* A statement expression, so that a read whose value is dropped (mfc_read_tag_status()
 * to wait) draws no -Wunused-value warning, as the SDK's intrinsic draws none. */
#define spu_readch(ch) \
    (__extension__({ (unsigned int)CELLSIM_RQ(CELLSIM_RQ_READ_CH, (ch), 0, 0, 0, 0, 0); }))
#define spu_writech(ch, v) ((void)CELLSIM_RQ(CELLSIM_RQ_WRITE_CH, (ch), (unsigned int)(v), 0, 0, 0, 0))
#define spu_readchcnt(ch) \
    (__extension__({ (unsigned int)CELLSIM_RQ(CELLSIM_RQ_CHCNT, (ch), 0, 0, 0, 0, 0); }))

/* MFC command opcodes. */
#define MFC_PUT_CMD 0x20
#define MFC_PUTB_CMD 0x21
#define MFC_PUTF_CMD 0x22
#define MFC_PUTL_CMD 0x24
#define MFC_PUTLB_CMD 0x25
#define MFC_PUTLF_CMD 0x26
#define MFC_GET_CMD 0x40
#define MFC_GETB_CMD 0x41
#define MFC_GETF_CMD 0x42
#define MFC_GETL_CMD 0x44
#define MFC_GETLB_CMD 0x45
#define MFC_GETLF_CMD 0x46
#define MFC_SNDSIG_CMD 0xA0
#define MFC_SNDSIGB_CMD 0xA1
#define MFC_SNDSIGF_CMD 0xA2
#define MFC_PUTLLUC_CMD 0xB0
#define MFC_PUTLLC_CMD 0xB4
#define MFC_PUTQLLUC_CMD 0xB8
#define MFC_BARRIER_CMD 0xC0
#define MFC_EIEIO_CMD 0xC8
#define MFC_SYNC_CMD 0xCC
#define MFC_GETLLAR_CMD 0xD0

#define MFC_TAG_UPDATE_IMMEDIATE 0
#define MFC_TAG_UPDATE_ANY 1
#define MFC_TAG_UPDATE_ALL 2

#define MFC_PUTLLC_STATUS 0x00000001
#define MFC_PUTLLUC_STATUS 0x00000002
#define MFC_GETLLAR_STATUS 0x00000004

#define MFC_TAG_INVALID 0xFFFFFFFF
#define MFC_TAG_VALID 0x00000000
#define MFC_MAX_DMA_SIZE 0x4000
#define MFC_MAX_DMA_LIST_SIZE 0x0800

/* SPU events (SPU_RdEventStat bits). */
#define MFC_MULTI_SRC_SYNC_EVENT 0x1000
#define MFC_PRIV_ATTN_EVENT 0x0800
#define MFC_LLR_LOST_EVENT 0x0400
#define MFC_SIGNAL_NOTIFY_1_EVENT 0x0200
#define MFC_SIGNAL_NOTIFY_2_EVENT 0x0100
#define MFC_OUT_MBOX_AVAILABLE_EVENT 0x0080
#define MFC_OUT_INTR_MBOX_AVAILABLE_EVENT 0x0040
#define MFC_DECREMENTER_EVENT 0x0020
#define MFC_IN_MBOX_AVAILABLE_EVENT 0x0010
#define MFC_COMMAND_QUEUE_AVAILABLE_EVENT 0x0008
#define MFC_LIST_STALL_NOTIFY_EVENT 0x0002
#define MFC_TAG_STATUS_UPDATE_EVENT 0x0001

/* A DMA-list element: stored big-endian, as the MFC reads it. */
typedef struct __attribute__((scalar_storage_order("big-endian"))) mfc_list_element {
    uint64_t notify : 1;
    uint64_t reserved : 16;
    uint64_t size : 15;
    uint64_t eal : 32;
} mfc_list_element_t;

#define mfc_ea2h(ea) ((unsigned int)((unsigned long long)(ea) >> 32))
#define mfc_ea2l(ea) ((unsigned int)(unsigned long long)(ea))
#define mfc_hl2ea(h, l) (((unsigned long long)(h) << 32) | (unsigned int)(l))
#define mfc_ceil128(v) (((v) + 127) & ~127)

/* The DMA commands: ls is a pointer into the program's static data (its local
 * store) or a local-store address; ea an effective address. */
#define CELLSIM_DMA(op, ls, ea, size, tag, lst) \
    ((void)CELLSIM_RQ(CELLSIM_RQ_DMA, (op), (uintptr_t)(ls), (ea), (size), (tag), (uintptr_t)(lst)))

#define mfc_put(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_PUT_CMD, ls, ea, size, tag, 0)
#define mfc_putb(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_PUTB_CMD, ls, ea, size, tag, 0)
#define mfc_putf(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_PUTF_CMD, ls, ea, size, tag, 0)
#define mfc_get(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_GET_CMD, ls, ea, size, tag, 0)
#define mfc_getb(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_GETB_CMD, ls, ea, size, tag, 0)
#define mfc_getf(ls, ea, size, tag, tid, rid) CELLSIM_DMA(MFC_GETF_CMD, ls, ea, size, tag, 0)
#define mfc_putl(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_PUTL_CMD, ls, ea, size, tag, lst)
#define mfc_putlb(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_PUTLB_CMD, ls, ea, size, tag, lst)
#define mfc_putlf(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_PUTLF_CMD, ls, ea, size, tag, lst)
#define mfc_getl(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_GETL_CMD, ls, ea, size, tag, lst)
#define mfc_getlb(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_GETLB_CMD, ls, ea, size, tag, lst)
#define mfc_getlf(ls, ea, lst, size, tag, tid, rid) CELLSIM_DMA(MFC_GETLF_CMD, ls, ea, size, tag, lst)
#define mfc_sndsig(ls, ea, tag, tid, rid) CELLSIM_DMA(MFC_SNDSIG_CMD, ls, ea, 4, tag, 0)
#define mfc_sndsigb(ls, ea, tag, tid, rid) CELLSIM_DMA(MFC_SNDSIGB_CMD, ls, ea, 4, tag, 0)
#define mfc_sndsigf(ls, ea, tag, tid, rid) CELLSIM_DMA(MFC_SNDSIGF_CMD, ls, ea, 4, tag, 0)
#define mfc_barrier(tag) CELLSIM_DMA(MFC_BARRIER_CMD, 0, 0, 0, tag, 0)
#define mfc_eieio(tag, tid, rid) CELLSIM_DMA(MFC_EIEIO_CMD, 0, 0, 0, tag, 0)
#define mfc_sync(tag) CELLSIM_DMA(MFC_SYNC_CMD, 0, 0, 0, tag, 0)
#define mfc_getllar(ls, ea, tid, rid) CELLSIM_DMA(MFC_GETLLAR_CMD, ls, ea, 128, 0, 0)
#define mfc_putllc(ls, ea, tid, rid) CELLSIM_DMA(MFC_PUTLLC_CMD, ls, ea, 128, 0, 0)
#define mfc_putlluc(ls, ea, tid, rid) CELLSIM_DMA(MFC_PUTLLUC_CMD, ls, ea, 128, 0, 0)
#define mfc_read_atomic_status() spu_readch(MFC_RdAtomicStat)

/* The composite intrinsics the mfc_* macros are built on in the SDK. */
#define spu_mfcdma32(ls, ea, size, tag, cmd) CELLSIM_DMA((cmd)&0xFF, ls, (unsigned int)(ea), size, tag, 0)
#define spu_mfcdma64(ls, eahi, ealow, size, tag, cmd) \
    CELLSIM_DMA((cmd)&0xFF, ls, mfc_hl2ea(eahi, ealow), size, tag, 0)
#define spu_mfcstat(type) (spu_writech(MFC_WrTagUpdate, (type)), spu_readch(MFC_RdTagStat))

/* Tag groups. */
#define mfc_write_tag_mask(mask) spu_writech(MFC_WrTagMask, (mask))
#define mfc_read_tag_mask() spu_readch(MFC_RdTagMask)
#define mfc_write_tag_update(ts) spu_writech(MFC_WrTagUpdate, (ts))
#define mfc_write_tag_update_immediate() mfc_write_tag_update(MFC_TAG_UPDATE_IMMEDIATE)
#define mfc_write_tag_update_any() mfc_write_tag_update(MFC_TAG_UPDATE_ANY)
#define mfc_write_tag_update_all() mfc_write_tag_update(MFC_TAG_UPDATE_ALL)
#define mfc_stat_tag_update() spu_readchcnt(MFC_WrTagUpdate)
#define mfc_read_tag_status() spu_readch(MFC_RdTagStat)
#define mfc_stat_tag_status() spu_readchcnt(MFC_RdTagStat)
#define mfc_read_tag_status_immediate() (mfc_write_tag_update_immediate(), mfc_read_tag_status())
#define mfc_read_tag_status_any() (mfc_write_tag_update_any(), mfc_read_tag_status())
#define mfc_read_tag_status_all() (mfc_write_tag_update_all(), mfc_read_tag_status())
#define mfc_read_list_stall_status() spu_readch(MFC_RdListStallStat)
#define mfc_stat_list_stall_status() spu_readchcnt(MFC_RdListStallStat)
#define mfc_write_list_stall_ack(tag) spu_writech(MFC_WrListStallAck, (tag))
#define mfc_stat_cmd_queue() spu_readchcnt(MFC_Cmd)

/* Tag-group management: a per-SPE table of the 32 groups (in the program's statics). */
unsigned int mfc_tag_reserve(void);
unsigned int mfc_tag_release(unsigned int tag);
unsigned int mfc_multi_tag_reserve(unsigned int n);
unsigned int mfc_multi_tag_release(unsigned int tag, unsigned int n);

/* Mailboxes. */
#define spu_read_in_mbox() spu_readch(SPU_RdInMbox)
#define spu_stat_in_mbox() spu_readchcnt(SPU_RdInMbox)
#define spu_write_out_mbox(v) spu_writech(SPU_WrOutMbox, (v))
#define spu_stat_out_mbox() spu_readchcnt(SPU_WrOutMbox)
#define spu_write_out_intr_mbox(v) spu_writech(SPU_WrOutIntrMbox, (v))
#define spu_stat_out_intr_mbox() spu_readchcnt(SPU_WrOutIntrMbox)

/* Signal-notification registers. */
#define spu_read_signal1() spu_readch(SPU_RdSigNotify1)
#define spu_stat_signal1() spu_readchcnt(SPU_RdSigNotify1)
#define spu_read_signal2() spu_readch(SPU_RdSigNotify2)
#define spu_stat_signal2() spu_readchcnt(SPU_RdSigNotify2)

/* Decrementer. */
#define spu_read_decrementer() spu_readch(SPU_RdDec)
#define spu_write_decrementer(v) spu_writech(SPU_WrDec, (v))

/* Events (SPU_RdEventStat and friends): the MFC_*_EVENT bits above; docs/c-programs.md
 * says when cellsim raises each. */
#define spu_read_event_status() spu_readch(SPU_RdEventStat)
#define spu_stat_event_status() spu_readchcnt(SPU_RdEventStat)
#define spu_write_event_mask(m) spu_writech(SPU_WrEventMask, (m))
#define spu_write_event_ack(m) spu_writech(SPU_WrEventAck, (m))
#define spu_read_event_mask() spu_readch(SPU_RdEventMask)

#ifdef __cplusplus
}
#endif
#endif
