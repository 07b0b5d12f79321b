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

/* The local-store address of a pointer to an SPU program's static data. cellsim
 * loads an SPU image into its local store, so `(unsigned int)&buf` is that address
 * as on the SPU; this is right also where the loader could not put the image there
 * (see docs/c-programs.md, "Memory"). */
#define cellsim_lsa(p) ((unsigned int)CELLSIM_RQ(CELLSIM_RQ_LSA, (uintptr_t)(p), 0, 0, 0, 0, 0))

#endif
