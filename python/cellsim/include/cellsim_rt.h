/* cellsim's C runtime: the one door from a C program into the simulator.
 *
 * Every SDK call that talks to the chip (an MFC command, a channel, a libspe2
 * call) becomes a request: the C thread stores the request's code and
 * arguments, switches back to its Python driver, and continues when the
 * simulator has answered in simulated time. Written for cellsim; not an SDK
 * file. Programs include the SDK headers, never this one directly. */
#ifndef CELLSIM_RT_H
#define CELLSIM_RT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Request codes (mirrored in python/cellsim/c/requests.py). */
enum cellsim_request {
    CELLSIM_RQ_DONE = 0,        /* the thread's function returned */
    CELLSIM_RQ_EXIT = 1,        /* exit(code) */
    CELLSIM_RQ_DMA = 2,         /* opcode, ls, ea, size, tag, lst */
    CELLSIM_RQ_READ_CH = 3,     /* channel -> value */
    CELLSIM_RQ_WRITE_CH = 4,    /* channel, value */
    CELLSIM_RQ_CHCNT = 5,       /* channel -> count */
    CELLSIM_RQ_COMPUTE = 6,     /* cycles */
    CELLSIM_RQ_CTX_CREATE = 10, /* flags -> context number */
    CELLSIM_RQ_CTX_DESTROY = 11,
    CELLSIM_RQ_PROGRAM_LOAD = 12, /* ctx, image name */
    CELLSIM_RQ_CTX_RUN = 13,      /* ctx, argp (r4), envp (r5), user regs?, r3 -> exit code */
    CELLSIM_RQ_IN_MBOX_WRITE = 14, /* ctx, data ptr, count, behavior -> written */
    CELLSIM_RQ_OUT_MBOX_READ = 15, /* ctx, data ptr, count, interrupt, behavior -> read */
    CELLSIM_RQ_MBOX_STATUS = 16,   /* ctx, which (0 in, 1 out, 2 out-intr) */
    CELLSIM_RQ_SIGNAL_WRITE = 17,  /* ctx, register, value */
    CELLSIM_RQ_LS_AREA = 18,       /* ctx -> host pointer to its local store */
    CELLSIM_RQ_PS_AREA = 19,       /* ctx, area -> EA */
    CELLSIM_RQ_THREAD_CREATE = 20, /* fn, arg -> thread id */
    CELLSIM_RQ_THREAD_JOIN = 21,   /* thread id -> return value */
    CELLSIM_RQ_ALLOC = 22,         /* size, align -> host pointer in simulated memory */
    CELLSIM_RQ_PPE_COMPUTE = 23,   /* cycles */
    CELLSIM_RQ_MFCIO = 24,         /* ctx, opcode, ls, ea, size, tag */
    CELLSIM_RQ_MFCIO_STATUS = 25,  /* ctx, mask, behavior */
    CELLSIM_RQ_SPE_COUNT = 26,     /* -> usable SPEs (spe_cpu_info_get) */
    CELLSIM_RQ_LSA = 27,           /* pointer to an SPU static -> its local-store address */
    CELLSIM_RQ_EVENT_HANDLER = 28, /* what (0 create, 1 destroy, 2 register, 3 deregister), handler, ctx, events */
    CELLSIM_RQ_EVENT_WAIT = 29,    /* handler, max events, timeout -> 4 event bits per logical SPE */
    CELLSIM_RQ_TIME = 30,          /* what (0 timebase ticks since the run began, 1 timebase Hz, 2 core Hz) -> value */
    CELLSIM_RQ_IMAGE_OPEN = 31,    /* image name in the payload -> 1 if it names one SPU program */
    CELLSIM_RQ_STOP_INFO = 32,     /* ctx -> its last stop, encoded as CTX_RUN's result */
};

/* Ends the calling simulated thread with `value` (pthread_exit). */
void cellsim_thread_exit(int64_t value) __attribute__((noreturn));

uint64_t cellsim_request(int op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                         uint64_t a5, const char *file, int line);

/* Where the PPU's last libspe2 call was made (set by libspe2.h's macros). */
extern __thread const char *cellsim_at_file;
extern __thread int cellsim_at_line;

/* Cycles charged by the intrinsics since the last request (--count-intrinsics). */
extern __thread uint64_t cellsim_even_cycles, cellsim_odd_cycles;

#define CELLSIM_RQ(op, a0, a1, a2, a3, a4, a5) \
    cellsim_request((op), (uint64_t)(a0), (uint64_t)(a1), (uint64_t)(a2), (uint64_t)(a3), \
                    (uint64_t)(a4), (uint64_t)(a5), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif
