/* cellsim.h: cellsim's own extensions for C programs (not part of the Cell SDK).
 *
 * The host cannot tell how many SPU cycles a piece of C code would take, so a
 * program says it: spu_compute(cycles) spends that many SPU cycles of the
 * program's own work in simulated time (ppu_compute for a PPE thread). */
#ifndef CELLSIM_H
#define CELLSIM_H

#include "cellsim_rt.h"

#define spu_compute(cycles) ((void)CELLSIM_RQ(CELLSIM_RQ_COMPUTE, (cycles), 0, 0, 0, 0, 0))
#define ppu_compute(cycles) ((void)CELLSIM_RQ(CELLSIM_RQ_PPE_COMPUTE, (cycles), 0, 0, 0, 0, 0))

/* The local-store address of a pointer to an SPU program's static data. On the SPU
 * `(unsigned int)&buf` is that address; here a pointer is a host pointer, so code
 * that sends an LS address to someone else (the PPE, another SPE's DMA) converts it
 * with this. The DMA calls take pointers as they are. */
#define cellsim_lsa(p) ((unsigned int)CELLSIM_RQ(CELLSIM_RQ_LSA, (uintptr_t)(p), 0, 0, 0, 0, 0))

#endif
