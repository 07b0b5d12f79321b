/* y = a*x + y, four floats at a time. */
#include <spu_intrinsics.h>
#include <spu_mfcio.h>
#include <cellsim.h>
#include "saxpy.h"

static saxpy_args_t args __attribute__((aligned(128)));
static vector float x[SAXPY_N / 4], y[SAXPY_N / 4];

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    mfc_get(&args, argp, sizeof args, 0, 0, 0);
    mfc_write_tag_mask(1);
    mfc_read_tag_status_all();
    for (int part = 0; part < 2; part++) { /* 16 KB at most per DMA */
        mfc_get(&x[part * SAXPY_N / 8], args.x + part * SAXPY_N * 2, SAXPY_N * 2, 0, 0, 0);
        mfc_get(&y[part * SAXPY_N / 8], args.y + part * SAXPY_N * 2, SAXPY_N * 2, 0, 0, 0);
    }
    mfc_read_tag_status_all();
    saxpy4(y, x, spu_splats(args.a), SAXPY_N);
    spu_compute(SAXPY_N / 4);
    for (int part = 0; part < 2; part++)
        mfc_put(&y[part * SAXPY_N / 8], args.y + part * SAXPY_N * 2, SAXPY_N * 2, 0, 0, 0);
    mfc_read_tag_status_all();
    return 0;
}
