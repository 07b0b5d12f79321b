/* libsync.h for cellsim: the SDK's synchronization library (atomics, mutexes,
 * completions) on the atomic unit, written for cellsim from the public libsync
 * documentation. On the SPU each call is the getllar/putllc loop on the 128-byte
 * lock line holding the variable (variables are effective addresses); on the PPU
 * the variables are plain memory and the calls are the C11 atomics of the host. */
#ifndef CELLSIM_LIBSYNC_H
#define CELLSIM_LIBSYNC_H

#include <stdint.h>

typedef unsigned long long atomic_ea_t;
typedef unsigned long long mutex_ea_t;
typedef unsigned long long completion_ea_t;

#ifdef __SPU__
#include <cellsim.h>
#include <spu_mfcio.h>

/* The lock line's copy in the local store (one per SPE: it is a static). */
static volatile char __cellsim_sync_line[128] __attribute__((aligned(128), unused));

#define __CELLSIM_LINE(ea) ((ea) & ~127ull)
#define __CELLSIM_WORD(ea) ((volatile int *)(__cellsim_sync_line + ((ea)&124)))

/* One getllar / update / putllc round, retried until the reservation holds;
 * returns the word's old value. */
#define __CELLSIM_ATOMIC(ea, expr)                                       \
    ({                                                                   \
        int __old;                                                       \
        do {                                                             \
            mfc_getllar(__cellsim_sync_line, __CELLSIM_LINE(ea), 0, 0);  \
            mfc_read_atomic_status();                                    \
            __old = *__CELLSIM_WORD(ea);                                 \
            *__CELLSIM_WORD(ea) = (expr);                                \
            mfc_putllc(__cellsim_sync_line, __CELLSIM_LINE(ea), 0, 0);   \
        } while (mfc_read_atomic_status() & MFC_PUTLLC_STATUS);          \
        __old;                                                           \
    })

static inline int atomic_add_return(int a, atomic_ea_t v) { return __CELLSIM_ATOMIC(v, __old + a) + a; }
static inline int atomic_sub_return(int a, atomic_ea_t v) { return __CELLSIM_ATOMIC(v, __old - a) - a; }
static inline int atomic_inc_return(atomic_ea_t v) { return atomic_add_return(1, v); }
static inline int atomic_dec_return(atomic_ea_t v) { return atomic_sub_return(1, v); }
static inline void atomic_add(int a, atomic_ea_t v) { (void)atomic_add_return(a, v); }
static inline void atomic_sub(int a, atomic_ea_t v) { (void)atomic_sub_return(a, v); }
static inline void atomic_inc(atomic_ea_t v) { (void)atomic_add_return(1, v); }
static inline void atomic_dec(atomic_ea_t v) { (void)atomic_sub_return(1, v); }
static inline int atomic_read(atomic_ea_t v) {
    mfc_getllar(__cellsim_sync_line, __CELLSIM_LINE(v), 0, 0);
    mfc_read_atomic_status();
    return *__CELLSIM_WORD(v);
}
static inline void atomic_set(atomic_ea_t v, int a) { (void)__CELLSIM_ATOMIC(v, a); }

/* A mutex: a word, 0 free and 1 held; a held mutex is polled with a 100-cycle backoff
 * (cellsim.sync.Mutex's default). */
static inline void mutex_init(mutex_ea_t m) { atomic_set(m, 0); }
static inline int mutex_trylock(mutex_ea_t m) {
    return __CELLSIM_ATOMIC(m, 1) == 0;
}
static inline void mutex_lock(mutex_ea_t m) {
    for (;;) {
        mfc_getllar(__cellsim_sync_line, __CELLSIM_LINE(m), 0, 0);
        mfc_read_atomic_status();
        if (*__CELLSIM_WORD(m) == 0) {
            *__CELLSIM_WORD(m) = 1;
            mfc_putllc(__cellsim_sync_line, __CELLSIM_LINE(m), 0, 0);
            if (!(mfc_read_atomic_status() & MFC_PUTLLC_STATUS))
                return;
        } else {
            spu_compute(100);
        }
    }
}
static inline void mutex_unlock(mutex_ea_t m) {
    mfc_getllar(__cellsim_sync_line, __CELLSIM_LINE(m), 0, 0);
    mfc_read_atomic_status();
    *__CELLSIM_WORD(m) = 0;
    mfc_putlluc(__cellsim_sync_line, __CELLSIM_LINE(m), 0, 0);
    mfc_read_atomic_status();
}

/* A completion: a word counting completions; waiters poll it every 200 cycles. */
static inline void init_completion(completion_ea_t c) { atomic_set(c, 0); }
static inline void complete(completion_ea_t c) { atomic_inc(c); }
static inline void complete_all(completion_ea_t c) { atomic_set(c, 0x7FFFFFFF); }
static inline void wait_for_completion(completion_ea_t c) {
    for (;;) {
        mfc_getllar(__cellsim_sync_line, __CELLSIM_LINE(c), 0, 0);
        mfc_read_atomic_status();
        int n = *__CELLSIM_WORD(c);
        if (n > 0) {
            if (n != 0x7FFFFFFF)
                *__CELLSIM_WORD(c) = n - 1;
            mfc_putllc(__cellsim_sync_line, __CELLSIM_LINE(c), 0, 0);
            if (!(mfc_read_atomic_status() & MFC_PUTLLC_STATUS))
                return;
        } else {
            spu_compute(200);
        }
    }
}

#else /* the PPU: host atomics on the variable's memory (simulated main memory) */

#define __CELLSIM_P(ea) ((int *)(uintptr_t)(ea))
static inline int atomic_add_return(int a, atomic_ea_t v) { return __atomic_add_fetch(__CELLSIM_P(v), a, __ATOMIC_SEQ_CST); }
static inline int atomic_sub_return(int a, atomic_ea_t v) { return __atomic_sub_fetch(__CELLSIM_P(v), a, __ATOMIC_SEQ_CST); }
static inline void atomic_add(int a, atomic_ea_t v) { (void)atomic_add_return(a, v); }
static inline void atomic_sub(int a, atomic_ea_t v) { (void)atomic_sub_return(a, v); }
static inline void atomic_inc(atomic_ea_t v) { (void)atomic_add_return(1, v); }
static inline void atomic_dec(atomic_ea_t v) { (void)atomic_sub_return(1, v); }
static inline int atomic_read(atomic_ea_t v) { return __atomic_load_n(__CELLSIM_P(v), __ATOMIC_SEQ_CST); }
static inline void atomic_set(atomic_ea_t v, int a) { __atomic_store_n(__CELLSIM_P(v), a, __ATOMIC_SEQ_CST); }
static inline void mutex_init(mutex_ea_t m) { atomic_set(m, 0); }
static inline void init_completion(completion_ea_t c) { atomic_set(c, 0); }
static inline void complete(completion_ea_t c) { atomic_inc(c); }
static inline void complete_all(completion_ea_t c) { atomic_set(c, 0x7FFFFFFF); }
#endif

#endif
