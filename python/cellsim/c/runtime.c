/* cellsim's C runtime, linked into every SPU and PPU image that `cellsim cc` builds.
 *
 * Each simulated thread (an SPU program, a PPE thread) runs on its own stack, a
 * ucontext coroutine: cellsim_request() switches back to the Python driver, which
 * answers in simulated time and resumes the thread. Python never runs on these
 * stacks, so a pointer to one thread's stack stays valid while others run.
 *
 * The image's writable data (.data and .bss, after the RELRO part) is what an SPU
 * program's statics live in; the driver copies it to and from the SPE's local store
 * around every resume (see python/cellsim/c/image.py). Written for cellsim. */
#define _GNU_SOURCE
/* the switches longjmp between stacks, which fortified longjmp refuses */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "cellsim_rt.h"

/* The driver reads and writes this prefix (python/cellsim/c/image.py, _ThreadHeader). */
typedef struct cellsim_thread {
    uint64_t args[6];
    uint64_t reply;
    const char *file;
    int64_t line;
    int64_t op;
    int64_t result;
    uint64_t even_cycles, odd_cycles;
    /* the rest is the runtime's own */
    int kind;
    void *fn;
    uint64_t a0, a1, a2;
    void *stack;
    size_t stack_size;
    /* the program's data: its home (local store, simulated memory) and the image's copy */
    void *home, *data;
    size_t data_size;
    int started;
    /* ucontext starts the thread on its stack; _setjmp/_longjmp switch after that
     * (no signal-mask system calls on the hot path) */
    ucontext_t caller, coro;
    jmp_buf caller_jb, coro_jb;
} cellsim_thread;

static __thread cellsim_thread *current;
__thread uint64_t cellsim_even_cycles, cellsim_odd_cycles;
__thread const char *cellsim_at_file;
__thread int cellsim_at_line;

enum { KIND_SPU_MAIN = 0, KIND_PPU_MAIN = 1, KIND_PTHREAD = 2 };

static void charge_intrinsics(cellsim_thread *t) {
    t->even_cycles = cellsim_even_cycles;
    t->odd_cycles = cellsim_odd_cycles;
    cellsim_even_cycles = cellsim_odd_cycles = 0;
}

static void finish(cellsim_thread *t, int64_t op, int64_t result) {
    charge_intrinsics(t);
    t->op = op;
    t->result = result;
    t->file = 0;
    t->line = 0;
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

cellsim_thread *cellsim_thread_new(int kind, void *fn, uint64_t a0, uint64_t a1, uint64_t a2,
                                   size_t stack_size) {
    cellsim_thread *t = calloc(1, sizeof *t);
    if (!t)
        return 0;
    t->kind = kind;
    t->fn = fn;
    t->a0 = a0;
    t->a1 = a1;
    t->a2 = a2;
    /* a guard page below the stack: an overflow faults instead of corrupting memory */
    size_t guard = 4096;
    t->stack_size = stack_size + guard;
    t->stack = mmap(0, t->stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (t->stack == MAP_FAILED) {
        free(t);
        return 0;
    }
    mprotect(t->stack, guard, PROT_NONE);
    getcontext(&t->coro);
    t->coro.uc_stack.ss_sp = (char *)t->stack + guard;
    t->coro.uc_stack.ss_size = stack_size;
    t->coro.uc_link = 0;
    makecontext(&t->coro, trampoline, 0);
    return t;
}

/* Where the thread's data lives between resumes (copied in and out around each). */
void cellsim_thread_data(cellsim_thread *t, void *home, void *data, size_t size) {
    t->home = home;
    t->data = data;
    t->data_size = size;
}

/* Runs the thread until its next request; returns the request's code. */
int64_t cellsim_thread_resume(cellsim_thread *t) {
    cellsim_thread *volatile outer = current;
    current = t;
    cellsim_even_cycles = cellsim_odd_cycles = 0;
    if (t->data_size)
        memcpy(t->data, t->home, t->data_size);
    if (!_setjmp(t->caller_jb)) {
        if (!t->started) {
            t->started = 1;
            swapcontext(&t->caller, &t->coro);
        } else {
            _longjmp(t->coro_jb, 1);
        }
    }
    if (t->data_size)
        memcpy(t->home, t->data, t->data_size);
    current = outer;
    return t->op;
}

void cellsim_thread_free(cellsim_thread *t) {
    if (!t)
        return;
    munmap(t->stack, t->stack_size);
    free(t);
}

int cellsim_in_thread(void) { return current != 0; }

uint64_t cellsim_request(int op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                         uint64_t a5, const char *file, int line) {
    cellsim_thread *t = current;
    if (!t)
        abort(); /* only simulated threads make requests */
    charge_intrinsics(t);
    t->args[0] = a0;
    t->args[1] = a1;
    t->args[2] = a2;
    t->args[3] = a3;
    t->args[4] = a4;
    t->args[5] = a5;
    t->file = file;
    t->line = line;
    t->op = op;
    if (!_setjmp(t->coro_jb))
        _longjmp(t->caller_jb, 1);
    current = t;
    return t->reply;
}

/* exit() ends the simulated thread's program, never the host process. */
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
    uintptr_t start, end;
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
    return 1;
}

static char segment_anchor[16] __attribute__((used));

/* [start, end) of this image's writable data, for the driver. */
void cellsim_segment(uintptr_t *start, uintptr_t *end) {
    struct segment_search s = {segment_anchor, 0, 0};
    dl_iterate_phdr(find_segment, &s);
    *start = s.start;
    *end = s.end;
}
