/* Shared by both sides: the parameter block, and (SPU only) the SIMD kernel
 * written with the SPU language's vector types. */
#ifndef SAXPY_H
#define SAXPY_H

#define SAXPY_N 2048

typedef struct {
    unsigned long long x, y; /* effective addresses of the float arrays */
    float a;
    unsigned int pad[27];
} saxpy_args_t;

#ifdef __SPU__
#include <spu_intrinsics.h>
static inline void saxpy4(__vector float *y, const vector float *x, vector float a, int n)
{
    for (int i = 0; i < n / 4; i++)
        y[i] = spu_madd(a, x[i], y[i]);
}
#endif
#endif
