/* cellsim's C runtime, linked into every SPU and PPU image that `cellsim cc` builds.
 *
 * An image runs in a process of its own (cellsim-host, host.c): one per SPU
 * program, one for the PPU program and all its threads. cellsim_serve() answers
 * the simulator's commands over the shared control block (cellsim_proto.h).
 * Each simulated thread (an SPU program, a PPE thread) runs on its own stack, a
 * ucontext coroutine: cellsim_request() writes the request into the block and
 * switches back to the serving loop, which hands the turn to the simulator and
 * resumes the thread with its reply.
 *
 * The image's writable data (.data and .bss, after the RELRO part) is where an
 * SPU program's statics live: the loop maps the SPE's local store over it, so
 * the statics *are* local-store bytes (PPU: simulated main memory). A fatal
 * signal is reported (signal, address, backtrace) before the process dies of it.
 * Written for cellsim. */
#define _GNU_SOURCE
/* the switches longjmp between stacks, which fortified longjmp refuses */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "cellsim_proto.h"
#include "cellsim_rt.h"

typedef struct cellsim_thread {
    uint64_t number;
    int kind;
    void *fn;
    uint64_t a0, a1, a2;
    uint64_t reply;
    int64_t op, result;
    void *stack;
    size_t stack_size;
    int own_stack; /* mapped here (else the simulator's memory: a local store, main memory) */
    int started;
    /* ucontext starts the thread on its stack; _setjmp/_longjmp switch after that
     * (no signal-mask system calls on the hot path) */
    ucontext_t caller, coro;
    jmp_buf caller_jb, coro_jb;
} cellsim_thread;

/* The runtime's own state is thread-local, so it is not in the image's data (the
 * local store, which the program's DMAs may overwrite). */
static __thread cellsim_ctl *ctl;
static __thread cellsim_thread *current;
static __thread cellsim_thread **threads;
static __thread size_t nthreads;
__thread uint64_t cellsim_even_cycles, cellsim_odd_cycles;
__thread const char *cellsim_at_file;
__thread int cellsim_at_line;

enum { KIND_SPU_MAIN = 0, KIND_PPU_MAIN = 1, KIND_PTHREAD = 2 };

#define STACK_BYTES (1 << 20)

static void charge_intrinsics(void) {
    ctl->even_cycles = cellsim_even_cycles;
    ctl->odd_cycles = cellsim_odd_cycles;
    cellsim_even_cycles = cellsim_odd_cycles = 0;
}

static void finish(cellsim_thread *t, int64_t op, int64_t result) {
    charge_intrinsics();
    t->op = op;
    t->result = result;
    ctl->file_id = 0;
    ctl->line = 0;
    _longjmp(t->caller_jb, 1); /* a finished thread is never resumed */
}

static void trampoline(void) {
    cellsim_thread *t = current;
    int64_t r = 0;
    switch (t->kind) {
    case KIND_SPU_MAIN:
        r = ((int (*)(unsigned long long, unsigned long long, unsigned long long))t->fn)(t->a0, t->a1,
                                                                                           t->a2);
        break;
    case KIND_PPU_MAIN:
        r = ((int (*)(int, char **))t->fn)((int)t->a0, (char **)t->a1);
        break;
    default:
        r = (int64_t)(intptr_t)((void *(*)(void *))t->fn)((void *)t->a0);
        break;
    }
    finish(t, CELLSIM_RQ_DONE, r);
}

static int64_t thread_switch(cellsim_thread *t);

/* The thread's stack, a guard page below it: in the simulator's memory when it gives one
 * (an SPU program's in its local store, a PPE thread's in main memory, as on the Cell),
 * else mapped here. An overflow faults instead of corrupting memory. */
static int stack_new(cellsim_thread *t, void *at, size_t bytes) {
    size_t guard = 4096;
    if (at && bytes > 2 * guard) {
        t->stack = at;
        t->stack_size = bytes;
    } else {
        t->stack_size = STACK_BYTES + guard;
        t->stack = mmap(0, t->stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (t->stack == MAP_FAILED)
            return 0;
        t->own_stack = 1;
    }
    mprotect(t->stack, guard, PROT_NONE);
    getcontext(&t->coro);
    t->coro.uc_stack.ss_sp = (char *)t->stack + guard;
    t->coro.uc_stack.ss_size = t->stack_size - guard;
    t->coro.uc_link = 0;
    return 1;
}

static void stack_free(cellsim_thread *t) {
    if (t->own_stack)
        munmap(t->stack, t->stack_size);
    else
        mprotect(t->stack, 4096, PROT_READ | PROT_WRITE); /* the simulator's memory again */
}

static cellsim_thread *thread_new(int kind, void *fn, uint64_t a0, uint64_t a1, uint64_t a2, void *stack_at,
                                  size_t stack_bytes) {
    cellsim_thread *t = calloc(1, sizeof *t);
    if (!t)
        return 0;
    t->kind = kind;
    t->fn = fn;
    t->a0 = a0;
    t->a1 = a1;
    t->a2 = a2;
    if (!stack_new(t, stack_at, stack_bytes)) {
        free(t);
        return 0;
    }
    makecontext(&t->coro, trampoline, 0);
    for (size_t i = 0; i < nthreads; i++)
        if (!threads[i]) {
            t->number = i;
            threads[i] = t;
            return t;
        }
    cellsim_thread **more = realloc(threads, (nthreads + 16) * sizeof *more);
    if (!more) {
        stack_free(t);
        free(t);
        return 0;
    }
    memset(more + nthreads, 0, 16 * sizeof *more);
    threads = more;
    t->number = nthreads;
    threads[nthreads] = t;
    nthreads += 16;
    return t;
}

static void thread_free(cellsim_thread *t) {
    threads[t->number] = 0;
    stack_free(t);
    free(t);
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs the thread until its next request (or its end); returns the request's code. */
static int64_t thread_resume(cellsim_thread *t) {
    uint64_t t0 = ctl->measure ? cpu_ns() : 0;
    int64_t op = thread_switch(t);
    ctl->cpu_ns = ctl->measure ? cpu_ns() - t0 : 0;
    return op;
}

static int64_t thread_switch(cellsim_thread *t) {
    current = t;
    cellsim_even_cycles = cellsim_odd_cycles = 0;
    if (!_setjmp(t->caller_jb)) {
        if (!t->started) {
            t->started = 1;
            swapcontext(&t->caller, &t->coro);
        } else {
            _longjmp(t->coro_jb, 1);
        }
    }
    current = 0;
    return t->op;
}

int cellsim_in_thread(void) { return current != 0; }

/* The payload area of the control block: what a request passes by value. */
void *cellsim_payload(void) { return ctl ? ctl->payload : 0; }

uint64_t cellsim_request(int op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                         uint64_t a5, const char *file, int line) {
    cellsim_thread *t = current;
    if (!t)
        abort(); /* only simulated threads make requests */
    charge_intrinsics();
    ctl->args[0] = a0;
    ctl->args[1] = a1;
    ctl->args[2] = a2;
    ctl->args[3] = a3;
    ctl->args[4] = a4;
    ctl->args[5] = a5;
    if ((uint64_t)(uintptr_t)file != ctl->file_id) {
        /* a new file: its name (the driver keeps the names it has seen, by id) */
        ctl->file[0] = 0;
        if (file) {
            size_t n = strlen(file);
            if (n >= sizeof ctl->file)
                file += n - (sizeof ctl->file - 1); /* the end of a long path */
            memcpy(ctl->file, file, strlen(file) + 1);
        }
        ctl->file_id = (uint64_t)(uintptr_t)file;
    }
    ctl->line = line;
    t->op = op;
    if (!_setjmp(t->coro_jb))
        _longjmp(t->caller_jb, 1);
    current = t;
    return t->reply;
}

/* pthread_exit in a PPE thread ends that simulated thread (the PPU main's: with status 0,
 * the run goes on until every thread has ended), never the host thread of them all. */
void cellsim_thread_exit(int64_t value) {
    if (!current)
        abort(); /* only simulated threads run the program's code */
    finish(current, CELLSIM_RQ_DONE, current->kind == KIND_PPU_MAIN ? 0 : value);
    __builtin_unreachable();
}

/* exit() ends the simulated thread's program, never the process of its threads. */
void __real_exit(int) __attribute__((noreturn));
void __wrap_exit(int code) {
    if (!current)
        __real_exit(code);
    finish(current, CELLSIM_RQ_EXIT, code);
    __builtin_unreachable();
}

/* The image's writable data: the part of its writable PT_LOAD after RELRO. */
struct segment_search {
    void *inside;
    uintptr_t start, end, lo, hi;
};

static int find_segment(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct segment_search *s = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0, relro_end = 0, w_lo = 0, w_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) {
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
            if (ph->p_flags & PF_W) {
                w_lo = a;
                w_hi = a + ph->p_memsz;
            }
        } else if (ph->p_type == PT_GNU_RELRO) {
            relro_end = a + ph->p_memsz;
        }
    }
    if ((uintptr_t)s->inside < lo || (uintptr_t)s->inside >= hi)
        return 0;
    s->start = w_lo > relro_end ? w_lo : relro_end;
    s->end = w_hi > s->start ? w_hi : s->start;
    s->lo = lo;
    s->hi = hi;
    return 1;
}

static char segment_anchor[16] __attribute__((used));

/* -- fatal signals ------------------------------------------------------------------ */

static void on_fatal(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    cellsim_ctl *c = ctl;
    if (c) {
        c->crash_signal = (uint64_t)sig;
        c->crash_code = (uint64_t)si->si_code;
        c->crash_addr = (uint64_t)(uintptr_t)si->si_addr;
#if defined(__x86_64__)
        c->crash_pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
        c->crash_pc = (uint64_t)uc->uc_mcontext.pc;
#else
        (void)uc;
        c->crash_pc = 0;
#endif
        void *frames[32];
        int n = backtrace(frames, 32);
        for (int i = 0; i < n; i++)
            c->frames[i] = (uint64_t)(uintptr_t)frames[i];
        c->nframes = (uint64_t)(n > 0 ? n : 0);
        c->thread = current ? current->number : UINT64_MAX;
        c->msg = CELLSIM_MSG_CRASH;
        cellsim_give_turn(c);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

static void catch_fatal_signals(void) {
    static __thread char *altstack;
    altstack = mmap(0, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (altstack != MAP_FAILED) {
        stack_t ss = {.ss_sp = altstack, .ss_size = 1 << 16, .ss_flags = 0};
        sigaltstack(&ss, 0);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        sigaction(fatal[i], &sa, 0);
    void *warm[2];
    backtrace(warm, 2); /* loads the unwinder now, not inside the handler */
}

/* -- the loop ------------------------------------------------------------------------ */

static void report(cellsim_thread *t, int64_t op) {
    ctl->thread = t->number;
    ctl->op = (uint64_t)op;
    ctl->result = t->result;
    ctl->msg = CELLSIM_MSG_REQUEST;
    fflush(stdout); /* the program's output, in the order of its calls */
    if (op <= CELLSIM_RQ_EXIT)
        thread_free(t);
}

/* An SPU program's heap (spu_runtime.c); a PPU image has none (its heap is main memory). */
__attribute__((weak)) void cellsim_heap_setup(char *lo, char *hi);

static void setup(void) {
    /* the image's data becomes the pages of a shared file (a local store, main
     * memory), after its first contents are copied there */
    uintptr_t start = ctl->seg_start, end = start + ctl->seg_size;
    uintptr_t lo = start & ~(uintptr_t)4095, hi = (end + 4095) & ~(uintptr_t)4095;
    int fd = (int)ctl->cargs[0];
    off_t offset = (off_t)ctl->cargs[1];
    char *home = (char *)(uintptr_t)ctl->cargs[2]; /* the same file's pages at offset, mapped */
    if (hi > lo) {
        /* through the file: the image may sit in its own home (an SPU image linked into its
         * local store), whose pages are then not mapped there yet */
        if (pwrite(fd, (void *)lo, hi - lo, offset) != (ssize_t)(hi - lo) && home != (char *)lo)
            memcpy(home, (void *)lo, hi - lo);
        void *p = mmap((void *)lo, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, offset);
        if (p != (void *)lo) {
            snprintf(ctl->text, sizeof ctl->text, "cannot map the program's data onto its home");
            ctl->msg = CELLSIM_MSG_ERROR;
            cellsim_give_turn(ctl);
            _exit(127);
        }
    }
    if (cellsim_heap_setup && ctl->cargs[4] > ctl->cargs[3])
        cellsim_heap_setup((char *)(uintptr_t)ctl->cargs[3], (char *)(uintptr_t)ctl->cargs[4]);
    ctl->msg = CELLSIM_MSG_READY;
}

/* main's argv: argc strings, one after another in the payload, copied to this process's heap. */
static char **payload_argv(int argc) {
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    const char *p = (const char *)ctl->payload, *end = p + sizeof ctl->payload;
    for (int i = 0; argv && i < argc && p < end; i++) {
        size_t n = strnlen(p, (size_t)(end - p));
        argv[i] = strndup(p, n);
        p += n + 1;
    }
    return argv;
}

int cellsim_serve(cellsim_ctl *c, void *main_fn) {
    ctl = c;
    catch_fatal_signals();
    struct segment_search s = {segment_anchor, 0, 0, 0, 0};
    dl_iterate_phdr(find_segment, &s);
    Dl_info info;
    memset(&info, 0, sizeof info);
    dladdr((void *)cellsim_serve, &info);
    ctl->seg_start = s.start;
    ctl->seg_size = s.end - s.start;
    ctl->image_base = (uint64_t)(uintptr_t)info.dli_fbase;
    ctl->image_end = s.hi;
    ctl->main_fn = (uint64_t)(uintptr_t)main_fn;
    ctl->msg = CELLSIM_MSG_HELLO;
    for (;;) {
        cellsim_give_turn(ctl);
        cellsim_wait_turn(ctl);
        switch (ctl->cmd) {
        case CELLSIM_CMD_SETUP:
            setup();
            break;
        case CELLSIM_CMD_NEW_THREAD: {
            if (ctl->cargs[0] == KIND_PPU_MAIN)
                ctl->cargs[3] = (uint64_t)(uintptr_t)payload_argv((int)ctl->cargs[2]);
            cellsim_thread *t = thread_new((int)ctl->cargs[0], (void *)(uintptr_t)ctl->cargs[1], ctl->cargs[2],
                                           ctl->cargs[3], ctl->cargs[4], (void *)(uintptr_t)ctl->cargs[5],
                                           (size_t)ctl->reply);
            if (!t) {
                snprintf(ctl->text, sizeof ctl->text, "no host memory for a C thread's stack");
                ctl->msg = CELLSIM_MSG_ERROR;
                break;
            }
            report(t, thread_resume(t));
            break;
        }
        case CELLSIM_CMD_RESUME: {
            cellsim_thread *t = ctl->thread < nthreads ? threads[ctl->thread] : 0;
            if (!t) {
                snprintf(ctl->text, sizeof ctl->text, "no thread %llu", (unsigned long long)ctl->thread);
                ctl->msg = CELLSIM_MSG_ERROR;
                break;
            }
            t->reply = ctl->reply;
            report(t, thread_resume(t));
            break;
        }
        case CELLSIM_CMD_QUIT:
        default:
            fflush(0);
            __real_exit(0);
        }
    }
}
