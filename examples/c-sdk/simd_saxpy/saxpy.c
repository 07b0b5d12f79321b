#include <libspe2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "saxpy.h"

extern spe_program_handle_t saxpy_spu;

int main(void)
{
    float *x, *y;
    if (posix_memalign((void **)&x, 128, SAXPY_N * sizeof(float)) ||
        posix_memalign((void **)&y, 128, SAXPY_N * sizeof(float)))
        return 1;
    for (int i = 0; i < SAXPY_N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    saxpy_args_t args __attribute__((aligned(128))) = {(unsigned long)x, (unsigned long)y, 0.5f, {0}};
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &saxpy_spu);
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, &args, NULL, NULL);
    double err = 0;
    for (int i = 0; i < SAXPY_N; i++)
        err = fmax(err, fabs(y[i] - (0.5 * i + 1.0)));
    printf("saxpy of %d floats: y[2047]=%.1f, max error %g\n", SAXPY_N, y[SAXPY_N - 1], err);
    return 0;
}
