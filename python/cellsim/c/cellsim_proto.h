/* The protocol between the simulator and a C program's process (version 1).
 *
 * Each C SPU program, and the PPU program with all its threads, runs in its own
 * process: `cellsim-host IMAGE` (host.c) maps the shared memory it is given and
 * dlopens the image, whose runtime (runtime.c) serves the simulator's commands.
 * The two sides share one control block (a memfd, CELLSIM_CTL_BYTES) and take
 * turns: the driver writes a command and hands over the turn; the process runs
 * the C thread until its next request (an SDK call), writes it and hands the
 * turn back. Everything a request points at in the process's own memory (a
 * program's name, mailbox words) travels by value in the payload. The Python
 * side mirrors this layout in python/cellsim/c/process.py. Written for cellsim. */
#ifndef CELLSIM_PROTO_H
#define CELLSIM_PROTO_H

#include <stdint.h>
#include <linux/futex.h>
#include <sched.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CELLSIM_PROTOCOL 1
#define CELLSIM_CTL_BYTES 16384
#ifndef CELLSIM_SPIN_NS
#define CELLSIM_SPIN_NS 20000
#endif

/* Where the shared memory sits in every C program's process: logical SPE n's
 * local store at CELLSIM_LS_BASE + n * 2^32 (so a pointer's low 32 bits are its
 * local-store address), main memory at CELLSIM_MEMORY_BASE. */
#define CELLSIM_LS_BASE 0x200000000000ULL
#define CELLSIM_MEMORY_BASE 0x300000000000ULL

enum { CELLSIM_TURN_CHILD = 0, CELLSIM_TURN_PARENT = 1 };

/* the driver's commands */
enum {
    CELLSIM_CMD_SETUP = 1,      /* cargs: fd, offset, home: the image's data is that file's pages;
                                   heap lo, hi: an SPU program's heap (in its local store) */
    CELLSIM_CMD_NEW_THREAD = 2, /* cargs: kind, fn, a0, a1, a2, stack; reply: the stack's bytes (0: the
                                   process maps one) -> runs it to its first request */
    CELLSIM_CMD_RESUME = 3,     /* thread, reply -> runs it to its next request */
    CELLSIM_CMD_QUIT = 4,       /* flush stdio and exit(0) */
};

/* what the process reports */
enum {
    CELLSIM_MSG_HELLO = 1,   /* loaded: version, segment, image base */
    CELLSIM_MSG_READY = 2,   /* SETUP done */
    CELLSIM_MSG_REQUEST = 3, /* thread made request op (DONE/EXIT: it ended with result) */
    CELLSIM_MSG_CRASH = 4,   /* a fatal signal: signal, code, addr, pc, frames (then it dies by it) */
    CELLSIM_MSG_ERROR = 5,   /* the process could not start: text */
};

typedef struct cellsim_ctl {
    uint32_t turn, parent_cpu; /* the CPU the driver last handed the turn over from */
    uint64_t magic, version, pid;
    uint32_t child_cpu, pad; /* the CPU the process last handed the turn back from */
    uint64_t file_id;        /* the request's file (a pointer: the string changes only with it) */
    /* driver -> process */
    uint64_t cmd, thread, reply;
    uint64_t cargs[6];
    /* process -> driver */
    uint64_t msg, op;
    uint64_t args[6];
    int64_t line, result;
    uint64_t even_cycles, odd_cycles;
    uint64_t measure, cpu_ns; /* measure: report the thread's CPU time (--host-time-scale) */
    uint64_t seg_start, seg_size, image_base, image_end, main_fn;
    uint64_t crash_signal, crash_code, crash_addr, crash_pc, nframes;
    uint64_t frames[32];
    char file[256];
    char text[256];
    uint8_t payload[4096];
} cellsim_ctl;

#define CELLSIM_MAGIC 0x31314d49534c4c45ULL /* "ELLSIM11" */

static inline void cellsim_futex(uint32_t *w, int op, uint32_t v) {
    syscall(SYS_futex, w, op, v, 0, 0, 0);
}

/* Hands the turn to the driver. */
static inline void cellsim_give_turn(cellsim_ctl *c) {
    c->child_cpu = (uint32_t)sched_getcpu();
    __atomic_store_n(&c->turn, CELLSIM_TURN_PARENT, __ATOMIC_RELEASE);
    cellsim_futex(&c->turn, FUTEX_WAKE, 1);
}

static inline uint64_t cellsim_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until the driver hands the turn back: a spin while the driver may be
 * answering on another core (never on the driver's own: that would only delay
 * it), then the futex. The spin adapts: it lasts up to CELLSIM_SPIN_NS while the
 * turn keeps coming back within it, and shrinks when it does not (the driver is
 * serving other programs). */
static inline void cellsim_wait_turn(cellsim_ctl *c) {
    static __thread uint64_t spin_ns = CELLSIM_SPIN_NS;
    uint64_t start = cellsim_now_ns();
    int spin = (uint32_t)sched_getcpu() != __atomic_load_n(&c->parent_cpu, __ATOMIC_RELAXED);
    for (unsigned i = 1; spin; i++) {
        if (__atomic_load_n(&c->turn, __ATOMIC_ACQUIRE) == CELLSIM_TURN_CHILD) {
            if (spin_ns < CELLSIM_SPIN_NS)
                spin_ns = spin_ns * 2 > CELLSIM_SPIN_NS ? CELLSIM_SPIN_NS : spin_ns * 2;
            return;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 32 == 0 && cellsim_now_ns() - start > spin_ns)
            break;
    }
    if (spin_ns > 500)
        spin_ns /= 2;
    while (__atomic_load_n(&c->turn, __ATOMIC_ACQUIRE) != CELLSIM_TURN_CHILD)
        cellsim_futex(&c->turn, FUTEX_WAIT, CELLSIM_TURN_PARENT);
}

#endif
