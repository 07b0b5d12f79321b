/* ppu_intrinsics.h for cellsim: the PPU's storage-access intrinsics, written for
 * cellsim from the public documentation. The PPU program runs as host code: these
 * are the host's atomics and fences (no simulated time; PPU code is not timed),
 * and the time base (simulated time). */
#ifndef CELLSIM_PPU_INTRINSICS_H
#define CELLSIM_PPU_INTRINSICS_H

#include <stdint.h>

#include "cellsim_rt.h"

#define __sync() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __lwsync() __atomic_thread_fence(__ATOMIC_ACQ_REL)
#define __isync() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define __eieio() __atomic_thread_fence(__ATOMIC_RELEASE)

/* Load-and-reserve / store-conditional on one host thread: the reservation is the
 * value loaded; the store succeeds if the word still holds it. */
static __thread uintptr_t __cellsim_resv_addr;
static __thread uint64_t __cellsim_resv_val;

static inline unsigned int __lwarx(volatile void *p) {
    __cellsim_resv_addr = (uintptr_t)p;
    return (unsigned int)(__cellsim_resv_val = __atomic_load_n((volatile unsigned int *)p, __ATOMIC_SEQ_CST));
}
static inline int __stwcx(volatile void *p, unsigned int v) {
    unsigned int expect = (unsigned int)__cellsim_resv_val;
    if (__cellsim_resv_addr != (uintptr_t)p)
        return 0;
    __cellsim_resv_addr = 0;
    return __atomic_compare_exchange_n((volatile unsigned int *)p, &expect, v, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
static inline unsigned long long __ldarx(volatile void *p) {
    __cellsim_resv_addr = (uintptr_t)p;
    return __cellsim_resv_val = __atomic_load_n((volatile unsigned long long *)p, __ATOMIC_SEQ_CST);
}
static inline int __stdcx(volatile void *p, unsigned long long v) {
    unsigned long long expect = __cellsim_resv_val;
    if (__cellsim_resv_addr != (uintptr_t)p)
        return 0;
    __cellsim_resv_addr = 0;
    return __atomic_compare_exchange_n((volatile unsigned long long *)p, &expect, v, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}
/* The time base: simulated time, in ticks of the machine's timebase frequency
 * (cellsim machine show NAME: timebase_hz; /proc/cpuinfo's "timebase" on a real
 * Cell) since the run began. Each read is a request to the simulator, which
 * also charges the C code's time so far when --host-time-scale is on. */
static inline unsigned long long __mftb(void) {
    return (unsigned long long)CELLSIM_RQ(CELLSIM_RQ_TIME, 0, 0, 0, 0, 0, 0);
}
#define mftb() __mftb()
/* The time base's frequency in Hz (what a program reads from /proc/cpuinfo). */
static inline unsigned long long cellsim_timebase_hz(void) {
    return (unsigned long long)CELLSIM_RQ(CELLSIM_RQ_TIME, 1, 0, 0, 0, 0, 0);
}

#endif
