/* libspe2.h for cellsim: the PPE's interface to SPE contexts (libspe2), written
 * for cellsim from the public libspe2 documentation. Every call is a request to
 * the simulator; spe_context_run blocks the calling PPE thread in simulated time
 * until the SPE program stops, so run several SPEs from several pthreads. */
#ifndef CELLSIM_LIBSPE2_H
#define CELLSIM_LIBSPE2_H

#include <stddef.h>
#include <stdint.h>

#include "cellsim_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An SPE program image: `spe_image_open("NAME")`, or `extern spe_program_handle_t NAME;`
 * for a program built with `cellsim cc --spu NAME=file.c`. */
typedef struct spe_program_handle {
    unsigned int handle_size;
    void *elf_image;
    void *toe_shadow;
    char name[64];
} spe_program_handle_t;

typedef struct spe_context {
    int spe; /* the logical SPE (cellsim) */
    unsigned int flags;
    spe_program_handle_t *program;
} *spe_context_ptr_t;

typedef struct spe_gang_context {
    unsigned int flags;
} *spe_gang_context_ptr_t;

typedef struct spe_stop_info {
    unsigned int stop_reason;
    union {
        int spe_exit_code;
        int spe_signal_code;
        int spe_runtime_error;
        int spe_runtime_exception;
        int spe_runtime_fatal;
        int spe_callback_error;
        int spe_isolation_error;
        void *__reserved_ptr;
        unsigned long long __reserved_u64;
    } result;
    int spu_status;
} spe_stop_info_t;

#define SPE_DEFAULT_ENTRY ((unsigned int)-1)
#define SPE_RUN_USER_REGS 0x00000002
#define SPE_NO_CALLBACKS 0x00000004

#define SPE_CFG_SIGNOTIFY1_OR 0x00000010
#define SPE_CFG_SIGNOTIFY2_OR 0x00000020
#define SPE_MAP_PS 0x00000040
#define SPE_ISOLATE 0x00000080         /* isolated programs: not modelled (refused) */
#define SPE_ISOLATE_EMULATE 0x00000100 /* not modelled (refused) */
#define SPE_EVENTS_ENABLE 0x00001000
#define SPE_AFFINITY_MEMORY 0x00000001

#define SPE_EXIT 1
#define SPE_STOP_AND_SIGNAL 2
#define SPE_RUNTIME_ERROR 3
#define SPE_RUNTIME_EXCEPTION 4
#define SPE_RUNTIME_FATAL 5
#define SPE_CALLBACK_ERROR 6
#define SPE_ISOLATION_ERROR 7

/* stopinfo->result.spe_runtime_error / spe_runtime_exception (cellsim: a C SPU program
 * that dies of a signal stops its SPE with one of these; see docs/c-programs.md) */
#define SPE_SPU_HALT 0x04
#define SPE_SPU_INVALID_INSTR 0x20
#define SPE_SPU_INVALID_CHANNEL 0x40
#define SPE_DMA_ALIGNMENT 0x0008
#define SPE_DMA_SEGMENTATION 0x0020
#define SPE_DMA_STORAGE 0x0040

#define SPE_MBOX_ALL_BLOCKING 1
#define SPE_MBOX_ANY_BLOCKING 2
#define SPE_MBOX_ANY_NONBLOCKING 3

#define SPE_SIG_NOTIFY_REG_1 1
#define SPE_SIG_NOTIFY_REG_2 2

#define SPE_TAG_ALL 1
#define SPE_TAG_ANY 2
#define SPE_TAG_IMMEDIATE 3

/* Events (spe_event_handler_*): cellsim raises OUT_INTR_MBOX, IN_MBOX and SPE_STOPPED. */
#define SPE_EVENT_OUT_INTR_MBOX 0x00000001
#define SPE_EVENT_IN_MBOX 0x00000002
#define SPE_EVENT_TAG_GROUP 0x00000004
#define SPE_EVENT_SPE_STOPPED 0x00000008
#define SPE_EVENT_ALL_EVENTS 0x0000000F

typedef union spe_event_data {
    void *ptr;
    unsigned int u32;
    unsigned long long u64;
} spe_event_data_t;

typedef struct spe_event_unit {
    unsigned int events;
    spe_context_ptr_t spe;
    spe_event_data_t data;
} spe_event_unit_t;

typedef struct cellsim_event_handler *spe_event_handler_ptr_t;

#define SPE_MSSYNC_AREA 0
#define SPE_MFC_COMMAND_AREA 1
#define SPE_CONTROL_AREA 2
#define SPE_SIG_NOTIFY_1_AREA 3
#define SPE_SIG_NOTIFY_2_AREA 4

spe_context_ptr_t spe_context_create(unsigned int flags, spe_gang_context_ptr_t gang);
spe_context_ptr_t spe_context_create_affinity(unsigned int flags, spe_context_ptr_t affinity_neighbor,
                                              spe_gang_context_ptr_t gang);
int spe_context_destroy(spe_context_ptr_t spe);
spe_gang_context_ptr_t spe_gang_context_create(unsigned int flags);
int spe_gang_context_destroy(spe_gang_context_ptr_t gang);
spe_program_handle_t *spe_image_open(const char *filename);
int spe_image_close(spe_program_handle_t *program);
int spe_program_load(spe_context_ptr_t spe, spe_program_handle_t *program);
int spe_context_run(spe_context_ptr_t spe, unsigned int *entry, unsigned int runflags, void *argp,
                    void *envp, spe_stop_info_t *stopinfo);
int spe_stop_info_read(spe_context_ptr_t spe, spe_stop_info_t *stopinfo);
int spe_in_mbox_write(spe_context_ptr_t spe, unsigned int *mbox_data, int count, unsigned int behavior);
int spe_in_mbox_status(spe_context_ptr_t spe);
int spe_out_mbox_read(spe_context_ptr_t spe, unsigned int *mbox_data, int count);
int spe_out_mbox_status(spe_context_ptr_t spe);
int spe_out_intr_mbox_read(spe_context_ptr_t spe, unsigned int *mbox_data, int count,
                           unsigned int behavior);
int spe_out_intr_mbox_status(spe_context_ptr_t spe);
int spe_signal_write(spe_context_ptr_t spe, unsigned int signal_reg, unsigned int data);
void *spe_ls_area_get(spe_context_ptr_t spe);
size_t spe_ls_size_get(spe_context_ptr_t spe);
void *spe_ps_area_get(spe_context_ptr_t spe, int area);
int spe_mfcio_get(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size,
                  unsigned int tag, unsigned int tid, unsigned int rid);
int spe_mfcio_put(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size,
                  unsigned int tag, unsigned int tid, unsigned int rid);
int spe_mfcio_getb(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size, unsigned int tag,
                   unsigned int tid, unsigned int rid);
int spe_mfcio_getf(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size, unsigned int tag,
                   unsigned int tid, unsigned int rid);
int spe_mfcio_putb(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size, unsigned int tag,
                   unsigned int tid, unsigned int rid);
int spe_mfcio_putf(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size, unsigned int tag,
                   unsigned int tid, unsigned int rid);
int spe_mfcio_tag_status_read(spe_context_ptr_t spe, unsigned int mask, unsigned int behavior,
                              unsigned int *tag_status);
int spe_cpu_info_get(int info_requested, int cpu_node);

/* libspe2 calls cellsim does not implement: declared as the SDK declares them, defined
 * nowhere, so a program that calls one fails to link and `cellsim cc` names it
 * (docs/c-programs.md lists each call's status). */
int spe_mssync_start(spe_context_ptr_t spe);
int spe_mssync_status(spe_context_ptr_t spe);
int spe_callback_handler_register(void *handler, unsigned int callnum, unsigned int mode);
int spe_callback_handler_deregister(unsigned int callnum);
void *spe_callback_handler_query(unsigned int callnum);
spe_event_handler_ptr_t spe_event_handler_create(void);
int spe_event_handler_destroy(spe_event_handler_ptr_t evhandler);
int spe_event_handler_register(spe_event_handler_ptr_t evhandler, spe_event_unit_t *event);
int spe_event_handler_deregister(spe_event_handler_ptr_t evhandler, spe_event_unit_t *event);
int spe_event_wait(spe_event_handler_ptr_t evhandler, spe_event_unit_t *events, int max_events, int timeout);
#define SPE_COUNT_PHYSICAL_CPU_NODES 1
#define SPE_COUNT_PHYSICAL_SPES 2
#define SPE_COUNT_USABLE_SPES 3

/* Each call records where it was made, for errors (a call through a pointer does not). */
#ifndef CELLSIM_RUNTIME
#define __CS_AT(call) (cellsim_at_file = __FILE__, cellsim_at_line = __LINE__, (call))
#define spe_context_create(...) __CS_AT((spe_context_create)(__VA_ARGS__))
#define spe_context_destroy(...) __CS_AT((spe_context_destroy)(__VA_ARGS__))
#define spe_program_load(...) __CS_AT((spe_program_load)(__VA_ARGS__))
#define spe_context_run(...) __CS_AT((spe_context_run)(__VA_ARGS__))
#define spe_in_mbox_write(...) __CS_AT((spe_in_mbox_write)(__VA_ARGS__))
#define spe_in_mbox_status(...) __CS_AT((spe_in_mbox_status)(__VA_ARGS__))
#define spe_out_mbox_read(...) __CS_AT((spe_out_mbox_read)(__VA_ARGS__))
#define spe_out_mbox_status(...) __CS_AT((spe_out_mbox_status)(__VA_ARGS__))
#define spe_out_intr_mbox_read(...) __CS_AT((spe_out_intr_mbox_read)(__VA_ARGS__))
#define spe_out_intr_mbox_status(...) __CS_AT((spe_out_intr_mbox_status)(__VA_ARGS__))
#define spe_signal_write(...) __CS_AT((spe_signal_write)(__VA_ARGS__))
#define spe_ls_area_get(...) __CS_AT((spe_ls_area_get)(__VA_ARGS__))
#define spe_ps_area_get(...) __CS_AT((spe_ps_area_get)(__VA_ARGS__))
#define spe_mfcio_get(...) __CS_AT((spe_mfcio_get)(__VA_ARGS__))
#define spe_mfcio_put(...) __CS_AT((spe_mfcio_put)(__VA_ARGS__))
#define spe_mfcio_getb(...) __CS_AT((spe_mfcio_getb)(__VA_ARGS__))
#define spe_mfcio_getf(...) __CS_AT((spe_mfcio_getf)(__VA_ARGS__))
#define spe_mfcio_putb(...) __CS_AT((spe_mfcio_putb)(__VA_ARGS__))
#define spe_mfcio_putf(...) __CS_AT((spe_mfcio_putf)(__VA_ARGS__))
#define spe_mfcio_tag_status_read(...) __CS_AT((spe_mfcio_tag_status_read)(__VA_ARGS__))
#define spe_event_handler_register(...) __CS_AT((spe_event_handler_register)(__VA_ARGS__))
#define spe_event_handler_deregister(...) __CS_AT((spe_event_handler_deregister)(__VA_ARGS__))
#define spe_event_wait(...) __CS_AT((spe_event_wait)(__VA_ARGS__))
#define spe_image_open(...) __CS_AT((spe_image_open)(__VA_ARGS__))
#define spe_stop_info_read(...) __CS_AT((spe_stop_info_read)(__VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif
#endif
