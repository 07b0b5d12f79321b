/* The PPE side of cellsim's C runtime: libspe2, and the host calls a PPU program
 * makes that must go to the simulated machine (memory allocation, pthreads, exit).
 * The image is linked with --wrap for malloc & co. and the pthread calls, so the
 * program's own calls come here while the C library keeps its own. Written for cellsim. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELLSIM_RUNTIME /* the functions themselves, not libspe2.h's call-site macros */
#include "cellsim_proto.h"
#include "cellsim_rt.h"
#include "libspe2.h"

int cellsim_in_thread(void);
void *cellsim_payload(void);
#define PAYLOAD_WORDS (sizeof(((cellsim_ctl *)0)->payload) / sizeof(unsigned int))

/* A request from the call site libspe2.h's macros recorded (then forgotten). */
static uint64_t rq_at(int op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
    const char *file = cellsim_at_file;
    int line = cellsim_at_line;
    cellsim_at_file = 0;
    return cellsim_request(op, a0, a1, a2, a3, a4, a5, file, line);
}

#define RQ(op, a0, a1, a2, a3, a4, a5) \
    rq_at((op), (uint64_t)(a0), (uint64_t)(a1), (uint64_t)(a2), (uint64_t)(a3), (uint64_t)(a4), (uint64_t)(a5))

/* -- libspe2 ----------------------------------------------------------------------- */

spe_context_ptr_t spe_context_create(unsigned int flags, spe_gang_context_ptr_t gang) {
    (void)gang;
    /* the request first: the allocation is a request too, which would take the call site */
    int spe = (int)RQ(CELLSIM_RQ_CTX_CREATE, flags, 0, 0, 0, 0, 0);
    struct spe_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return 0;
    ctx->spe = spe;
    ctx->flags = flags;
    return ctx;
}

/* The affinity is a placement hint: cellsim places SPEs by the machine's policy (--placement). */
spe_context_ptr_t spe_context_create_affinity(unsigned int flags, spe_context_ptr_t affinity_neighbor,
                                              spe_gang_context_ptr_t gang) {
    (void)affinity_neighbor;
    return spe_context_create(flags, gang);
}

int spe_context_destroy(spe_context_ptr_t spe) {
    RQ(CELLSIM_RQ_CTX_DESTROY, spe->spe, 0, 0, 0, 0, 0);
    free(spe);
    return 0;
}

spe_gang_context_ptr_t spe_gang_context_create(unsigned int flags) {
    struct spe_gang_context *g = calloc(1, sizeof *g);
    if (g)
        g->flags = flags;
    return g;
}

int spe_gang_context_destroy(spe_gang_context_ptr_t gang) {
    free(gang);
    return 0;
}

/* The name as spe_image_open got it (any directory dropped), into the payload. */
static void name_to_payload(const char *name) {
    char *out = cellsim_payload();
    strncpy(out, name, sizeof ((spe_program_handle_t *)0)->name - 1);
    out[sizeof ((spe_program_handle_t *)0)->name - 1] = 0;
}

/* As libspe2: NULL with errno ENOENT when no SPU program of the app has that name. */
spe_program_handle_t *spe_image_open(const char *filename) {
    if (!filename) {
        errno = EINVAL;
        return 0;
    }
    const char *base = strrchr(filename, '/');
    base = base ? base + 1 : filename;
    name_to_payload(base);
    if (!RQ(CELLSIM_RQ_IMAGE_OPEN, 0, 0, 0, 0, 0, 0)) {
        errno = ENOENT;
        return 0;
    }
    spe_program_handle_t *h = calloc(1, sizeof *h);
    if (!h)
        return 0;
    h->handle_size = sizeof *h;
    strncpy(h->name, base, sizeof h->name - 1);
    return h;
}

int spe_image_close(spe_program_handle_t *program) {
    free(program);
    return 0;
}

int spe_program_load(spe_context_ptr_t spe, spe_program_handle_t *program) {
    if (!spe || !program) {
        errno = EINVAL;
        return -1;
    }
    /* the name travels by value: the simulator cannot read this process's memory */
    name_to_payload(program->name);
    RQ(CELLSIM_RQ_PROGRAM_LOAD, spe->spe, 0, 0, 0, 0, 0);
    spe->program = program;
    return 0;
}

/* A stop as the simulator encodes it (CTX_RUN, STOP_INFO), into libspe2's stop info;
 * -1 with errno for a program that died, as spe_context_run returns it. The exit code is
 * cut to 8 bits, as libspe2 reports it (exit(-1) is 255). */
static int decode_stop(uint64_t r, spe_stop_info_t *stopinfo) {
    if (stopinfo)
        memset(stopinfo, 0, sizeof *stopinfo);
    if (r >> 63) {
        if (stopinfo) {
            stopinfo->stop_reason = (unsigned int)(r >> 40) & 0xFF;
            stopinfo->result.spe_runtime_error = (int)(uint32_t)r;
        }
        errno = (int)(r >> 32) & 0xFF;
        return -1;
    }
    if (stopinfo) {
        stopinfo->stop_reason = SPE_EXIT;
        stopinfo->result.spe_exit_code = (int)(r & 0xFF);
    }
    return 0;
}

/* A register's preferred doubleword: the first 8 bytes of its quadword, host order. */
static uint64_t user_reg(const void *regs, int n) {
    uint64_t v;
    memcpy(&v, (const char *)regs + 16 * n, sizeof v);
    return v;
}

int spe_context_run(spe_context_ptr_t spe, unsigned int *entry, unsigned int runflags, void *argp,
                    void *envp, spe_stop_info_t *stopinfo) {
    uint64_t r;
    if (runflags & SPE_RUN_USER_REGS) {
        /* argp is 48 bytes: r3, r4, r5 as the SPU program gets them (speid, argp, envp) */
        if (!argp) {
            errno = EINVAL;
            return -1;
        }
        r = RQ(CELLSIM_RQ_CTX_RUN, spe->spe, user_reg(argp, 1), user_reg(argp, 2), 1, user_reg(argp, 0), 0);
    } else {
        r = RQ(CELLSIM_RQ_CTX_RUN, spe->spe, argp, envp, 0, 0, 0);
    }
    if (entry)
        *entry = SPE_DEFAULT_ENTRY;
    return decode_stop(r, stopinfo);
}

int spe_stop_info_read(spe_context_ptr_t spe, spe_stop_info_t *stopinfo) {
    if (!spe || !stopinfo) {
        errno = EINVAL;
        return -1;
    }
    uint64_t r = RQ(CELLSIM_RQ_STOP_INFO, spe->spe, 0, 0, 0, 0, 0);
    if (r == UINT64_MAX) { /* the context has not stopped yet */
        errno = ESRCH;
        return -1;
    }
    int saved = errno;
    decode_stop(r, stopinfo);
    errno = saved;
    return 0;
}

int spe_in_mbox_write(spe_context_ptr_t spe, unsigned int *mbox_data, int count, unsigned int behavior) {
    if (count < 0)
        count = 0;
    if ((size_t)count > PAYLOAD_WORDS)
        count = (int)PAYLOAD_WORDS;
    memcpy(cellsim_payload(), mbox_data, (size_t)count * sizeof *mbox_data);
    return (int)RQ(CELLSIM_RQ_IN_MBOX_WRITE, spe->spe, 0, count, behavior, 0, 0);
}

/* The words the simulator left in the payload, into the program's buffer. */
static int mbox_words(unsigned int *mbox_data, int count, int got) {
    if (got > count)
        got = count;
    if (got > 0)
        memcpy(mbox_data, cellsim_payload(), (size_t)got * sizeof *mbox_data);
    return got;
}

int spe_in_mbox_status(spe_context_ptr_t spe) { return (int)RQ(CELLSIM_RQ_MBOX_STATUS, spe->spe, 0, 0, 0, 0, 0); }
int spe_out_mbox_status(spe_context_ptr_t spe) { return (int)RQ(CELLSIM_RQ_MBOX_STATUS, spe->spe, 1, 0, 0, 0, 0); }
int spe_out_intr_mbox_status(spe_context_ptr_t spe) {
    return (int)RQ(CELLSIM_RQ_MBOX_STATUS, spe->spe, 2, 0, 0, 0, 0);
}

int spe_out_mbox_read(spe_context_ptr_t spe, unsigned int *mbox_data, int count) {
    int n = count < 0 ? 0 : (size_t)count > PAYLOAD_WORDS ? (int)PAYLOAD_WORDS : count;
    int got = (int)RQ(CELLSIM_RQ_OUT_MBOX_READ, spe->spe, 0, n, 0, SPE_MBOX_ANY_NONBLOCKING, 0);
    return mbox_words(mbox_data, n, got);
}

int spe_out_intr_mbox_read(spe_context_ptr_t spe, unsigned int *mbox_data, int count,
                           unsigned int behavior) {
    int n = count < 0 ? 0 : (size_t)count > PAYLOAD_WORDS ? (int)PAYLOAD_WORDS : count;
    int got = (int)RQ(CELLSIM_RQ_OUT_MBOX_READ, spe->spe, 0, n, 1, behavior, 0);
    return mbox_words(mbox_data, n, got);
}

int spe_signal_write(spe_context_ptr_t spe, unsigned int signal_reg, unsigned int data) {
    RQ(CELLSIM_RQ_SIGNAL_WRITE, spe->spe, signal_reg, data, 0, 0, 0);
    return 0;
}

void *spe_ls_area_get(spe_context_ptr_t spe) { return (void *)RQ(CELLSIM_RQ_LS_AREA, spe->spe, 0, 0, 0, 0, 0); }
size_t spe_ls_size_get(spe_context_ptr_t spe) {
    (void)spe;
    return 256 * 1024;
}
void *spe_ps_area_get(spe_context_ptr_t spe, int area) {
    return (void *)RQ(CELLSIM_RQ_PS_AREA, spe->spe, area, 0, 0, 0, 0);
}

/* The proxy DMAs: one request each, with the MFC opcode (get 0x40, put 0x20; +1 barrier, +2 fence). */
#define CELLSIM_PROXY_DMA(fn, opcode)                                                                    \
    int fn(spe_context_ptr_t spe, unsigned int lsa, void *ea, unsigned int size, unsigned int tag,      \
           unsigned int tid, unsigned int rid) {                                                        \
        (void)tid, (void)rid;                                                                            \
        RQ(CELLSIM_RQ_MFCIO, spe->spe, (opcode), lsa, ea, size, tag);                                    \
        return 0;                                                                                        \
    }
CELLSIM_PROXY_DMA(spe_mfcio_get, 0x40)
CELLSIM_PROXY_DMA(spe_mfcio_getb, 0x41)
CELLSIM_PROXY_DMA(spe_mfcio_getf, 0x42)
CELLSIM_PROXY_DMA(spe_mfcio_put, 0x20)
CELLSIM_PROXY_DMA(spe_mfcio_putb, 0x21)
CELLSIM_PROXY_DMA(spe_mfcio_putf, 0x22)

int spe_mfcio_tag_status_read(spe_context_ptr_t spe, unsigned int mask, unsigned int behavior,
                              unsigned int *tag_status) {
    *tag_status = (unsigned int)RQ(CELLSIM_RQ_MFCIO_STATUS, spe->spe, mask, behavior, 0, 0, 0);
    return 0;
}

/* Event handlers: the simulator keeps the registrations (by number); the C side keeps
 * each SPE's unit, to hand back its context pointer and data. */
#define CELLSIM_MAX_SPES 16
struct cellsim_event_handler {
    int number;
    spe_event_unit_t units[CELLSIM_MAX_SPES];
};

spe_event_handler_ptr_t spe_event_handler_create(void) {
    int number = (int)RQ(CELLSIM_RQ_EVENT_HANDLER, 0, 0, 0, 0, 0, 0); /* before the allocation's request */
    struct cellsim_event_handler *h = calloc(1, sizeof *h);
    if (!h)
        return 0;
    h->number = number;
    return h;
}

int spe_event_handler_destroy(spe_event_handler_ptr_t h) {
    RQ(CELLSIM_RQ_EVENT_HANDLER, 1, h->number, 0, 0, 0, 0);
    free(h);
    return 0;
}

int spe_event_handler_register(spe_event_handler_ptr_t h, spe_event_unit_t *event) {
    RQ(CELLSIM_RQ_EVENT_HANDLER, 2, h->number, event->spe->spe, event->events, 0, 0);
    h->units[event->spe->spe % CELLSIM_MAX_SPES] = *event;
    return 0;
}

int spe_event_handler_deregister(spe_event_handler_ptr_t h, spe_event_unit_t *event) {
    RQ(CELLSIM_RQ_EVENT_HANDLER, 3, h->number, event->spe->spe, event->events, 0, 0);
    return 0;
}

int spe_event_wait(spe_event_handler_ptr_t h, spe_event_unit_t *events, int max_events, int timeout) {
    uint64_t got = RQ(CELLSIM_RQ_EVENT_WAIT, h->number, max_events, (uint32_t)timeout, 0, 0, 0);
    int n = 0;
    for (int spe = 0; spe < CELLSIM_MAX_SPES && n < max_events; spe++)
        for (unsigned int bit = 1; bit <= SPE_EVENT_SPE_STOPPED && n < max_events; bit <<= 1)
            if ((got >> (4 * spe)) & bit) {
                events[n] = h->units[spe];
                events[n].events = bit;
                n++;
            }
    return n;
}

int spe_cpu_info_get(int info_requested, int cpu_node) {
    (void)cpu_node;
    uint64_t spes = RQ(CELLSIM_RQ_SPE_COUNT, 0, 0, 0, 0, 0, 0);
    return info_requested == SPE_COUNT_PHYSICAL_CPU_NODES ? 1 : (int)spes;
}

/* -- memory: the program's heap is simulated main memory ------------------------------ */

void *__real_malloc(size_t);
void __real_free(void *);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);

/* Simulated memory is mapped at CELLSIM_MEMORY_BASE in this process (nothing else is there). */
static int simulated(const void *p) {
    return (uintptr_t)p >= CELLSIM_MEMORY_BASE && (uintptr_t)p < CELLSIM_MEMORY_BASE + (1ULL << 44);
}

/* A block: the size in the 8 bytes before the pointer, the pointer aligned. */
static void *sim_alloc(size_t size, size_t align) {
    if (align < 16)
        align = 16;
    uint64_t p = RQ(CELLSIM_RQ_ALLOC, size + align, align, 0, 0, 0, 0);
    if (!p)
        return 0;
    char *user = (char *)(uintptr_t)p + align;
    ((uint64_t *)user)[-1] = size;
    return user;
}

void *__wrap_malloc(size_t size) { return cellsim_in_thread() ? sim_alloc(size, 16) : __real_malloc(size); }

void *__wrap_calloc(size_t n, size_t size) {
    if (!cellsim_in_thread())
        return __real_calloc(n, size);
    return sim_alloc(n * size, 16); /* simulated memory starts zero-filled */
}

void __wrap_free(void *p) {
    if (p && !simulated(p))
        __real_free(p);
}

void *__wrap_realloc(void *p, size_t size) {
    if (p && !simulated(p))
        return __real_realloc(p, size);
    if (!cellsim_in_thread())
        return __real_realloc(p, size);
    void *q = sim_alloc(size, 16);
    if (p && q) {
        size_t old = ((uint64_t *)p)[-1];
        memcpy(q, p, old < size ? old : size);
    }
    return q;
}

int __wrap_posix_memalign(void **out, size_t align, size_t size) {
    *out = sim_alloc(size, align);
    return *out ? 0 : ENOMEM;
}

void *__wrap_memalign(size_t align, size_t size) { return sim_alloc(size, align); }
void *__wrap_aligned_alloc(size_t align, size_t size) { return sim_alloc(size, align); }

/* libmisc's malloc_align(size, log2_align). */
void *malloc_align(size_t size, unsigned int log2_align) { return sim_alloc(size, (size_t)1 << log2_align); }
void free_align(void *p) { (void)p; }

/* -- pthreads: simulated PPE threads --------------------------------------------------- */

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    (void)attr;
    *thread = (pthread_t)RQ(CELLSIM_RQ_THREAD_CREATE, fn, arg, 0, 0, 0, 0);
    return 0;
}

int __wrap_pthread_join(pthread_t thread, void **ret) {
    uint64_t v = RQ(CELLSIM_RQ_THREAD_JOIN, thread, 0, 0, 0, 0, 0);
    if (ret)
        *ret = (void *)(uintptr_t)v;
    return 0;
}

int __real_pthread_mutex_lock(pthread_mutex_t *);
/* All simulated threads share one host thread: a held mutex is waited for in
 * simulated time (a short spin), never by blocking the host. */
int __wrap_pthread_mutex_lock(pthread_mutex_t *m) {
    while (pthread_mutex_trylock(m) == EBUSY)
        RQ(CELLSIM_RQ_PPE_COMPUTE, 100, 0, 0, 0, 0, 0);
    return 0;
}

/* pthread_exit ends the simulated thread, as returning from its function does. */
void __wrap_pthread_exit(void *value) { cellsim_thread_exit((int64_t)(intptr_t)value); }

/* Condition variables. All simulated threads share one host thread, so a wait cannot
 * block the host: a condition variable is a counter of signals (in the program's own
 * pthread_cond_t, whose initializer is zeros), and a waiter looks at it in simulated
 * time, with a backoff up to CELLSIM_COND_POLL cycles. A signal wakes every waiter
 * (POSIX allows spurious wakeups; programs loop on their predicate). */
#define CELLSIM_COND_POLL 1600

static volatile uint64_t *cond_count(pthread_cond_t *c) { return (volatile uint64_t *)(void *)c; }

int __wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr) {
    (void)attr;
    memset(c, 0, sizeof *c);
    return 0;
}

int __wrap_pthread_cond_destroy(pthread_cond_t *c) {
    (void)c;
    return 0;
}

int __wrap_pthread_cond_signal(pthread_cond_t *c) {
    ++*cond_count(c);
    return 0;
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *c) {
    ++*cond_count(c);
    return 0;
}

/* Waits until the counter moves or `cycles` (UINT64_MAX: no limit) have passed; 0 or ETIMEDOUT. */
static int cond_wait_for(pthread_cond_t *c, pthread_mutex_t *m, uint64_t cycles) {
    uint64_t seen = *cond_count(c), waited = 0, step = 100;
    pthread_mutex_unlock(m);
    int r = 0;
    while (*cond_count(c) == seen) {
        if (waited >= cycles) {
            r = ETIMEDOUT;
            break;
        }
        uint64_t now = step < cycles - waited ? step : cycles - waited;
        RQ(CELLSIM_RQ_PPE_COMPUTE, now, 0, 0, 0, 0, 0);
        waited += now;
        if (step < CELLSIM_COND_POLL)
            step *= 2;
    }
    __wrap_pthread_mutex_lock(m);
    return r;
}

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return cond_wait_for(c, m, UINT64_MAX); }

/* The deadline is the host's clock (CLOCK_REALTIME); the wait lasts as long in simulated time. */
int __wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
    uint64_t hz = RQ(CELLSIM_RQ_TIME, 2, 0, 0, 0, 0, 0); /* the core clock */
    uint64_t cycles = ns <= 0 ? 0 : (uint64_t)((double)ns * (double)hz / 1e9);
    return cond_wait_for(c, m, cycles);
}
